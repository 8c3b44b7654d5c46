#include "ops/shapes/strided_views.h"

#include <ATen/ExpandUtils.h>
#include <ATen/NativeFunctions.h>
#include <c10/core/WrapDimMinimal.h>

namespace srt::ops::views {
namespace {

// The TensorImpl of a view: ATen's as_strided CPU kernel (bounds-checked against the storage).
at::Tensor restride(const at::Tensor& self, at::IntArrayRef sizes, at::IntArrayRef strides,
                    int64_t storage_offset) {
  return at::native::as_strided_tensorimpl(self, sizes, strides, storage_offset);
}

at::Tensor restride(const at::Tensor& self, at::IntArrayRef sizes, at::IntArrayRef strides) {
  return restride(self, sizes, strides, self.storage_offset());
}

int64_t wrapDim(int64_t dim, int64_t rank) {
  return c10::maybe_wrap_dim(dim, rank, /*wrap_scalar=*/true);
}

} // namespace

at::Tensor permute(const at::Tensor& self, at::IntArrayRef dims) {
  const int64_t rank = self.dim();
  TORCH_CHECK(static_cast<int64_t>(dims.size()) == rank, "number of dims don't match in permute");
  at::DimVector sizes(rank);
  at::DimVector strides(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t dim = wrapDim(dims[i], rank);
    TORCH_CHECK(!seen[dim], "repeated dim in permute");
    seen[dim] = true;
    sizes[i] = self.size(dim);
    strides[i] = self.stride(dim);
  }
  return restride(self, sizes, strides);
}

at::Tensor transpose(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t rank = self.dim();
  dim0 = wrapDim(dim0, rank);
  dim1 = wrapDim(dim1, rank);
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  at::DimVector strides(self.strides().begin(), self.strides().end());
  if (rank > 0) {
    std::swap(sizes[dim0], sizes[dim1]);
    std::swap(strides[dim0], strides[dim1]);
  }
  return restride(self, sizes, strides);
}

at::Tensor t(const at::Tensor& self) {
  TORCH_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ",
              self.dim(), "D");
  return self.dim() < 2 ? restride(self, self.sizes(), self.strides())
                        : views::transpose(self, 0, 1);
}

at::Tensor select(const at::Tensor& self, int64_t dim, int64_t index) {
  const int64_t rank = self.dim();
  TORCH_CHECK_INDEX(rank > 0, "select() cannot be applied to a 0-dim tensor.");
  dim = wrapDim(dim, rank);
  const int64_t size = self.size(dim);
  TORCH_CHECK_INDEX(index >= -size && index < size, "select(): index ", index,
                    " out of range for tensor of size ", self.sizes(), " at dimension ", dim);
  if (index < 0) {
    index += size;
  }
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  at::DimVector strides(self.strides().begin(), self.strides().end());
  const int64_t offset = self.storage_offset() + index * strides[dim];
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return restride(self, sizes, strides, offset);
}

// ATen's slice: bounds clamp into [0, size], a negative step is an error.
at::Tensor slice(const at::Tensor& self, int64_t dim, c10::optional<int64_t> start,
                 c10::optional<int64_t> end, int64_t step) {
  const int64_t rank = self.dim();
  TORCH_CHECK(rank > 0, "slice() cannot be applied to a 0-dim tensor.");
  TORCH_CHECK(step > 0, "slice step must be positive");
  dim = wrapDim(dim, rank);
  const int64_t size = self.size(dim);
  int64_t begin = start.value_or(0);
  int64_t stop = end.value_or(INT64_MAX);
  if (begin < 0) {
    begin += size;
  }
  if (stop < 0) {
    stop += size;
  }
  begin = std::min(std::max<int64_t>(begin, 0), size);
  stop = std::min(std::max(stop, begin), size);
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  at::DimVector strides(self.strides().begin(), self.strides().end());
  const int64_t offset = self.storage_offset() + begin * strides[dim];
  sizes[dim] = (stop - begin + step - 1) / step;
  strides[dim] *= step;
  return restride(self, sizes, strides, offset);
}

// ATen's unfold, including its 0-dim case (the window dimension only).
at::Tensor unfold(const at::Tensor& self, int64_t dim, int64_t size, int64_t step) {
  const int64_t rank = self.dim();
  dim = wrapDim(dim, rank);
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  at::DimVector strides(self.strides().begin(), self.strides().end());
  const int64_t max_size = rank == 0 ? 1 : sizes[dim];
  TORCH_CHECK(size <= max_size, "maximum size for tensor at dimension ", dim, " is ", max_size,
              " but size is ", size);
  TORCH_CHECK(step > 0, "step is ", step, " but must be > 0");
  sizes.push_back(size);
  strides.push_back(rank == 0 ? 1 : strides[dim]);
  if (dim < rank) {
    sizes[dim] = (sizes[dim] - size) / step + 1;
    strides[dim] *= step;
  }
  return restride(self, sizes, strides);
}

at::Tensor narrow(const at::Tensor& self, int64_t dim, int64_t start, int64_t length) {
  TORCH_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  dim = wrapDim(dim, self.dim());
  const int64_t size = self.size(dim);
  TORCH_CHECK(start >= -size && start <= size, "start out of range (expected to be in range of [",
              -size, ", ", size, "], but got ", start, ")");
  if (start < 0) {
    start += size;
  }
  TORCH_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  return views::slice(self, dim, start, start + length, 1);
}

at::Tensor squeeze(const at::Tensor& self) {
  at::DimVector sizes;
  at::DimVector strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.size(d) != 1) {
      sizes.push_back(self.size(d));
      strides.push_back(self.stride(d));
    }
  }
  return restride(self, sizes, strides);
}

at::Tensor squeeze(const at::Tensor& self, int64_t dim) {
  const int64_t rank = self.dim();
  dim = wrapDim(dim, rank);
  if (rank == 0 || self.size(dim) != 1) {
    return restride(self, self.sizes(), self.strides());
  }
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  at::DimVector strides(self.strides().begin(), self.strides().end());
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return restride(self, sizes, strides);
}

at::Tensor unsqueeze(const at::Tensor& self, int64_t dim) {
  const int64_t rank = self.dim();
  dim = wrapDim(dim, rank + 1);
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  at::DimVector strides(self.strides().begin(), self.strides().end());
  const int64_t stride = dim >= rank ? 1 : sizes[dim] * strides[dim];
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return restride(self, sizes, strides);
}

at::Tensor expand(const at::Tensor& self, at::IntArrayRef size) {
  TORCH_CHECK(static_cast<int64_t>(size.size()) >= self.dim(), "expand(", self.toString(), "{",
              self.sizes(), "}, size=", size, "): the number of sizes provided (", size.size(),
              ") must be greater or equal to the number of dimensions in the tensor (", self.dim(),
              ")");
  auto geometry = at::inferExpandGeometry_dimvector(self.sizes(), self.strides(), size);
  return restride(self, geometry.sizes, geometry.strides);
}

std::vector<at::Tensor> split(const at::Tensor& self, int64_t split_size, int64_t dim) {
  TORCH_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  TORCH_CHECK(split_size >= 0,
              "split expects split_size be non-negative, but got split_size=", split_size);
  dim = wrapDim(dim, self.dim());
  const int64_t size = self.size(dim);
  TORCH_CHECK(split_size > 0 || size == 0,
              "split_size can only be 0 if dimension size is 0, but got dimension size of ", size);
  // A zero split_size of an empty dimension is one (empty) split.
  const int64_t num_splits =
      split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  const int64_t last_split_size = split_size - (split_size * num_splits - size);
  std::vector<at::Tensor> splits;
  splits.reserve(num_splits);
  for (int64_t i = 0; i < num_splits; ++i) {
    const int64_t length = i < num_splits - 1 ? split_size : last_split_size;
    splits.push_back(views::narrow(self, dim, i * split_size, length));
  }
  return splits;
}

std::vector<at::Tensor> splitWithSizes(const at::Tensor& self, at::IntArrayRef split_sizes,
                                       int64_t dim) {
  TORCH_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  dim = wrapDim(dim, self.dim());
  const int64_t size = self.size(dim);
  std::vector<at::Tensor> splits;
  splits.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t length : split_sizes) {
    TORCH_CHECK(length >= 0, "split_with_sizes expects split_sizes have only non-negative ",
                "entries, but got split_sizes=", split_sizes);
    splits.push_back(views::narrow(self, dim, start, length));
    start += length;
  }
  TORCH_CHECK(start == size, "split_with_sizes expects split_sizes to sum exactly to ", size,
              " (input tensor's size at dimension ", dim, "), ",
              "but got split_sizes=", split_sizes);
  return splits;
}

// ATen's chunk: split into ceil(size / chunks) pieces, except that an empty dimension still
// gives `chunks` (empty) pieces.
std::vector<at::Tensor> chunk(const at::Tensor& self, int64_t chunks, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  TORCH_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  dim = wrapDim(dim, self.dim());
  const int64_t size = self.size(dim);
  const int64_t split_size = (size + chunks - 1) / chunks;
  if (split_size == 0 && size == 0) {
    std::vector<int64_t> split_sizes(chunks, 0);
    return views::splitWithSizes(self, split_sizes, dim);
  }
  return views::split(self, split_size, dim);
}

std::vector<at::Tensor> unbind(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  dim = wrapDim(dim, self.dim());
  const int64_t size = self.size(dim);
  std::vector<at::Tensor> slices;
  slices.reserve(size);
  for (int64_t i = 0; i < size; ++i) {
    slices.push_back(views::select(self, dim, i));
  }
  return slices;
}

std::vector<at::Tensor> tensorSplit(const at::Tensor& self, int64_t sections, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a "
                              "tensor with 0 dims");
  TORCH_CHECK(sections > 0, "number of sections must be larger than 0, got ", sections);
  dim = wrapDim(dim, self.dim());
  const int64_t smaller = self.size(dim) / sections;
  const int64_t with_one_more = self.size(dim) % sections;
  std::vector<at::Tensor> pieces;
  pieces.reserve(sections);
  int64_t start = 0;
  for (int64_t i = 0; i < sections; ++i) {
    const int64_t size = i < with_one_more ? smaller + 1 : smaller;
    pieces.push_back(views::slice(self, dim, start, start + size, 1));
    start += size;
  }
  return pieces;
}

std::vector<at::Tensor> tensorSplit(const at::Tensor& self, at::IntArrayRef indices, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a "
                              "tensor with 0 dims");
  dim = wrapDim(dim, self.dim());
  std::vector<at::Tensor> pieces;
  pieces.reserve(indices.size() + 1);
  int64_t start = 0;
  for (const int64_t end : indices) {
    pieces.push_back(views::slice(self, dim, start, end, 1));
    start = end;
  }
  pieces.push_back(views::slice(self, dim, start, self.size(dim), 1));
  return pieces;
}

} // namespace srt::ops::views
