// aten::eq, ne, lt, le, gt, ge on tensors (the Tensor and Scalar overloads): out-variant kernels
// writing the bool result into the node's reused output with `at::cpu::*_out`. Masks built this
// way (`mask == 0`, `x > 0`) otherwise allocate a new tensor every run through the JIT operator.
// Inside an element-wise chain they are fused instead (ops/elementwise/fused_program.cpp).
#include <ATen/CPUFunctions.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

struct Comparison {
  at::Tensor& (*with_tensor)(at::Tensor& out, const at::Tensor& self, const at::Tensor& other);
  at::Tensor& (*with_scalar)(at::Tensor& out, const at::Tensor& self, const at::Scalar& other);
};

const Comparison kEq{at::cpu::eq_out, at::cpu::eq_out};
const Comparison kNe{at::cpu::ne_out, at::cpu::ne_out};
const Comparison kLt{at::cpu::lt_out, at::cpu::lt_out};
const Comparison kLe{at::cpu::le_out, at::cpu::le_out};
const Comparison kGt{at::cpu::gt_out, at::cpu::gt_out};
const Comparison kGe{at::cpu::ge_out, at::cpu::ge_out};

at::Tensor& boolOutput(ProcessedNode& p, const at::Tensor& self) {
  return outputTensor(p, 0, self.options().dtype(at::kBool));
}

template <const Comparison& kOp> void compareWithTensor(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  kOp.with_tensor(boolOutput(p, self), self, p.input(1).toTensor());
}

template <const Comparison& kOp> void compareWithScalar(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  kOp.with_scalar(boolOutput(p, self), self, p.input(1).toScalar());
}

// Declines the overloads on numbers, lists and strings (eq.int, eq.str ...): those are not
// tensor ops.
template <const Comparison& kOp>
std::optional<KernelFunction> comparison(const torch::jit::Node* node, const KernelOptions&) {
  return kernelForOverload(
      node, {{"Tensor", compareWithTensor<kOp>}, {"Scalar", compareWithScalar<kOp>}});
}

} // namespace

SRT_REGISTER_KERNEL("aten::eq", kOutVariant, comparison<kEq>);
SRT_REGISTER_KERNEL("aten::ne", kOutVariant, comparison<kNe>);
SRT_REGISTER_KERNEL("aten::lt", kOutVariant, comparison<kLt>);
SRT_REGISTER_KERNEL("aten::le", kOutVariant, comparison<kLe>);
SRT_REGISTER_KERNEL("aten::gt", kOutVariant, comparison<kGt>);
SRT_REGISTER_KERNEL("aten::ge", kOutVariant, comparison<kGe>);

} // namespace srt::ops
