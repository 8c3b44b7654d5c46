// aten::add, sub, mul and div, tensor-tensor and tensor-scalar: out-variant kernels. Same-shape
// contiguous float32 operands, or one float32 tensor and a real scalar, run the vectorized loops;
// everything else (broadcasting, other dtypes, strides, rounding modes) runs `at::cpu::*_out`.
#include <ATen/CPUFunctions.h>
#include <ATen/ops/resize_native.h>

#include "ops/core/registry.h"
#include "ops/elementwise/channel_scale.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1); sub.Tensor is add with -alpha.
template <bool kSubtract> void addTensor(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& other = p.input(1).toTensor();
  const c10::Scalar alpha = p.input(2).toScalar();
  if (isSameShapeContiguousFloat(self, other) && !alpha.isComplex()) {
    const float a = alpha.to<float>();
    mapToOutput(p, vec::BinaryOp::kAdd, self, other, {kSubtract ? -a : a});
    return;
  }
  at::Tensor& out = outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other)));
  if constexpr (kSubtract) {
    at::cpu::sub_out(out, self, other, alpha);
  } else {
    at::cpu::add_out(out, self, other, alpha);
  }
}

// add.Scalar(Tensor self, Scalar other, Scalar alpha=1) and sub.Scalar.
template <bool kSubtract> void addScalar(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const c10::Scalar other = p.input(1).toScalar();
  const c10::Scalar alpha = p.input(2).toScalar();
  if (isDenseFloat(self) && !other.isComplex() && !alpha.isComplex()) {
    const float a = alpha.to<float>();
    mapToOutput(p, vec::UnaryOp::kAddScalar, self,
                {wrappedScalarAsFloat(other), kSubtract ? -a : a});
    return;
  }
  at::Tensor& out = outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other)));
  if constexpr (kSubtract) {
    at::cpu::sub_out(out, self, wrappedScalar(other), alpha);
  } else {
    at::cpu::add_out(out, self, wrappedScalar(other), alpha);
  }
}

// image * scale for a float32 image and one factor per channel and image: squeeze-excitation's
// scaling, x * s or s * x (ops/elementwise/channel_scale.h: the scale [N or 1, C, 1, 1], or
// expanded to the image's size). Two layouts: a channels-last image [N, C, H, W] and a
// channel-blocked one (ops/conv/blocked_layout.h) [N, B, H, W, 16]; either is rows of pixels,
// each row times the same factors (per image, or per image and block). One product per element,
// as ATen's broadcasting loop computes it (efficientnet_b0's 16 of them: 811 us), laid out as ATen
// lays the result out. False for anything else.
bool mulChannelScale(ProcessedNode& p, const at::Tensor& image, const at::Tensor& scale) {
  if (image.scalar_type() != at::kFloat) {
    return false;
  }
  const std::optional<ChannelScale> factors = channelScale(image, scale);
  const bool channels_last = image.dim() == 4 &&
                             image.is_contiguous(at::MemoryFormat::ChannelsLast) &&
                             !image.is_contiguous();
  const bool blocked = image.dim() == 5 && image.is_contiguous();
  if (!factors || (!channels_last && !blocked)) {
    return false;
  }
  at::Tensor& out = outputTensorLike(p, 0, image);
  if (channels_last) {
    at::native::resize_(out, image.sizes(), at::MemoryFormat::ChannelsLast);
  } else {
    at::native::resize_(out, image.sizes());
  }
  scaleChannels(image, *factors, floatData(out), p.workers());
  return true;
}

void mulTensor(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& other = p.input(1).toTensor();
  if (isSameShapeContiguousFloat(self, other)) {
    mapToOutput(p, vec::BinaryOp::kMul, self, other);
    return;
  }
  if (mulChannelScale(p, self, other) || mulChannelScale(p, other, self)) {
    return;
  }
  at::cpu::mul_out(outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other))),
                   self, other);
}

void mulScalar(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const c10::Scalar other = p.input(1).toScalar();
  if (isDenseFloat(self) && !other.isComplex()) {
    mapToOutput(p, vec::UnaryOp::kMulScalar, self, {wrappedScalarAsFloat(other)});
    return;
  }
  at::cpu::mul_out(outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other))),
                   self, wrappedScalar(other));
}

// The rounding mode of div.Tensor_mode / div.Scalar_mode, nullopt for true division.
c10::optional<c10::string_view> roundingMode(const ProcessedNode& p) {
  if (p.numInputs() < 3 || p.input(2).isNone()) {
    return c10::nullopt;
  }
  return c10::string_view(p.input(2).toStringRef());
}

// div.Tensor(Tensor self, Tensor other) and div.Tensor_mode(..., *, str? rounding_mode).
void divTensor(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& other = p.input(1).toTensor();
  const c10::optional<c10::string_view> mode = roundingMode(p);
  if (!mode) {
    if (isSameShapeContiguousFloat(self, other)) {
      mapToOutput(p, vec::BinaryOp::kDiv, self, other);
      return;
    }
    const at::ScalarType type = floatingResultType(at::native::result_type(self, other));
    at::cpu::div_out(outputTensor(p, 0, self.options().dtype(type)), self, other);
    return;
  }
  at::cpu::div_out(outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other))),
                   self, other, mode);
}

// div.Scalar(Tensor self, Scalar other) and div.Scalar_mode.
void divScalar(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const c10::Scalar other = p.input(1).toScalar();
  const c10::optional<c10::string_view> mode = roundingMode(p);
  if (!mode) {
    if (isDenseFloat(self) && !other.isComplex()) {
      mapToOutput(p, vec::UnaryOp::kDivScalar, self, {wrappedScalarAsFloat(other)});
      return;
    }
    const at::ScalarType type = floatingResultType(at::native::result_type(self, other));
    at::cpu::div_out(outputTensor(p, 0, self.options().dtype(type)), self, wrappedScalar(other));
    return;
  }
  at::cpu::div_out(outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other))),
                   self, wrappedScalar(other), mode);
}

std::optional<KernelFunction> add(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor", addTensor<false>}, {"Scalar", addScalar<false>}});
}

std::optional<KernelFunction> sub(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor", addTensor<true>}, {"Scalar", addScalar<true>}});
}

std::optional<KernelFunction> mul(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor", mulTensor}, {"Scalar", mulScalar}});
}

std::optional<KernelFunction> div(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor", divTensor},
                                  {"Tensor_mode", divTensor},
                                  {"Scalar", divScalar},
                                  {"Scalar_mode", divScalar}});
}

} // namespace

SRT_REGISTER_KERNEL("aten::add", kOutVariant, add);
SRT_REGISTER_KERNEL("aten::sub", kOutVariant, sub);
SRT_REGISTER_KERNEL("aten::mul", kOutVariant, mul);
SRT_REGISTER_KERNEL("aten::div", kOutVariant, div);

} // namespace srt::ops
