// Helpers for out-variant kernels: write into the tensor the node produced last run.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/resize_native.h>
#include <c10/core/CPUAllocator.h>

#include "ops/core/processed_node.h"

namespace srt::ops {

// True when nothing but the value table holds `tensor` or its memory. Inside a prim::Loop body,
// last iteration's output can be this iteration's input (`x = f(x)`) or sit in a list the body
// appends to: writing into it would destroy a value still in use.
inline bool isUniquelyOwned(const at::Tensor& tensor) {
  return tensor.use_count() == 1 && tensor.storage().use_count() == 1;
}

// An empty CPU tensor whose storage has no memory yet: at::empty({0}) would still ask the
// allocator for zero bytes, one more allocation per fresh output before the *_out call sizes it.
inline at::Tensor unallocatedTensor(const at::TensorOptions& options) {
  TORCH_CHECK(options.device().is_cpu(), "out-variant kernels allocate on the CPU only");
  auto storage = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), /*size_bytes=*/0, c10::DataPtr(nullptr, c10::kCPU),
      c10::GetCPUAllocator(), /*resizable=*/true);
  return at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), options.dtype());
}

// The node's output `i` ready to be written by an ATen `*_out` call: last run's tensor when it
// has the wanted dtype and nothing else holds it (emptied to zero elements without freeing its
// storage, so the call resizes it and reuses the memory when it fits), else a new empty tensor
// with `options`.
// The output IValue holds the tensor, so nothing is left to assign afterwards.
inline at::Tensor& outputTensor(ProcessedNode& p, size_t i, const at::TensorOptions& options) {
  c10::IValue& slot = p.output(i);
  if (slot.isTensor()) {
    at::Tensor& tensor = slot.toTensor();
    if (tensor.dtype() == options.dtype() && tensor.device() == options.device() &&
        isUniquelyOwned(tensor)) {
      // Zero elements first: resizing a non-empty out tensor to another shape is a warning.
      tensor.unsafeGetTensorImpl()->set_sizes_contiguous({0});
      return tensor;
    }
  }
  slot = unallocatedTensor(options);
  return slot.toTensor();
}

// outputTensor with the options (dtype, device) of `like`.
inline at::Tensor& outputTensorLike(ProcessedNode& p, size_t i, const at::Tensor& like) {
  return outputTensor(p, i, like.options());
}

// A reference path's fresh `result` copied into the node's output 0, whose memory the planner
// keeps owning (contiguous, as the reference's results are).
inline void copyIntoOutput(ProcessedNode& p, const at::Tensor& result) {
  at::Tensor& out = outputTensorLike(p, 0, result);
  at::native::resize_(out, result.sizes());
  out.copy_(result);
}

// Sizes `out` like `self` the way memory_format=preserve lays out a copy (aten::to, clone,
// empty_like): with `self`'s strides when it is dense and non-overlapping (a transposed or
// channels-last input keeps its layout, which decides how later kernels read it and, for reduced
// precision, what they compute), else in `self`'s suggested memory format.
inline void resizePreservingLayout(at::Tensor& out, const at::Tensor& self) {
  if (self.is_non_overlapping_and_dense()) {
    at::native::resize_(out, self.sizes()); // the same number of bytes as any dense layout
    out.unsafeGetTensorImpl()->set_sizes_and_strides(self.sizes(), self.strides());
  } else {
    at::native::resize_(out, self.sizes(), self.suggest_memory_format());
  }
}

} // namespace srt::ops
