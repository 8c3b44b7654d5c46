// Views built straight from sizes, strides and a storage offset, following ATen's rules for each
// op but without its detour through the dispatcher: at::native::permute, transpose, select,
// slice, squeeze, unsqueeze, expand, unfold and split all end in `self.as_strided(...)`, a
// dispatched call that costs 3-5x the view itself (1.2 us vs 0.24 us for a 4-d permute on this
// machine).
//
// The results share the input's storage and carry no autograd view metadata: they are for
// inference, as everything the runtime runs.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace srt::ops::views {

at::Tensor permute(const at::Tensor& self, at::IntArrayRef dims);
at::Tensor transpose(const at::Tensor& self, int64_t dim0, int64_t dim1);
// t(): transpose of a tensor with at most 2 dimensions.
at::Tensor t(const at::Tensor& self);
at::Tensor select(const at::Tensor& self, int64_t dim, int64_t index);
at::Tensor slice(const at::Tensor& self, int64_t dim, c10::optional<int64_t> start,
                 c10::optional<int64_t> end, int64_t step);
at::Tensor narrow(const at::Tensor& self, int64_t dim, int64_t start, int64_t length);
// All size-1 dimensions removed.
at::Tensor squeeze(const at::Tensor& self);
at::Tensor squeeze(const at::Tensor& self, int64_t dim);
at::Tensor unsqueeze(const at::Tensor& self, int64_t dim);
at::Tensor expand(const at::Tensor& self, at::IntArrayRef size);
// Tensor.unfold: windows of `size` every `step` along `dim`, as a new last dimension.
at::Tensor unfold(const at::Tensor& self, int64_t dim, int64_t size, int64_t step);

std::vector<at::Tensor> split(const at::Tensor& self, int64_t split_size, int64_t dim);
std::vector<at::Tensor> splitWithSizes(const at::Tensor& self, at::IntArrayRef split_sizes,
                                       int64_t dim);
std::vector<at::Tensor> chunk(const at::Tensor& self, int64_t chunks, int64_t dim);
std::vector<at::Tensor> unbind(const at::Tensor& self, int64_t dim);
// torch.tensor_split: `sections` pieces whose sizes differ by at most one (the larger first), or
// the pieces between `indices` (slice bounds: clamped, negative from the end).
std::vector<at::Tensor> tensorSplit(const at::Tensor& self, int64_t sections, int64_t dim);
std::vector<at::Tensor> tensorSplit(const at::Tensor& self, at::IntArrayRef indices, int64_t dim);

} // namespace srt::ops::views
