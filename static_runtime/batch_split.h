// Running a batch as slices along dim 0, one per intra-op thread, when the module's graph treats
// every item on its own (passes/batch_independence.h): each slice runs on a runtime of its own
// with one thread, so no node waits on another thread, and the slices' results are joined.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

#include "passes/batch_independence.h"

namespace srt {

// The batch size of bound inputs when they can run as slices: every batched input is a tensor
// with the rank the analysis requires and the same size along dim 0. std::nullopt otherwise
// (then the whole batch runs as one, and reports any error in the caller's terms).
std::optional<int64_t> splittableBatch(const passes::BatchIndependence& independence,
                                       const std::vector<c10::IValue>& inputs);

// Items [begin, begin + length) of every batched input (views, no copy); other inputs as they are.
std::vector<c10::IValue> sliceInputs(const passes::BatchIndependence& independence,
                                     const std::vector<c10::IValue>& inputs, int64_t begin,
                                     int64_t length);

// Slice `slice` of `slices` near-equal slices of `batch` items: {begin, length}.
std::pair<int64_t, int64_t> sliceBounds(int64_t batch, int64_t slices, int64_t slice);

// The slices' results as the whole batch's: tensors joined along dim 0, tuples element by element,
// None as None.
c10::IValue joinSlices(const std::vector<c10::IValue>& parts);

} // namespace srt
