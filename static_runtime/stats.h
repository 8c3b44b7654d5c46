// What a module's kernels are and how much memory its runtimes plan.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "passes/pass_report.h"

namespace srt {

struct ModuleStats {
  // Every executed node, sub-block nodes included; prim::Constant nodes are values, not nodes.
  size_t nodes = 0;
  // Nodes of the graph's top level: the steps of the memory plan (MemoryPlanEntry::first_node).
  size_t top_level_nodes = 0;
  size_t out_variant_nodes = 0;
  size_t native_nodes = 0;
  size_t fallback_nodes = 0;
  // Operator name -> how many nodes run it through the JIT fallback.
  std::map<std::string, size_t> fallback_ops;
  // Intermediate tensors whose memory the planner owns, and the other tensors nodes produce.
  size_t num_managed_tensors = 0;
  size_t num_unmanaged_tensors = 0;
  // Of one runtime (the largest among the module's idle runtimes): arena bytes, the least any
  // plan could use (peak of bytes live at once), and how often the arena had to grow.
  size_t managed_bytes = 0;
  size_t managed_lower_bound_bytes = 0;
  size_t arena_reallocations = 0;
  std::string memory_planner = "none";
  // Kernel scratch in that arena: nodes whose scratch the plan places (each live only while its
  // node runs) and their bytes; and how often a kernel's scratch request was not covered by the
  // plan yet and came from the runtime's fallback buffer (a node's first request of a new size).
  // Of one runtime, like the arena figures.
  size_t planned_scratch_blocks = 0;
  size_t planned_scratch_bytes = 0;
  size_t unplanned_scratch_requests = 0;
  // What that fallback buffer holds now: 0 once a plan covers every request (a plan frees it).
  size_t unplanned_scratch_bytes = 0;
  // Every optimization pass in pipeline order: whether it ran, changed the graph, and the node
  // count before and after.
  std::vector<passes::PassReport> passes;
};

} // namespace srt
