// What srt::packed_conv2d (ops/conv/packed_conv.cpp) shares with the 2-D convolution kernels.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

namespace srt::ops {

// srt::fused_conv2d as ATen computes it: conv2d, then the residual added, then the activation
// ("none", or one of the activation names conv_fusion emits).
at::Tensor fusedConv2dReference(const at::Tensor& input, const at::Tensor& weight,
                                const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                                const c10::optional<at::Tensor>& residual,
                                c10::string_view activation, const at::Scalar& act_a,
                                const at::Scalar& act_b);

} // namespace srt::ops
