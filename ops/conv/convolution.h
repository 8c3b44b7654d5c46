// What srt::packed_conv2d/3d (ops/conv/packed_conv.cpp) shares with the convolution kernels.
#pragma once

#include <cstdint>

#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/string_view.h>

#include "ops/conv/onednn_conv.h"

namespace torch::jit {
struct Node;
struct Value;
} // namespace torch::jit

namespace srt::ops {

// srt::fused_conv2d/3d as ATen computes them: conv2d or conv3d (by the weight's rank), then the
// residual added, then the activation ("none", or one of the activation names conv_fusion emits).
at::Tensor fusedConvReference(const at::Tensor& input, const at::Tensor& weight,
                              const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                              at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                              const c10::optional<at::Tensor>& residual,
                              c10::string_view activation, const at::Scalar& act_a,
                              const at::Scalar& act_b);

// The epilogue of aten::conv2d/3d (none) or srt::fused_conv2d/3d and srt::packed_conv2d/3d (from
// their constant residual, activation and parameters); std::nullopt when they are not constants
// or the residual may or may not be None at run time (the JIT operator then runs the node).
std::optional<ConvEpilogue> constantConvEpilogue(const torch::jit::Node* node);

// A convolution's inputs in srt::fused_conv2d/3d's positions (a node's, or one part of a fused
// node's: srt::blocked_conv2d_dw).
using ConvInputs = c10::ArrayRef<const torch::jit::Value*>;
std::optional<ConvEpilogue> constantConvEpilogue(ConvInputs inputs);

// The stride, padding, dilation and groups of aten::conv2d/3d, srt::fused_conv2d/3d or
// srt::packed_conv2d/3d (inputs 3 to 6) for `spatial_dims` (2 or 3) when all are constants and
// valid (an int list of one value stands for every dim); std::nullopt otherwise (ATen then runs
// the node, and reports what is wrong).
std::optional<ConvArguments> constantConvArguments(const torch::jit::Node* node, int spatial_dims);
std::optional<ConvArguments> constantConvArguments(ConvInputs inputs, int spatial_dims);

// The kernel of an srt::blocked_conv2d with these inputs (constant but input 0, as
// srt::blocked_conv2d's node would have them); std::nullopt where they are not constants or not
// the packed weight's.
std::optional<KernelFunction> blockedConvKernel(ConvInputs inputs);

} // namespace srt::ops
