// Runs one block's node list over a runtime's value table.
#pragma once

#include <functional>
#include <vector>

#include "ops/core/processed_node.h"
#include "static_runtime/program.h"

namespace srt {

// Per-runtime state of one block. Built once per runtime; sub-blocks of prim::If / prim::Loop
// nodes get BlockRunners of their own. `program`, `values`, `scratch`, `workers` and
// `node_events` must outlive the runner.
class BlockRunner final : public ops::SubBlock {
public:
  // Puts the address of every node it builds, sub-blocks included, at the node's id in
  // `every_node` (when given: Program::num_nodes entries). The addresses stay valid as long as
  // the runner. `node_events` is the runtime's per-run decision to run nodes under profiler
  // events (see profiler_events.h), read by every block.
  BlockRunner(const Program& program, size_t block_index, c10::IValue* values,
              ops::Scratch* scratch, ops::WorkerPool* workers, const bool& node_events,
              std::vector<ops::ProcessedNode*>* every_node = nullptr);

  size_t numInputs() const override { return info_.inputs.size(); }
  size_t numOutputs() const override { return info_.outputs.size(); }
  c10::IValue& input(size_t i) override { return values_[info_.inputs[i]]; }
  const c10::IValue& output(size_t i) const override { return values_[info_.outputs[i]]; }
  size_t numNodes() const { return nodes_.size(); }

  // Runs every node in order; an error names the failing node (see NodeError).
  void run() override;
  // run(), adding each node's wall time in milliseconds to node_ms[i] (numNodes() entries; a
  // control-flow node's time includes its blocks'). The same kernels run: only the clock is read
  // between nodes.
  void runTimed(double* node_ms);
  // run(), calling after_step(i) once node i has run (the planner's learning run frees the
  // tensors whose lifetime ends there).
  void runThen(const std::function<void(size_t)>& after_step);

private:
  void runNode(ops::ProcessedNode& node);

  const BlockInfo& info_;
  c10::IValue* values_;
  const bool& node_events_;
  std::vector<ops::ProcessedNode> nodes_;
};

} // namespace srt
