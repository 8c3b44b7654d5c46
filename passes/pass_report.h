// What one optimization pass did to a module's graph.
#pragma once

#include <cstddef>
#include <string>

namespace srt::passes {

struct PassReport {
  std::string name;
  // False when the pass was switched off (StaticModuleOptions::disabled_passes, or an option
  // that implies it, like use_copy_variants=false).
  bool ran = false;
  // What the pass returned: whether it rewrote anything.
  bool changed = false;
  // Nodes in the graph, sub-blocks included, prim::Constant excluded.
  size_t nodes_before = 0;
  size_t nodes_after = 0;
};

} // namespace srt::passes
