// sum, mean, amax and argmax as out-variant kernels over at::cpu::*_out, whose reductions are
// vectorized and split over threads already; what we add is the output's reuse and its dtype.
#include <ATen/CPUFunctions.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// An `int[1]? dim` argument: nullopt (None) reduces every dimension.
c10::optional<at::DimVector> optionalDims(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::DimVector>(value.toDimVector());
}

at::OptionalIntArrayRef asRef(const c10::optional<at::DimVector>& dims) {
  return dims ? at::OptionalIntArrayRef(*dims) : c10::nullopt;
}

// ATen's structured reductions take the dtype of the output they are given when no dtype is
// asked for, so it must be the one the functional form would pick.
at::ScalarType sumType(const at::Tensor& self, c10::optional<at::ScalarType> dtype) {
  if (dtype) {
    return *dtype;
  }
  return c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                       : self.scalar_type();
}

// sum(Tensor self, *, ScalarType? dtype=None)
void sumAll(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const auto dtype = p.input(1).toOptional<at::ScalarType>();
  at::cpu::sum_out(outputTensor(p, 0, self.options().dtype(sumType(self, dtype))), self,
                   c10::nullopt, /*keepdim=*/false, dtype);
}

// sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)
void sumDims(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const auto dims = optionalDims(p.input(1));
  const auto dtype = p.input(3).toOptional<at::ScalarType>();
  at::cpu::sum_out(outputTensor(p, 0, self.options().dtype(sumType(self, dtype))), self,
                   asRef(dims), p.input(2).toBool(), dtype);
}

// mean(Tensor self, *, ScalarType? dtype=None). Integer inputs without a dtype are an error
// ATen reports.
void meanAll(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const auto dtype = p.input(1).toOptional<at::ScalarType>();
  at::cpu::mean_out(outputTensor(p, 0, self.options().dtype(dtype.value_or(self.scalar_type()))),
                    self, c10::nullopt, /*keepdim=*/false, dtype);
}

// mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)
void meanDims(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const auto dims = optionalDims(p.input(1));
  const auto dtype = p.input(3).toOptional<at::ScalarType>();
  at::cpu::mean_out(outputTensor(p, 0, self.options().dtype(dtype.value_or(self.scalar_type()))),
                    self, asRef(dims), p.input(2).toBool(), dtype);
}

// amax(Tensor self, int[1] dim=[], bool keepdim=False): [] reduces every dimension.
void amax(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector dims = p.input(1).toDimVector();
  at::cpu::amax_out(outputTensorLike(p, 0, self), self, dims, p.input(2).toBool());
}

// argmax(Tensor self, int? dim=None, bool keepdim=False)
void argmax(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::cpu::argmax_out(outputTensor(p, 0, self.options().dtype(at::kLong)), self,
                      p.input(1).toOptional<int64_t>(), p.input(2).toBool());
}

} // namespace

// sum.int, sum.float and the like (sums of lists) and the Dimname overloads are declined.
SRT_REGISTER_KERNEL("aten::sum", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", sumAll}, {"dim_IntList", sumDims}});
});
SRT_REGISTER_KERNEL("aten::mean", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", meanAll}, {"dim", meanDims}});
});
SRT_REGISTER_KERNEL("aten::amax", kOutVariant, tensorOverload<amax>);
SRT_REGISTER_KERNEL("aten::argmax", kOutVariant, tensorOverload<argmax>);

} // namespace srt::ops
