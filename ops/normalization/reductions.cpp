// sum, mean, amax, argmax, max, min, norm, linalg_vector_norm, cumsum, sort and topk as
// out-variant kernels over at::cpu::*_out, whose reductions are vectorized and split over threads
// already; what we add is the output's reuse and its dtype.
#include <algorithm>

#include <ATen/CPUFunctions.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/result_type_native.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/elementwise/vectorized_loops.h"

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

// Whether `dims` of a 4-D tensor are its image's, 2 and 3 (either order, or negative).
bool areImageDims(const c10::optional<at::DimVector>& dims) {
  if (!dims || dims->size() != 2) {
    return false;
  }
  const int64_t a = (*dims)[0] < 0 ? (*dims)[0] + 4 : (*dims)[0];
  const int64_t b = (*dims)[1] < 0 ? (*dims)[1] + 4 : (*dims)[1];
  return std::min(a, b) == 2 && std::max(a, b) == 3;
}

// Whether x.sum / x.mean over `dims` without a dtype reduces a channels-last float32 image batch
// over its image: each image's rows of channels are then summed in order (vec::sumRows). ATen's
// reduction strides over the channels instead: the mean of 1280 channels at 7x7 (a network's head
// after its last convolution) took 57 us, 0.9 ns an element, against 14. Within rounding of
// ATen's sum.
bool reducesChannelsLastImages(const at::Tensor& self, const c10::optional<at::DimVector>& dims,
                               c10::optional<at::ScalarType> dtype) {
  return !dtype && self.scalar_type() == at::kFloat && self.dim() == 4 && self.numel() > 0 &&
         !self.is_contiguous() && self.is_contiguous(at::MemoryFormat::ChannelsLast) &&
         areImageDims(dims);
}

// Each image's sums over its pixels, divided by their count for a mean.
void sumChannelsLastImages(ProcessedNode& p, const at::Tensor& self, bool keepdim, bool mean) {
  const int64_t batch = self.size(0);
  const int64_t channels = self.size(1);
  const int64_t pixels = self.size(2) * self.size(3);
  at::Tensor& out = outputTensor(p, 0, self.options());
  at::DimVector sizes{batch, channels};
  if (keepdim) {
    sizes.append({1, 1});
  }
  at::native::resize_(out, sizes);
  const float* in = self.data_ptr<float>();
  float* result = out.data_ptr<float>();
  splitIfWorthIt(p.workers(), batch, 1, static_cast<double>(self.numel()) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t n = begin; n < end; ++n) {
                     const float* image = in + n * pixels * channels;
                     float* row = result + n * channels;
                     if (mean) {
                       vec::meanRows(image, pixels, channels, row);
                     } else {
                       std::fill_n(row, channels, 0.f);
                       vec::sumRows(image, pixels, channels, row);
                     }
                   }
                 });
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
  if (reducesChannelsLastImages(self, dims, dtype)) {
    sumChannelsLastImages(p, self, p.input(2).toBool(), /*mean=*/false);
    return;
  }
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
  if (reducesChannelsLastImages(self, dims, dtype)) {
    sumChannelsLastImages(p, self, p.input(2).toBool(), /*mean=*/true);
    return;
  }
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

// max.dim / min.dim(Tensor self, int dim, bool keepdim=False) -> (values, indices)
template <bool kMax> void extremumAlongDim(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const int64_t dim = p.input(1).toInt();
  const bool keepdim = p.input(2).toBool();
  at::Tensor& values = outputTensorLike(p, 0, self);
  at::Tensor& indices = outputTensor(p, 1, self.options().dtype(at::kLong));
  if constexpr (kMax) {
    at::cpu::max_out(values, indices, self, dim, keepdim);
  } else {
    at::cpu::min_out(values, indices, self, dim, keepdim);
  }
}

// max / min(Tensor self): the extremum of every element, which amax / amin over all dimensions
// compute (NaN propagating as well); an empty input is an error either way.
template <bool kMax> void extremumOfAll(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  TORCH_CHECK(self.numel() > 0, kMax ? "max" : "min",
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
              "reduction dim with the 'dim' argument.");
  at::Tensor& out = outputTensorLike(p, 0, self);
  if constexpr (kMax) {
    at::cpu::amax_out(out, self, {}, /*keepdim=*/false);
  } else {
    at::cpu::amin_out(out, self, {}, /*keepdim=*/false);
  }
}

// max.other / min.other(Tensor self, Tensor other): element-wise, in the promoted dtype.
template <bool kMax> void extremumOfPair(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::Tensor& other = p.input(1).toTensor();
  at::Tensor& out = outputTensor(p, 0, self.options().dtype(at::native::result_type(self, other)));
  if constexpr (kMax) {
    at::cpu::maximum_out(out, self, other);
  } else {
    at::cpu::minimum_out(out, self, other);
  }
}

// norm.Scalar(self, p=2) and norm.ScalarOpt_dim(self, p?, dim, keepdim=False): the dtype of a
// real input (complex inputs give their real type).
void normAll(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const c10::optional<at::Scalar> order = p.input(1).toScalar();
  at::cpu::norm_out(
      outputTensor(p, 0, self.options().dtype(c10::toRealValueType(self.scalar_type()))), self,
      order, {}, /*keepdim=*/false);
}

void normDims(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const c10::optional<at::Scalar> order =
      p.input(1).isNone() ? c10::nullopt : c10::optional<at::Scalar>(p.input(1).toScalar());
  const at::DimVector dims = p.input(2).toDimVector();
  at::cpu::norm_out(
      outputTensor(p, 0, self.options().dtype(c10::toRealValueType(self.scalar_type()))), self,
      order, dims, p.input(3).toBool());
}

// linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None)
void vectorNorm(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const auto dims = optionalDims(p.input(2));
  const auto dtype = p.input(4).toOptional<at::ScalarType>();
  const at::ScalarType type = c10::toRealValueType(dtype.value_or(self.scalar_type()));
  at::cpu::linalg_vector_norm_out(outputTensor(p, 0, self.options().dtype(type)), self,
                                  p.input(1).toScalar(), asRef(dims), p.input(3).toBool(), dtype);
}

// cumsum(self, dim, *, dtype=None): integers and bool accumulate in int64, as ATen's do.
void cumsum(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const auto dtype = p.input(2).toOptional<at::ScalarType>();
  at::cpu::cumsum_out(outputTensor(p, 0, self.options().dtype(sumType(self, dtype))), self,
                      p.input(1).toInt(), dtype);
}

// sort(self, dim=-1, descending=False) -> (values, indices): not stable, as ATen's default.
void sort(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& values = outputTensorLike(p, 0, self);
  at::Tensor& indices = outputTensor(p, 1, self.options().dtype(at::kLong));
  at::cpu::sort_out(values, indices, self, /*stable=*/false, p.input(1).toInt(),
                    p.input(2).toBool());
}

// topk(self, k, dim=-1, largest=True, sorted=True) -> (values, indices)
void topk(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& values = outputTensorLike(p, 0, self);
  at::Tensor& indices = outputTensor(p, 1, self.options().dtype(at::kLong));
  at::cpu::topk_out(values, indices, self, p.input(1).toInt(), p.input(2).toInt(),
                    p.input(3).toBool(), p.input(4).toBool());
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
// max.int / max.float (numbers) and the Dimname overloads are declined.
SRT_REGISTER_KERNEL("aten::max", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", extremumOfAll<true>},
                                  {"dim", extremumAlongDim<true>},
                                  {"other", extremumOfPair<true>}});
});
SRT_REGISTER_KERNEL("aten::norm", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Scalar", normAll}, {"ScalarOpt_dim", normDims}});
});
SRT_REGISTER_KERNEL("aten::linalg_vector_norm", kOutVariant, tensorOverload<vectorNorm>);
SRT_REGISTER_KERNEL("aten::cumsum", kOutVariant, tensorOverload<cumsum>);
SRT_REGISTER_KERNEL("aten::sort", kOutVariant, tensorOverload<sort>);
SRT_REGISTER_KERNEL("aten::topk", kOutVariant, tensorOverload<topk>);
SRT_REGISTER_KERNEL("aten::min", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", extremumOfAll<false>},
                                  {"dim", extremumAlongDim<false>},
                                  {"other", extremumOfPair<false>}});
});

} // namespace srt::ops
