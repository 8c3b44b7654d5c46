// Runs one block's node list over a runtime's value table.
#pragma once

#include <vector>

#include "ops/processed_node.h"
#include "static_runtime/program.h"

namespace srt {

// Per-runtime state of one block. Built once per runtime; sub-blocks of prim::If / prim::Loop
// nodes get BlockRunners of their own. `program`, `values` and `scratch` must outlive the runner.
class BlockRunner final : public ops::SubBlock {
public:
  // Appends the address of every node it builds, sub-blocks included, to `every_node` (when
  // given) in Program::scratch_blocks order: each node, then the nodes of its sub-blocks. The
  // addresses stay valid as long as the runner.
  BlockRunner(const Program& program, size_t block_index, c10::IValue* values,
              ops::Scratch* scratch, std::vector<ops::ProcessedNode*>* every_node = nullptr);

  size_t numInputs() const override { return info_.inputs.size(); }
  size_t numOutputs() const override { return info_.outputs.size(); }
  c10::IValue& input(size_t i) override { return values_[info_.inputs[i]]; }
  const c10::IValue& output(size_t i) const override { return values_[info_.outputs[i]]; }

  // Runs every node in order; an error names the failing node (see NodeError).
  void run() override;

private:
  const BlockInfo& info_;
  c10::IValue* values_;
  std::vector<ops::ProcessedNode> nodes_;
};

} // namespace srt
