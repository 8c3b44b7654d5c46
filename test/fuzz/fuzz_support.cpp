#include "fuzz_support.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/irange.h>

namespace srt::fuzz {
namespace {

enum class Layout { kContiguous, kPermuted, kSliced, kExpanded, kAsStrided, kChannelsLast };

// Row-major strides; std::nullopt when they overflow int64 (dimensions up to 2^40 are fuzzed).
std::optional<std::vector<int64_t>> contiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) {
    if (__builtin_mul_overflow(strides[i], std::max<int64_t>(sizes[i], 1), &strides[i - 1])) {
      return std::nullopt;
    }
  }
  return strides;
}

// Elements the storage must hold for a view of `sizes`/`strides` at `offset`, or -1 when that
// does not fit in kMaxTensorBytes (computed in long double: sizes may be near INT64_MAX).
int64_t storageExtent(c10::IntArrayRef sizes, const std::vector<int64_t>& strides, int64_t offset,
                      size_t itemsize) {
  const long double limit = static_cast<long double>(kMaxTensorBytes / itemsize);
  long double last = static_cast<long double>(offset);
  long double numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    numel *= static_cast<long double>(sizes[i]);
    last += static_cast<long double>(sizes[i] - 1) * static_cast<long double>(strides[i]);
  }
  if (numel == 0) {
    return offset;
  }
  // Logical elements count too: ops materialize the result of a view at full size.
  if (numel > limit || last + 1 > limit) {
    return -1;
  }
  return static_cast<int64_t>(last) + 1;
}

at::Tensor specialValues(c10::ScalarType dtype) {
  if (c10::isFloatingType(dtype) || c10::isComplexType(dtype)) {
    const double inf = std::numeric_limits<double>::infinity();
    return at::tensor({std::nan(""), inf, -inf, 0.0, -0.0, 1e30, -1e30, 5e-324, 1.0, 65504.0},
                      at::kDouble)
        .to(dtype);
  }
  if (dtype == at::kBool) {
    return at::tensor({true, false, true}).to(dtype);
  }
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  // Out-of-range values wrap in the narrower integer types, which is what we want: extremes.
  return at::tensor({min, max, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{255}}, at::kLong)
      .to(dtype);
}

at::Tensor filledBuffer(FuzzedDataProvider& fdp, int64_t extent, c10::ScalarType dtype, Fill fill) {
  const auto options = at::TensorOptions().dtype(dtype);
  switch (fill) {
  case Fill::kZeros:
    return at::zeros({extent}, options);
  case Fill::kSpecial: {
    at::Tensor values = specialValues(dtype);
    const int64_t shift = fdp.ConsumeIntegralInRange<int64_t>(0, values.numel() - 1);
    return values.index_select(0, at::arange(shift, shift + extent, at::kLong) % values.numel());
  }
  case Fill::kSmall:
    break;
  }
  at::Generator generator =
      at::make_generator<at::CPUGeneratorImpl>(fdp.ConsumeIntegral<uint16_t>());
  if (c10::isComplexType(dtype)) {
    const auto real = dtype == at::kComplexDouble ? at::kDouble : at::kFloat;
    return at::view_as_complex(at::empty({extent, 2}, real).uniform_(-2, 2, generator));
  }
  if (c10::isFloatingType(dtype)) {
    return at::empty({extent}, options).uniform_(-2, 2, generator);
  }
  if (dtype == at::kBool) {
    return at::empty({extent}, options).random_(0, 2, generator);
  }
  // Small integers on both sides of 0: indices in and out of range, loop counts, offsets.
  const int64_t low = dtype == at::kByte ? 0 : -3;
  return at::empty({extent}, options).random_(low, 12, generator);
}

} // namespace

c10::ScalarType pickDtype(FuzzedDataProvider& fdp) {
  return fdp.PickValueInArray({at::kFloat, at::kFloat, at::kFloat, at::kDouble, at::kHalf,
                               at::kBFloat16, at::kLong, at::kInt, at::kShort, at::kChar, at::kByte,
                               at::kBool, at::kComplexFloat});
}

at::Tensor makeTensor(FuzzedDataProvider& fdp, c10::IntArrayRef sizes, c10::ScalarType dtype,
                      Fill& fill, bool allow_special) {
  const size_t itemsize = c10::elementSize(dtype);
  const size_t rank = sizes.size();
  std::vector<int64_t> dims(sizes.begin(), sizes.end());
  std::optional<std::vector<int64_t>> row_major = contiguousStrides(dims);
  if (!row_major) {
    return {};
  }
  std::vector<int64_t> strides = *row_major;
  int64_t offset = 0;
  const Layout layout = fdp.PickValueInArray({Layout::kContiguous, Layout::kContiguous,
                                              Layout::kPermuted, Layout::kSliced, Layout::kExpanded,
                                              Layout::kAsStrided, Layout::kChannelsLast});
  switch (layout) {
  case Layout::kContiguous:
    break;
  case Layout::kPermuted:
  case Layout::kChannelsLast: {
    // The memory order of the dimensions; channels-last is (N, H, W, C) for a rank-4 NCHW tensor.
    std::vector<size_t> order(rank);
    std::iota(order.begin(), order.end(), 0);
    if (layout == Layout::kChannelsLast && rank == 4) {
      order = {0, 2, 3, 1};
    } else {
      for (size_t i = rank; i > 1; --i) {
        std::swap(order[i - 1], order[fdp.ConsumeIntegralInRange<size_t>(0, i - 1)]);
      }
    }
    std::vector<int64_t> permuted(rank);
    for (size_t i = 0; i < rank; ++i) {
      permuted[i] = dims[order[i]];
    }
    std::optional<std::vector<int64_t>> permuted_strides = contiguousStrides(permuted);
    if (!permuted_strides) {
      return {};
    }
    for (size_t i = 0; i < rank; ++i) {
      strides[order[i]] = (*permuted_strides)[i];
    }
    break;
  }
  case Layout::kSliced: {
    // A strided slice of a larger buffer: every dimension stepped, padded, and an offset.
    std::vector<int64_t> big(rank);
    std::vector<int64_t> steps(rank);
    for (size_t i = 0; i < rank; ++i) {
      steps[i] = fdp.ConsumeIntegralInRange<int64_t>(1, 3);
      big[i] = dims[i] * steps[i] + fdp.ConsumeIntegralInRange<int64_t>(0, 2);
    }
    const long double big_numel =
        std::accumulate(big.begin(), big.end(), 1.0L, std::multiplies<long double>());
    if (big_numel * itemsize > kMaxTensorBytes) {
      return {};
    }
    std::optional<std::vector<int64_t>> big_strides = contiguousStrides(big);
    if (!big_strides) {
      return {};
    }
    strides = *big_strides;
    for (size_t i = 0; i < rank; ++i) {
      if (__builtin_mul_overflow(strides[i], steps[i], &strides[i])) {
        return {};
      }
    }
    offset = fdp.ConsumeIntegralInRange<int64_t>(0, 5);
    break;
  }
  case Layout::kExpanded:
    // Broadcast views: some dimensions read the same elements again (stride 0).
    for (size_t i = 0; i < rank; ++i) {
      if (fdp.ConsumeBool()) {
        strides[i] = 0;
      }
    }
    break;
  case Layout::kAsStrided:
    for (size_t i = 0; i < rank; ++i) {
      strides[i] = fdp.ConsumeIntegralInRange<int64_t>(0, 70);
    }
    offset = fdp.ConsumeIntegralInRange<int64_t>(0, 70);
    break;
  }
  const int64_t extent = storageExtent(sizes, strides, offset, itemsize);
  if (extent < 0) {
    return {};
  }
  fill = fdp.PickValueInArray(
      {Fill::kSmall, Fill::kSmall, Fill::kSmall, Fill::kZeros, Fill::kSpecial});
  if (fill == Fill::kSpecial && !allow_special) {
    fill = Fill::kZeros;
  }
  at::Tensor buffer = filledBuffer(fdp, extent, dtype, fill);
  return buffer.as_strided(sizes, strides, offset);
}

c10::IValue cloneExact(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) {
      return tensor;
    }
    at::Tensor source = tensor.detach();
    at::Tensor whole_storage = at::empty({0}, source.options());
    whole_storage.set_(source.storage(), 0,
                       {static_cast<int64_t>(source.storage().nbytes() / source.element_size())},
                       {1});
    at::Tensor copy =
        whole_storage.clone().as_strided(source.sizes(), source.strides(), source.storage_offset());
    return tensor.requires_grad() ? copy.detach().requires_grad_(true) : copy;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const auto& element : value.toTupleRef().elements()) {
      elements.push_back(cloneExact(element));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> copies;
    for (const at::Tensor& tensor : value.toTensorList()) {
      copies.push_back(cloneExact(tensor).toTensor());
    }
    return copies;
  }
  return value.deepcopy();
}


std::string describe(const c10::IValue& value) {
  std::ostringstream out;
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    if (!t.defined()) {
      return "Tensor(undefined)";
    }
    out << "Tensor(" << t.scalar_type() << ", sizes=" << t.sizes() << ", strides=" << t.strides()
        << ", offset=" << t.storage_offset() << (t.requires_grad() ? ", requires_grad" : "") << ")";
  } else if (value.isTuple() || value.isList()) {
    const auto elements =
        value.isTuple() ? value.toTupleRef().elements().vec() : value.toList().vec();
    out << (value.isTuple() ? "Tuple(" : "List(");
    for (size_t i = 0; i < elements.size(); ++i) {
      out << (i ? ", " : "") << describe(elements[i]);
    }
    out << ")";
  } else if (value.isString()) {
    out << "str(" << value.toStringRef().size() << " chars)";
  } else {
    out << value.tagKind() << "(" << value << ")";
  }
  return out.str();
}

void reportFinding(const std::string& what) {
  std::fprintf(stderr, "\n==== FUZZ FINDING ====\n%s\n======================\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

} // namespace srt::fuzz

// Defaults for every run of a fuzzer, however it is started (run.sh passes the same explicitly):
// huge allocations fail as they would on a full machine (c10's allocator then throws) instead of
// aborting the process, and an abort gets a sanitizer report with a stack.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=2048:handle_abort=1:"
         "quarantine_size_mb=64";
}

extern "C" const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}
