// torchvision::nms (torchvision's detection models, through batched_nms): torchvision's own CPU
// kernel, called through the dispatcher without the JIT operator's stack. The kept indices'
// count depends on the boxes, so the kernel makes its result, as it does for the JIT. Registered
// only where torchvision's library is loaded (a graph holding the op could not load otherwise).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

constexpr const char* kNmsSchema =
    "torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor";

std::optional<KernelFunction> nms(const torch::jit::Node* node, const KernelOptions&) {
  const auto handle = c10::Dispatcher::singleton().findSchema({"torchvision::nms", ""});
  if (!handle || !node->matches(kNmsSchema)) {
    return std::nullopt;
  }
  const auto op = handle->typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  return KernelFunction([op](ProcessedNode& p) {
    p.output(0) = op.call(p.input(0).toTensor(), p.input(1).toTensor(), p.input(2).toDouble());
  });
}

} // namespace

SRT_REGISTER_KERNEL("torchvision::nms", kNative, nms);

} // namespace srt::ops
