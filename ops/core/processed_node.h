// The interface a kernel sees: one node of one runtime, its inputs and outputs by index.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/ivalue.h>

#include "ops/core/kernel.h"
#include "ops/core/scratch.h"
#include "ops/core/worker_pool.h"

namespace torch::jit {
class Node;
} // namespace torch::jit

namespace srt::ops {

using ValueIndex = uint32_t;

// Immutable description of one node, built once by the StaticModule and shared by all runtimes.
struct StaticNodeInfo {
  const torch::jit::Node* node = nullptr;
  Kernel kernel;
  std::vector<ValueIndex> inputs;
  // Outputs occupy [first_output, first_output + num_outputs) of the value table.
  ValueIndex first_output = 0;
  uint32_t num_outputs = 0;
  // Indices of this node's sub-blocks (prim::If / prim::Loop) in the module's block table.
  std::vector<size_t> sub_blocks;
  // This node's number among the nodes of every block: where a runtime keeps it, and which
  // planned scratch block is its.
  size_t id = 0;
};

// A node's sub-block, run by the runtime that owns the ProcessedNode. Control-flow kernels use it
// without knowing how the runtime keeps its values.
class SubBlock {
public:
  virtual ~SubBlock() = default;
  virtual size_t numInputs() const = 0;
  virtual size_t numOutputs() const = 0;
  // The block's parameters: set them before run().
  virtual c10::IValue& input(size_t i) = 0;
  virtual void run() = 0;
  // The block's results after run().
  virtual const c10::IValue& output(size_t i) const = 0;
};

// Mutable per-runtime state a kernel keeps for its node (e.g. a oneDNN primitive built for the
// last input shape). Kernels are shared by all runtimes, so such state cannot live in the kernel.
class NodeState {
public:
  virtual ~NodeState() = default;
};

// One node of one runtime. Cheap to construct; holds no copies of values, only the addresses of
// the runtime's value table, fallback scratch memory and worker threads, which must outlive it
// (and of a planned scratch block, which the runtime keeps valid between runs or clears).
class ProcessedNode {
public:
  ProcessedNode(const StaticNodeInfo& info, c10::IValue* values, Scratch* scratch,
                WorkerPool* workers = nullptr)
      : info_(&info), values_(values), scratch_(scratch), workers_(workers) {}

  size_t numInputs() const { return info_->inputs.size(); }
  size_t numOutputs() const { return info_->num_outputs; }
  const c10::IValue& input(size_t i) const { return values_[info_->inputs[i]]; }
  c10::IValue& output(size_t i) { return values_[info_->first_output + i]; }

  const torch::jit::Node* node() const { return info_->node; }
  KernelKind kind() const { return info_->kernel.kind; }

  void run() { info_->kernel.run(*this); }

  // This node's state of type T, created empty on first use. A kernel uses one type only.
  template <typename T> T& state() {
    if (!state_) {
      state_ = std::make_unique<T>();
    }
    return static_cast<T&>(*state_);
  }

  // At least `bytes` bytes of 64-byte aligned scratch, valid until this kernel call returns.
  // From the run after a size was first asked for, a block the memory planner placed in the
  // arena for this node; until then (or without a planner) the runtime's shared fallback.
  void* scratch(size_t bytes) {
    scratch_requested_ = std::max(scratch_requested_, bytes);
    if (bytes <= planned_scratch_bytes_) {
      return planned_scratch_;
    }
    return scratch_->get(bytes);
  }

  // For the runtime, which relays between the node and its memory planner: the most bytes asked
  // for since the last reset, and the planned block to lend from now on (nullptr, 0: none).
  size_t scratchRequested() const { return scratch_requested_; }
  void resetScratchRequested() { scratch_requested_ = 0; }
  void setPlannedScratch(void* data, size_t bytes) {
    planned_scratch_ = data;
    planned_scratch_bytes_ = data == nullptr ? 0 : bytes;
  }

  // The runtime's own worker threads when it runs with more than one and splits work over them
  // rather than over OpenMP's (ops/core/worker_pool.h), else nullptr: kernels that split their
  // work themselves then use at::parallel_for, or their library's threads.
  WorkerPool* workers() const {
    return workers_ != nullptr && workers_->threads() > 1 ? workers_ : nullptr;
  }

  // A node that this one's kernel runs as a part of its work (ops/core/nested_call.h). It shares
  // this node's worker threads as the runtime sizes them at each run: a part built on a
  // single-threaded run must not keep OpenMP's threads when later runs split over the workers
  // (it would wake OpenMP's threads to spin against them: mobilenet_v3_small 1 -> 50 ms).
  ProcessedNode nested(const StaticNodeInfo& info, c10::IValue* values, Scratch* scratch) const {
    return ProcessedNode(info, values, scratch, workers_);
  }

  size_t numSubBlocks() const { return sub_blocks_.size(); }
  SubBlock& subBlock(size_t i) { return *sub_blocks_[i]; }
  void setSubBlocks(std::vector<std::unique_ptr<SubBlock>> blocks) {
    sub_blocks_ = std::move(blocks);
  }

private:
  const StaticNodeInfo* info_;
  c10::IValue* values_;
  Scratch* scratch_;
  WorkerPool* workers_;
  void* planned_scratch_ = nullptr;
  size_t planned_scratch_bytes_ = 0;
  size_t scratch_requested_ = 0;
  std::unique_ptr<NodeState> state_;
  std::vector<std::unique_ptr<SubBlock>> sub_blocks_;
};

} // namespace srt::ops
