// Copy variants of view ops, which passes/copy_variants.cpp and passes/maybe_copy_variants.cpp
// put in place of the views: their results are tensors of their own, written into the node's
// output, so the memory planner can own them (a view's memory is its base's, so a view keeps its
// base alive and cannot be planned itself).
//
//   srt::reshape_copy / flatten_copy / permute_copy   always copy (contiguous result)
//   srt::to_maybe_copy + srt::select_tensor           aten::to: copy only when aten::to would
//   srt::reshape_maybe_copy + srt::select_reshape     aten::reshape: copy only when no view exists
//
// A maybe-copy is two nodes, as in PyTorch's Static Runtime: the first is an ordinary out variant
// that fills its planned output only when a copy is needed and says whether it did; the second,
// a native node whose result may alias either the input or that copy, picks one. The planned
// tensor never becomes a view of anything, so the planner may own it.
#include <ATen/InferSize.h>
#include <ATen/NativeFunctions.h>
#include <ATen/TensorUtils.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/shapes/strided_views.h"

namespace srt::ops {
namespace {

void checkCpu(const ProcessedNode& p, const at::Tensor& self) {
  TORCH_CHECK(self.device().is_cpu(), "static_runtime: ", p.node()->kind().toQualString(),
              " expects a CPU tensor, got one on ", self.device());
}

// Writes `self`'s elements, in row-major order, into the node's output shaped `shape` (same
// number of elements). The output is shaped like `self` while copying, so the copy is one
// element-wise pass with no temporary view (no TensorImpl allocated per run).
void copyReshaped(ProcessedNode& p, const at::Tensor& self, at::IntArrayRef shape) {
  checkCpu(p, self);
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, self.sizes());
  at::native::copy_(out, self, /*non_blocking=*/false);
  out.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
}

// flatten's result shape, with at::native::flatten's rules: a 0-dim input becomes 1-dim.
at::DimVector flattenedShape(const at::Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int64_t rank = self.dim();
  if (rank == 0) {
    return {1};
  }
  start_dim = c10::maybe_wrap_dim(start_dim, rank);
  end_dim = c10::maybe_wrap_dim(end_dim, rank);
  TORCH_CHECK(start_dim <= end_dim,
              "flatten() has invalid args: start_dim cannot come after end_dim");
  at::DimVector shape(self.sizes().begin(), self.sizes().begin() + start_dim);
  int64_t flattened = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) {
    flattened *= self.size(i);
  }
  shape.push_back(flattened);
  shape.append(self.sizes().begin() + end_dim + 1, self.sizes().end());
  return shape;
}

void reshapeCopy(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  copyReshaped(p, self, at::infer_size_dv(p.input(1).toDimVector(), self.numel()));
}

void flattenCopy(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  copyReshaped(p, self, flattenedShape(self, p.input(1).toInt(), p.input(2).toInt()));
}

// The output gets the permuted sizes, contiguous. While copying, its TensorImpl carries the
// input's sizes and the strides that lay them out in permuted order, so copy_ writes each input
// element straight to its final place.
void permuteCopy(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  checkCpu(p, self);
  const at::DimVector dims = p.input(1).toDimVector();
  const int64_t rank = self.dim();
  TORCH_CHECK(static_cast<int64_t>(dims.size()) == rank, "permute: the tensor has ", rank,
              " dimensions but ", dims.size(), " dims were given");
  at::DimVector permuted_sizes(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t dim = c10::maybe_wrap_dim(dims[i], rank);
    TORCH_CHECK(!seen[dim], "permute: repeated dim ", dims[i]);
    seen[dim] = true;
    permuted_sizes[i] = self.size(dim);
  }
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, permuted_sizes);
  const at::DimVector permuted_strides(out.strides().begin(), out.strides().end());
  at::DimVector input_strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    input_strides[c10::maybe_wrap_dim(dims[i], rank)] = permuted_strides[i];
  }
  out.unsafeGetTensorImpl()->set_sizes_and_strides(self.sizes(), input_strides);
  at::native::copy_(out, self, /*non_blocking=*/false);
  out.unsafeGetTensorImpl()->set_sizes_contiguous(permuted_sizes);
}

// srt::to_maybe_copy(self, dtype?, other?, copy): the dtype aten::to converts to is `other`'s
// when given, else `dtype`'s, else self's own.
at::ScalarType targetDtype(const at::Tensor& self, const c10::IValue& dtype,
                           const c10::IValue& other) {
  if (!other.isNone()) {
    const at::Tensor& like = other.toTensor();
    TORCH_CHECK(like.device().is_cpu(), "static_runtime: aten::to expects `other` on the CPU, got ",
                like.device());
    return like.scalar_type();
  }
  return dtype.isNone() ? self.scalar_type() : dtype.toScalarType();
}

// aten::to with memory_format None/preserve returns self itself unless it must convert or was
// asked to copy.
void toMaybeCopy(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  checkCpu(p, self);
  const at::ScalarType dtype = targetDtype(self, p.input(1), p.input(2));
  const bool copy = p.input(3).toBool() || dtype != self.scalar_type();
  p.output(1) = copy;
  if (!copy) {
    return; // output 0 is left as it is: srt::select_tensor ignores it
  }
  at::Tensor& out = outputTensor(p, 0, self.options().dtype(dtype));
  resizePreservingLayout(out, self);
  at::native::copy_(out, self, /*non_blocking=*/false);
}

// reshape copies exactly when no strides give a view of the input with the new shape.
void reshapeMaybeCopy(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector shape = at::infer_size_dv(p.input(1).toDimVector(), self.numel());
  const bool copy = !at::detail::computeStride(self.sizes(), self.strides(), shape).has_value();
  p.output(1) = copy;
  if (copy) {
    copyReshaped(p, self, shape);
  }
}

void selectTensor(ProcessedNode& p) {
  p.output(0) = p.input(2).toBool() ? p.input(1) : p.input(0);
}

void selectReshape(ProcessedNode& p) {
  if (p.input(3).toBool()) {
    p.output(0) = p.input(2);
    return;
  }
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector shape = at::infer_size_dv(p.input(1).toDimVector(), self.numel());
  auto stride = at::detail::computeStride(self.sizes(), self.strides(), shape);
  TORCH_CHECK(stride.has_value(), "static_runtime: srt::select_reshape found no view of a ",
              self.sizes(), " tensor with shape ", at::IntArrayRef(shape),
              " although srt::reshape_maybe_copy did not copy");
  p.output(0) = at::native::_reshape_alias(self, shape, *stride);
}

// What the JIT runs for these ops (the pass tests compare graphs through the JIT): the ATen ops
// they replace, copied where the replaced op would have returned a view.
at::Tensor reshapeCopyReference(const at::Tensor& self, at::IntArrayRef shape) {
  return self.reshape(shape).clone(at::MemoryFormat::Contiguous);
}

at::Tensor flattenCopyReference(const at::Tensor& self, int64_t start_dim, int64_t end_dim) {
  return self.flatten(start_dim, end_dim).clone(at::MemoryFormat::Contiguous);
}

at::Tensor permuteCopyReference(const at::Tensor& self, at::IntArrayRef dims) {
  return self.permute(dims).clone(at::MemoryFormat::Contiguous);
}

std::tuple<at::Tensor, bool> toMaybeCopyReference(const at::Tensor& self,
                                                  c10::optional<at::ScalarType> dtype,
                                                  const c10::optional<at::Tensor>& other,
                                                  bool copy) {
  const at::ScalarType target =
      other.has_value() ? other->scalar_type() : dtype.value_or(self.scalar_type());
  if (!copy && target == self.scalar_type()) {
    return {at::Tensor(), false};
  }
  return {self.to(target, /*non_blocking=*/false, /*copy=*/true), true};
}

std::tuple<at::Tensor, bool> reshapeMaybeCopyReference(const at::Tensor& self,
                                                       at::IntArrayRef shape) {
  at::Tensor result = self.reshape(shape);
  if (result.is_alias_of(self)) {
    return {at::Tensor(), false};
  }
  return {result, true};
}

at::Tensor selectTensorReference(const at::Tensor& a, const at::Tensor& b, bool use_b) {
  return use_b ? b : a;
}

at::Tensor selectReshapeReference(const at::Tensor& self, at::IntArrayRef shape,
                                  const at::Tensor& copy, bool use_copy) {
  return use_copy ? copy : self.view(shape);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  // Outputs are new tensors (no alias annotation): the input's lifetime ends where its last
  // reader runs, not where the copy's readers do.
  m.def(torch::schema("srt::reshape_copy(Tensor self, int[] shape) -> Tensor",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        reshapeCopyReference);
  m.def(torch::schema("srt::flatten_copy(Tensor self, int start_dim=0, int end_dim=-1) -> Tensor",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        flattenCopyReference);
  m.def(torch::schema("srt::permute_copy(Tensor self, int[] dims) -> Tensor",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        permuteCopyReference);
  m.def(torch::schema("srt::to_maybe_copy(Tensor self, ScalarType? dtype, Tensor? other, bool "
                      "copy) -> (Tensor, bool)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        toMaybeCopyReference);
  m.def(torch::schema("srt::reshape_maybe_copy(Tensor self, int[] shape) -> (Tensor, bool)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        reshapeMaybeCopyReference);
  // The result is one of the inputs (or a view of `self`): it may alias either.
  m.def(torch::schema("srt::select_tensor(Tensor(a) a, Tensor(b) b, bool use_b) -> Tensor(a|b)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        selectTensorReference);
  m.def(torch::schema("srt::select_reshape(Tensor(a) self, int[] shape, Tensor(b) copy, bool "
                      "use_copy) -> Tensor(a|b)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        selectReshapeReference);
}

SRT_REGISTER_KERNEL("srt::reshape_copy", kOutVariant, always(reshapeCopy));
SRT_REGISTER_KERNEL("srt::flatten_copy", kOutVariant, always(flattenCopy));
SRT_REGISTER_KERNEL("srt::permute_copy", kOutVariant, always(permuteCopy));
SRT_REGISTER_KERNEL("srt::to_maybe_copy", kOutVariant, always(toMaybeCopy));
SRT_REGISTER_KERNEL("srt::reshape_maybe_copy", kOutVariant, always(reshapeMaybeCopy));
SRT_REGISTER_KERNEL("srt::select_tensor", kNative, always(selectTensor));
SRT_REGISTER_KERNEL("srt::select_reshape", kNative, always(selectReshape));

} // namespace srt::ops
