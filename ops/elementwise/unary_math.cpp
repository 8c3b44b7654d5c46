// exp, log, sqrt, rsqrt and pow (Tensor^Scalar, Tensor^Tensor, Scalar^Tensor) as out-variant
// kernels. Contiguous float32 inputs run the vectorized loops; others run `at::cpu::*_out`.
#include <ATen/CPUFunctions.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;
using vec::UnaryOp;

constexpr auto expKernel = unaryKernel<UnaryOp::kExp, at::cpu::exp_out, true>;
constexpr auto logKernel = unaryKernel<UnaryOp::kLog, at::cpu::log_out, true>;
constexpr auto sqrtKernel = unaryKernel<UnaryOp::kSqrt, at::cpu::sqrt_out, true>;
constexpr auto rsqrtKernel = unaryKernel<UnaryOp::kRsqrt, at::cpu::rsqrt_out, true>;

// pow.Tensor_Scalar(Tensor self, Scalar exponent)
void powTensorScalar(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const c10::Scalar exponent = p.input(1).toScalar();
  if (isDenseFloat(self) && !exponent.isComplex()) {
    vec::Params params;
    const UnaryOp op = vec::powFormula(exponent.toDouble(), &params);
    mapToOutput(p, op, self, params);
    return;
  }
  at::cpu::pow_out(
      outputTensor(p, 0, self.options().dtype(at::native::result_type(self, exponent))), self,
      exponent);
}

// pow.Tensor_Tensor(Tensor self, Tensor exponent)
void powTensorTensor(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& exponent = p.input(1).toTensor();
  if (isSameShapeContiguousFloat(self, exponent)) {
    mapToOutput(p, vec::BinaryOp::kPow, self, exponent);
    return;
  }
  at::cpu::pow_out(
      outputTensor(p, 0, self.options().dtype(at::native::result_type(self, exponent))), self,
      exponent);
}

// pow.Scalar(Scalar self, Tensor exponent). ATen's kernel takes the output's dtype as the result
// type when given an output, so it must be right; it runs through the dispatcher inside ATen.
void powScalarTensor(ProcessedNode& p) {
  const c10::Scalar self = p.input(0).toScalar();
  const at::Tensor& exponent = p.input(1).toTensor();
  at::cpu::pow_out(
      outputTensor(p, 0, exponent.options().dtype(at::native::result_type(self, exponent))), self,
      exponent);
}

std::optional<KernelFunction> pow(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor_Scalar", powTensorScalar},
                                  {"Tensor_Tensor", powTensorTensor},
                                  {"Scalar", powScalarTensor}});
}

} // namespace

SRT_REGISTER_KERNEL("aten::exp", kOutVariant, tensorOverload<expKernel>);
SRT_REGISTER_KERNEL("aten::log", kOutVariant, tensorOverload<logKernel>);
SRT_REGISTER_KERNEL("aten::sqrt", kOutVariant, tensorOverload<sqrtKernel>);
SRT_REGISTER_KERNEL("aten::rsqrt", kOutVariant, tensorOverload<rsqrtKernel>);
SRT_REGISTER_KERNEL("aten::pow", kOutVariant, pow);

} // namespace srt::ops
