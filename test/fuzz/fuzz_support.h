// What both fuzz harnesses share: bounded tensors from fuzz bytes, result comparison, reporting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>
#include <fuzzer/FuzzedDataProvider.h>

namespace srt::fuzz {

// The largest storage one fuzzed tensor may have: big enough for "huge" inputs, small enough that
// a run of them stays far below libFuzzer's RSS limit.
constexpr size_t kMaxTensorBytes = size_t{64} << 20;

// How a fuzzed tensor's values are chosen.
enum class Fill { kSmall, kZeros, kSpecial };

// A tensor of logical `sizes` and `dtype` whose memory layout the fuzzer picks: contiguous,
// permuted, a strided slice of a larger buffer (storage offset), expanded (stride 0), arbitrary
// as_strided strides (overlapping elements) or channels-last. Returns an undefined tensor when
// the storage it needs would exceed kMaxTensorBytes. `fill` says how values were chosen; special
// values (NaN, Inf, extremes) only when `allow_special`.
at::Tensor makeTensor(FuzzedDataProvider& fdp, c10::IntArrayRef sizes, c10::ScalarType dtype,
                      Fill& fill, bool allow_special = true);

c10::ScalarType pickDtype(FuzzedDataProvider& fdp);

// A deep copy that keeps every tensor's exact layout (sizes, strides, storage offset, overlap);
// IValue::deepcopy and Tensor::clone make non-dense tensors contiguous.
c10::IValue cloneExact(const c10::IValue& value);

// One line per value: type, and for tensors dtype, sizes, strides, storage offset.
std::string describe(const c10::IValue& value);

// Prints `what` (a property that does not hold) to stderr and aborts, so libFuzzer records the
// input as a crash.
[[noreturn]] void reportFinding(const std::string& what);

} // namespace srt::fuzz
