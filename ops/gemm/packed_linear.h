// srt::fused_linear.packed: srt::fused_linear whose weight is one graph constant already packed
// for oneDNN's matmul (passes/linear_weight_packing.cpp makes it), so that a module holds its
// linear weights once, in the layout its kernels read, and not also as plain tensors (vit_b_16:
// 330 MB instead of 660). The linear counterpart of srt::packed_conv2d (ops/conv/packed_conv.h).
#pragma once

#include <memory>

#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>

namespace srt::ops {

struct OneDnnPackedWeight;

// The graph constant: torch.classes.srt.LinearWeight.
struct PackedLinearWeight : torch::CustomClassHolder {
  explicit PackedLinearWeight(std::shared_ptr<const OneDnnPackedWeight> weight)
      : packed(std::move(weight)) {}
  std::shared_ptr<const OneDnnPackedWeight> packed;
};

// Registers torch.classes.srt.LinearWeight, once: every library fragment that defines a schema
// naming it calls this first, since static initialisation runs the files in no fixed order.
void registerLinearWeightClass();

// A linear's weight [N, K] (float32) packed as a constant for srt::fused_linear.packed; nullptr
// when oneDNN has no matmul for it.
c10::intrusive_ptr<PackedLinearWeight> packLinearWeightConstant(const at::Tensor& weight);

// The op the packed nodes are (srt::fused_linear) and the overload's schema: srt::fused_linear's
// arguments with the weight packed.
extern const char* const kPackedLinearSchema;

} // namespace srt::ops
