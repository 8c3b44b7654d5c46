// A kernel run by another node's kernel as one part of its work: a composite kernel that, per
// input shape, either runs its own fused computation or its parts one after the other (ops/conv/
// onednn_conv_fused_depthwise.cpp: a 1x1 and a depthwise convolution, fused by oneDNN where their
// intermediate image would leave the caches, else each on its own kernel).
#pragma once

#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

#include "ops/core/processed_node.h"

namespace srt::ops {

// One part of a composite node, kept in that node's per-runtime state (it holds the part's own
// node state). The part sees a node whose inputs are `inputs` (input 0 replaced on each call) and
// whose one output is where the caller says: memory the caller owns and lends for the call. Its
// scratch comes from a grow-only buffer of its own, which no other part or node shares: the
// caller's planned scratch may hold data the part reads (its input) while it runs.
class NestedCall {
public:
  NestedCall(const ProcessedNode& parent, Kernel kernel, std::vector<c10::IValue> inputs)
      : values_(withOutputSlot(std::move(inputs))),
        node_(
            parent.nested(describe(parent.node(), std::move(kernel)), values_.data(), &scratch_)) {}
  NestedCall(const NestedCall&) = delete;
  NestedCall& operator=(const NestedCall&) = delete;

  // Runs the part on `input`. `output` is moved into the part's output slot and back after the
  // call: a tensor of the right size that nothing else holds is written in place (an out-variant
  // kernel reuses it), anything else is replaced by what the kernel allocates.
  void run(const at::Tensor& input, c10::IValue& output) {
    values_.front() = input;
    values_.back() = std::move(output);
    try {
      node_.run();
    } catch (...) {
      output = std::move(values_.back());
      values_.front() = c10::IValue();
      throw;
    }
    output = std::move(values_.back());
    values_.front() = c10::IValue(); // the caller's input is not held past the call
  }

private:
  // The value table: the inputs at [0, n), the output at n.
  static std::vector<c10::IValue> withOutputSlot(std::vector<c10::IValue> inputs) {
    inputs.emplace_back();
    return inputs;
  }

  const StaticNodeInfo& describe(const torch::jit::Node* node, Kernel kernel) {
    info_.node = node;
    info_.kernel = std::move(kernel);
    const auto output = static_cast<ValueIndex>(values_.size() - 1);
    for (ValueIndex i = 0; i < output; ++i) {
      info_.inputs.push_back(i);
    }
    info_.first_output = output;
    info_.num_outputs = 1;
    return info_;
  }

  StaticNodeInfo info_;
  std::vector<c10::IValue> values_;
  Scratch scratch_;
  ProcessedNode node_;
};

} // namespace srt::ops
