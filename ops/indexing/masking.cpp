// Masks as attention code builds them: logical_or of padding and causal masks, masked_fill of
// scores, logical_not of a padding mask, tril/triu for a causal one (zeros_like for an additive
// mask is with the other filled tensors, ops/creation/filled_tensors.cpp). Out-variant kernels
// into last run's tensor.

#include <ATen/CPUFunctions.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Copy.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// logical_or(Tensor self, Tensor other) -> Tensor (bool)
void logicalOr(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& other = p.input(1).toTensor();
  at::cpu::logical_or_out(outputTensor(p, 0, self.options().dtype(at::kBool)), self, other);
}

void logicalNot(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::cpu::logical_not_out(outputTensor(p, 0, self.options().dtype(at::kBool)), self);
}

// masked_fill(self, mask, value) is a copy of `self` broadcast with `mask`, filled where `mask`.
void maskedFill(ProcessedNode& p, const c10::Scalar& value) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& mask = p.input(1).toTensor();
  const auto sizes = at::infer_size(self.sizes(), mask.sizes());
  at::Tensor& out = contiguousOutput(p, 0, sizes, self.options());
  at::native::copy_(out, self.expand(sizes), /*non_blocking=*/false);
  at::cpu::masked_fill_(out, mask, value);
}

void maskedFillScalar(ProcessedNode& p) {
  maskedFill(p, p.input(2).toScalar());
}

void maskedFillTensor(ProcessedNode& p) {
  const at::Tensor& value = p.input(2).toTensor();
  TORCH_CHECK(value.dim() == 0,
              "masked_fill only supports a 0-dimensional value tensor, but got "
              "one with ",
              value.dim(), " dimension(s)");
  maskedFill(p, value.item());
}

// tril / triu(self, diagonal=0): a causal mask built from the sequence length.
template <at::Tensor& (*TriangleOut)(at::Tensor&, const at::Tensor&, int64_t)>
void triangle(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  TriangleOut(outputTensorLike(p, 0, self), self, p.input(1).toInt());
}

} // namespace

SRT_REGISTER_KERNEL("aten::tril", kOutVariant, tensorOverload<triangle<at::cpu::tril_out>>);
SRT_REGISTER_KERNEL("aten::triu", kOutVariant, tensorOverload<triangle<at::cpu::triu_out>>);
SRT_REGISTER_KERNEL("aten::logical_or", kOutVariant, tensorOverload<logicalOr>);
SRT_REGISTER_KERNEL("aten::logical_not", kOutVariant, tensorOverload<logicalNot>);
SRT_REGISTER_KERNEL("aten::masked_fill", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Scalar", maskedFillScalar}, {"Tensor", maskedFillTensor}});
});

} // namespace srt::ops
