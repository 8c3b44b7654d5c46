// prim::If and prim::Loop: run-time control flow, each branch or body a sub-block the runtime
// runs; and prim::RaiseException, the model's own `raise`.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/jit_exception.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

void copyBlockOutputsToNode(SubBlock& block, size_t first, ProcessedNode& p) {
  for (size_t i = 0; i < p.numOutputs(); ++i) {
    p.output(i) = block.output(first + i);
  }
}

void runIf(ProcessedNode& p) {
  SubBlock& taken = p.subBlock(p.input(0).toBool() ? 0 : 1);
  taken.run();
  copyBlockOutputsToNode(taken, 0, p);
}

// prim::Loop(max_trip_count, initial_condition, carried...) with a body
//   block(iteration, carried...) -> (condition, carried...)
void runLoop(ProcessedNode& p) {
  SubBlock& body = p.subBlock(0);
  const int64_t max_trip_count = p.input(0).toInt();
  bool condition = p.input(1).toBool();
  const size_t num_carried = p.numInputs() - 2;
  for (size_t i = 0; i < num_carried; ++i) {
    body.input(i + 1) = p.input(i + 2);
  }
  int64_t iteration = 0;
  for (; condition && iteration < max_trip_count; ++iteration) {
    body.input(0) = iteration;
    body.run();
    condition = body.output(0).toBool();
    // A block output may name one of the block's own inputs: read them all before writing any.
    for (size_t i = 0; i < num_carried; ++i) {
      p.output(i) = body.output(i + 1);
    }
    for (size_t i = 0; i < num_carried; ++i) {
      body.input(i + 1) = p.output(i);
    }
  }
  if (iteration == 0) {
    for (size_t i = 0; i < num_carried; ++i) {
      p.output(i) = p.input(i + 2);
    }
  }
}

// prim::RaiseException(str msg, str? cls=None). LibTorch 1.13's registered operator is a
// deprecated one-argument kernel (the interpreter raises with an instruction of its own), so the
// fallback would report the class name as the message. The message reads like the JIT's:
// "builtins.ValueError: negative input".
void raiseException(ProcessedNode& p) {
  const std::string& message = p.input(0).toStringRef();
  if (p.numInputs() > 1 && !p.input(1).isNone()) {
    throw torch::jit::JITException(p.input(1).toStringRef() + ": " + message);
  }
  throw torch::jit::JITException(message);
}

} // namespace

SRT_REGISTER_KERNEL("prim::RaiseException", kNative,
                    [](const torch::jit::Node*, const KernelOptions&) {
                      return std::optional<KernelFunction>(raiseException);
                    });

SRT_REGISTER_KERNEL("prim::If", kNative, [](const torch::jit::Node*, const KernelOptions&) {
  return std::optional<KernelFunction>(runIf);
});

SRT_REGISTER_KERNEL("prim::Loop", kNative, [](const torch::jit::Node*, const KernelOptions&) {
  return std::optional<KernelFunction>(runLoop);
});

} // namespace srt::ops
