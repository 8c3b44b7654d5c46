// The immutable, flattened form of a prepared graph that every runtime of a module executes.
#pragma once

#include <memory>
#include <vector>

#include <ATen/core/ivalue.h>

#include "memory/memory_planner.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "static_runtime/stats.h"

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace srt {

// One block's node list: the graph's top level, or a branch / body of a prim::If / prim::Loop.
struct BlockInfo {
  // Value indices of the block's parameters (a loop body's iteration and carried values).
  std::vector<ops::ValueIndex> inputs;
  std::vector<ops::StaticNodeInfo> nodes;
  std::vector<ops::ValueIndex> outputs;
};

struct OutputSlot {
  ops::ValueIndex index;
  // False when the value is an input, a constant, or returned twice: the runtime copies it.
  bool movable;
};

// Value table layout, shared by all blocks of the graph:
//   [graph inputs | constants | node outputs and block parameters, in program order]
struct Program {
  size_t num_inputs = 0;
  std::vector<c10::IValue> constants;
  size_t num_values = 0;
  // blocks[0] is the top level; nodes refer to their sub-blocks by index.
  std::vector<BlockInfo> blocks;
  std::vector<OutputSlot> outputs;
  // Values a runtime drops after every run (and after an error): inputs, and every computed value
  // except out-variant outputs no graph output can alias, whose tensors the next run writes into.
  std::vector<ops::ValueIndex> reset_after_run;
  // Tensors whose memory the planner owns (with optimize_memory): the top-level ones of the kept
  // values above, with their lifetimes.
  std::vector<memory::ManagedTensor> managed_tensors;
  // With manage_output_tensors: returned tensors whose memory a second planner owns until the
  // caller calls StaticRuntime::deallocateOutputTensors().
  std::vector<memory::ManagedTensor> managed_output_tensors;
  size_t num_unmanaged_tensors = 0;
  // Nodes of every block, numbered 0..num_nodes-1 (StaticNodeInfo::id).
  size_t num_nodes = 0;
  // With optimize_memory: one kernel scratch block per node, by node id.
  std::vector<memory::ScratchBlock> scratch_blocks;

  size_t firstNodeValue() const { return num_inputs + constants.size(); }
};

struct StaticModuleOptions;

// Assigns every value an index, hoists constants, selects a kernel for every node, and decides
// which values survive a run and which the memory planner owns. `graph` must outlive the
// program: node infos point into it.
Program buildProgram(const std::shared_ptr<torch::jit::Graph>& graph,
                     const StaticModuleOptions& options);

// Node counts by kernel kind, over every block.
ModuleStats countKernels(const Program& program);

} // namespace srt
