// srt::packed_conv2d/3d: srt::fused_conv2d/3d whose weight and bias are one graph constant already
// packed for oneDNN (passes/conv_weight_packing.cpp makes it), so that a module holds its large
// convolution weights once, in the layout its kernels read, and not also as plain tensors. The
// same design as PyTorch's prepacked mkldnn convolution contexts.
#pragma once

#include <memory>

#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>

#include "ops/conv/onednn_conv.h"

namespace srt::ops {

// The graph constant: torch.classes.srt.ConvWeight.
struct PackedConvWeight : torch::CustomClassHolder {
  explicit PackedConvWeight(std::shared_ptr<const OneDnnConvWeight> weight)
      : packed(std::move(weight)) {}
  std::shared_ptr<const OneDnnConvWeight> packed;
};

// weight [OC, C / groups, k...] and bias ([OC] or undefined), float32, packed as a constant for
// srt::packed_conv2d/3d; nullptr when oneDNN has no convolution for them.
c10::intrusive_ptr<PackedConvWeight> packConvWeightConstant(const at::Tensor& weight,
                                                            const at::Tensor& bias,
                                                            const ConvArguments& arguments);

// The schemas; inputs at srt::fused_conv2d/3d's positions, the packed weight in the weight's, the
// bias (inside the packed weight) always None.
extern const char* const kPackedConv2dSchema;
extern const char* const kPackedConv3dSchema;
// srt::blocked_conv2d: srt::packed_conv2d on channel-blocked activations
// (ops/conv/blocked_layout.h): its input blocked or plain (NCHW or channels last, a network's first
// layers), its residual and output blocked; passes/blocked_layout.cpp makes it.
extern const char* const kBlockedConv2dSchema;
// srt::scaled_packed_conv2d / srt::scaled_blocked_conv2d: the same convolutions of `input * scale`
// (an image times one factor per input channel: squeeze-excitation's scaling, which
// passes/conv_channel_scale.cpp folds into the convolution it feeds); `scale` is their last input.
// At batch 1 the kernel scales the weight's input channels instead of the image where the weight
// is the smaller (ops/conv/onednn_conv.h).
extern const char* const kScaledPackedConv2dSchema;
extern const char* const kScaledBlockedConv2dSchema;
// srt::blocked_conv2d_dw: an srt::blocked_conv2d 1x1 convolution (inputs 0-10, no residual) whose
// one reader is a depthwise srt::blocked_conv2d (its inputs but the first at 11-20, no residual):
// passes/pointwise_depthwise_fusion.cpp makes it, ops/conv/pointwise_depthwise.cpp runs it.
extern const char* const kBlockedConv2dDwSchema;
// Where the depthwise convolution's inputs start in srt::blocked_conv2d_dw's.
constexpr size_t kDepthwiseInputs = 11;

// What the JIT runs for the node, and our kernels for what they do not cover: the weight unpacked
// (a new tensor per call), then srt::fused_conv2d/3d's reference.
at::Tensor packedConvReference(const at::Tensor& input,
                               const c10::intrusive_ptr<PackedConvWeight>& weight,
                               const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                               const c10::optional<at::Tensor>& residual,
                               c10::string_view activation, const at::Scalar& act_a,
                               const at::Scalar& act_b);

// srt::blocked_conv2d's reference: the input and residual converted to plain, the packed
// convolution's reference, its result blocked.
at::Tensor blockedConvReference(const at::Tensor& input,
                                const c10::intrusive_ptr<PackedConvWeight>& weight,
                                const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                                const c10::optional<at::Tensor>& residual,
                                c10::string_view activation, const at::Scalar& act_a,
                                const at::Scalar& act_b);

} // namespace srt::ops
