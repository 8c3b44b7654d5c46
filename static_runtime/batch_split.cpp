#include "static_runtime/batch_split.h"

#include <algorithm>

#include <ATen/ATen.h>

namespace srt {

std::optional<int64_t> splittableBatch(const passes::BatchIndependence& independence,
                                       const std::vector<c10::IValue>& inputs) {
  if (!independence.independent) {
    return std::nullopt;
  }
  std::optional<int64_t> batch;
  for (size_t i = 0; i < independence.batched_inputs.size(); ++i) {
    const c10::IValue& input = inputs[independence.batched_inputs[i]];
    if (!input.isTensor()) {
      return std::nullopt;
    }
    const at::Tensor& tensor = input.toTensor();
    const int64_t required_rank = independence.required_ranks[i];
    if (tensor.dim() == 0 || (required_rank >= 0 && tensor.dim() != required_rank) ||
        (batch && tensor.size(0) != *batch)) {
      return std::nullopt;
    }
    batch = tensor.size(0);
  }
  return batch;
}

std::vector<c10::IValue> sliceInputs(const passes::BatchIndependence& independence,
                                     const std::vector<c10::IValue>& inputs, int64_t begin,
                                     int64_t length) {
  std::vector<c10::IValue> slice = inputs;
  for (const size_t index : independence.batched_inputs) {
    slice[index] = inputs[index].toTensor().narrow(0, begin, length);
  }
  return slice;
}

std::pair<int64_t, int64_t> sliceBounds(int64_t batch, int64_t slices, int64_t slice) {
  const int64_t base = batch / slices;
  const int64_t extra = batch % slices;
  // The first `extra` slices take one item more.
  const int64_t begin = slice * base + std::min(slice, extra);
  return {begin, base + (slice < extra ? 1 : 0)};
}

c10::IValue joinSlices(const std::vector<c10::IValue>& parts) {
  const c10::IValue& first = parts.front();
  if (first.isTensor()) {
    std::vector<at::Tensor> tensors;
    tensors.reserve(parts.size());
    for (const c10::IValue& part : parts) {
      tensors.push_back(part.toTensor());
    }
    return at::cat(tensors, 0);
  }
  if (first.isTuple()) {
    const size_t arity = first.toTupleRef().elements().size();
    std::vector<c10::IValue> elements;
    elements.reserve(arity);
    for (size_t e = 0; e < arity; ++e) {
      std::vector<c10::IValue> element_parts;
      element_parts.reserve(parts.size());
      for (const c10::IValue& part : parts) {
        element_parts.push_back(part.toTupleRef().elements()[e]);
      }
      elements.push_back(joinSlices(element_parts));
    }
    // Keeps a NamedTuple's names (torchvision's GoogLeNetOutputs).
    return c10::ivalue::Tuple::createNamed(std::move(elements), first.toTupleRef().type());
  }
  TORCH_INTERNAL_ASSERT(first.isNone(), "joinSlices: a slice returned a ", first.tagKind(),
                        ", which the batch-independence analysis admits no output as");
  return first;
}

} // namespace srt
