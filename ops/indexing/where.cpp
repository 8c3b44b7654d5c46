// aten::where(condition, self, other) with tensor or scalar self/other, as out-variant kernels,
// and where(condition) (the indices of its nonzero elements) natively.
// A bool condition with same-shape contiguous float32 operands runs one plain loop; everything
// else (broadcasting, promotion, scalars) runs at::cpu::where_out.
#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

void whereOut(ProcessedNode& p, const at::Tensor& condition, const at::Tensor& self,
              const at::Tensor& other, at::ScalarType type) {
  at::cpu::where_out(outputTensor(p, 0, condition.options().dtype(type)), condition, self, other);
}

// A scalar operand as a 0-dim tensor of the result dtype: where_out converts tensor operands
// only when their dtypes differ, and its kernel needs inputs of the output's dtype.
at::Tensor scalarOperand(const c10::Scalar& value, at::ScalarType type) {
  return at::detail::scalar_tensor_static(value, type, at::kCPU);
}

// where.self(Tensor condition, Tensor self, Tensor other)
void whereSelf(ProcessedNode& p) {
  const at::Tensor& condition = p.input(0).toTensor();
  const at::Tensor& self = p.input(1).toTensor();
  const at::Tensor& other = p.input(2).toTensor();
  if (isSameShapeContiguousFloat(self, other) && condition.scalar_type() == at::kBool &&
      condition.is_contiguous() && condition.sizes() == self.sizes()) {
    at::Tensor& out = contiguousOutput(p, 0, self.sizes(), self.options());
    const bool* c = condition.data_ptr<bool>();
    const float* a = floatData(self);
    const float* b = floatData(other);
    float* o = floatData(out);
    // ATen's where kernel is a scalar loop too; the compiler vectorizes this one.
    splitIfWorthIt(p.workers(), self.numel(), at::internal::GRAIN_SIZE,
                   static_cast<double>(self.numel()) * kNanosecondsPerElement,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       o[i] = c[i] ? a[i] : b[i];
                     }
                   });
    return;
  }
  whereOut(p, condition, self, other, at::native::result_type(self, other));
}

// where.ScalarOther(Tensor condition, Tensor self, Scalar other)
void whereScalarOther(ProcessedNode& p) {
  const at::Tensor& self = p.input(1).toTensor();
  const c10::Scalar other = p.input(2).toScalar();
  const at::ScalarType type = at::native::result_type(self, other);
  whereOut(p, p.input(0).toTensor(), self, scalarOperand(other, type), type);
}

// where.ScalarSelf(Tensor condition, Scalar self, Tensor other)
void whereScalarSelf(ProcessedNode& p) {
  const c10::Scalar self = p.input(1).toScalar();
  const at::Tensor& other = p.input(2).toTensor();
  const at::ScalarType type = at::native::result_type(self, other);
  whereOut(p, p.input(0).toTensor(), scalarOperand(self, type), other, type);
}

// where.Scalar(Tensor condition, Scalar self, Scalar other)
void whereScalar(ProcessedNode& p) {
  const c10::Scalar self = p.input(1).toScalar();
  const c10::Scalar other = p.input(2).toScalar();
  const at::ScalarType type = at::native::result_type(self, other);
  whereOut(p, p.input(0).toTensor(), scalarOperand(self, type), scalarOperand(other, type), type);
}

// where(Tensor condition) -> Tensor[]: the indices of the nonzero elements, one tensor per dim
// (torchvision's box filtering). Their count depends on the values, so ATen makes them, as the
// JIT operator does, without its stack.
void nonzeroIndices(ProcessedNode& p) {
  p.output(0) = c10::List<at::Tensor>(at::where(p.input(0).toTensor()));
}

std::optional<KernelFunction> where(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"self", whereSelf},
                                  {"ScalarOther", whereScalarOther},
                                  {"ScalarSelf", whereScalarSelf},
                                  {"Scalar", whereScalar}});
}

} // namespace

SRT_REGISTER_KERNEL("aten::where", kOutVariant, where);
SRT_REGISTER_KERNEL("aten::where", kNative,
                    whenMatches("aten::where(Tensor condition) -> Tensor[]", nonzeroIndices));

} // namespace srt::ops
