// What a module's kernels are and how much memory its runtimes plan.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace srt {

struct ModuleStats {
  // Every executed node, sub-block nodes included; prim::Constant nodes are values, not nodes.
  size_t nodes = 0;
  size_t out_variant_nodes = 0;
  size_t native_nodes = 0;
  size_t fallback_nodes = 0;
  // Operator name -> how many nodes run it through the JIT fallback.
  std::map<std::string, size_t> fallback_ops;
  // Arena bytes the memory planner manages, and the lower bound any plan needs (peak of bytes
  // live at once). Zero until a planner owns intermediates.
  size_t managed_bytes = 0;
  size_t managed_lower_bound_bytes = 0;
};

} // namespace srt
