// torchvision's operators in its detection models, on torchvision's own CPU kernels called
// through the dispatcher without the JIT operator's stack: torchvision::nms (through
// batched_nms) and torchvision::roi_align (the two-stage detectors' MultiScaleRoIAlign). Their
// results' sizes depend on the boxes, so the kernels make them, as they do for the JIT.
// Registered only where torchvision's library is loaded (a graph holding the ops could not load
// otherwise).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

// A factory for `schema`'s node calling torchvision's kernel, of C++ type Signature, with the
// node's inputs as `call` passes them.
template <typename Signature, typename Call>
KernelFactory torchvisionKernel(const char* name, const char* schema, Call call) {
  return [name, schema, call](const torch::jit::Node* node,
                              const KernelOptions&) -> std::optional<KernelFunction> {
    const auto handle = c10::Dispatcher::singleton().findSchema({name, ""});
    if (!handle || !node->matches(schema)) {
      return std::nullopt;
    }
    const auto op = handle->template typed<Signature>();
    return KernelFunction([op, call](ProcessedNode& p) { p.output(0) = call(op, p); });
  };
}

template <typename Signature> using TypedOp = c10::TypedOperatorHandle<Signature>;

using NmsSignature = at::Tensor(const at::Tensor&, const at::Tensor&, double);
using RoiAlignSignature = at::Tensor(const at::Tensor&, const at::Tensor&, double, int64_t, int64_t,
                                     int64_t, bool);

} // namespace

SRT_REGISTER_KERNEL(
    "torchvision::nms", kNative,
    torchvisionKernel<NmsSignature>(
        "torchvision::nms",
        "torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
        [](const TypedOp<NmsSignature>& op, ProcessedNode& p) {
          return op.call(p.input(0).toTensor(), p.input(1).toTensor(), p.input(2).toDouble());
        }));
SRT_REGISTER_KERNEL(
    "torchvision::roi_align", kNative,
    torchvisionKernel<RoiAlignSignature>(
        "torchvision::roi_align",
        "torchvision::roi_align(Tensor input, Tensor rois, float spatial_scale, int "
        "pooled_height, int pooled_width, int sampling_ratio, bool aligned) -> Tensor",
        [](const TypedOp<RoiAlignSignature>& op, ProcessedNode& p) {
          return op.call(p.input(0).toTensor(), p.input(1).toTensor(), p.input(2).toDouble(),
                         p.input(3).toInt(), p.input(4).toInt(), p.input(5).toInt(),
                         p.input(6).toBool());
        }));

} // namespace srt::ops
