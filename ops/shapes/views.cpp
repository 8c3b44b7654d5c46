// View ops: outputs share the input's storage, so each kernel only builds a TensorImpl, with no
// dispatcher on the way: at::native::view / _reshape_alias / detach directly, and the views of
// ops/shapes/strided_views.h for the ops whose at::native function would re-dispatch to as_strided.
// Native outputs are dropped after every run (build_program.cpp), so a view never keeps last
// run's input alive.
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/InferSize.h>
#include <ATen/NativeFunctions.h>
#include <ATen/TensorUtils.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/shapes/strided_views.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

const at::Tensor& self(const ProcessedNode& p) {
  return p.input(0).toTensor();
}

// viewOrCopy is reshape: a view when the strides allow one, else a contiguous copy, as
// at::native::reshape (not exported by LibTorch 1.13) does. The copy is a fresh tensor every run: a
// native kernel's output may be the caller's, so it cannot be reused.
at::Tensor viewOrCopy(const at::Tensor& input, at::IntArrayRef proposed) {
  const at::DimVector shape = at::infer_size_dv(proposed, input.numel());
  if (auto stride = at::detail::computeStride(input.sizes(), input.strides(), shape)) {
    return at::native::_reshape_alias(input, shape, *stride);
  }
  at::Tensor copy = at::empty(shape, input.options());
  at::Tensor as_input = at::native::view(copy, input.sizes());
  at::native::copy_(as_input, input, /*non_blocking=*/false);
  return copy;
}

// flattenDims is flatten.using_ints, with at::native::flatten's rules (a 0-dim input becomes 1-dim;
// start == end returns the input itself) but through viewOrCopy.
at::Tensor flattenDims(const at::Tensor& input, int64_t start_dim, int64_t end_dim) {
  const int64_t rank = input.dim();
  start_dim = c10::maybe_wrap_dim(start_dim, rank);
  end_dim = c10::maybe_wrap_dim(end_dim, rank);
  TORCH_CHECK(start_dim <= end_dim,
              "flatten() has invalid args: start_dim cannot come after end_dim");
  if (rank == 0) {
    return viewOrCopy(input, {1});
  }
  if (start_dim == end_dim) {
    return input;
  }
  at::DimVector shape;
  shape.reserve(rank - end_dim + start_dim);
  for (int64_t i = 0; i < start_dim; ++i) {
    shape.push_back(input.size(i));
  }
  int64_t flattened = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) {
    flattened *= input.size(i);
  }
  shape.push_back(flattened);
  for (int64_t i = end_dim + 1; i < rank; ++i) {
    shape.push_back(input.size(i));
  }
  return viewOrCopy(input, shape);
}

// unflatten is at::native::unflatten without names: dimension `dim` split into `sizes` (one of them
// may be -1) as a view, which fails as view() does where the strides allow none.
at::Tensor unflattenDim(const at::Tensor& input, int64_t dim, at::IntArrayRef sizes) {
  dim = c10::maybe_wrap_dim(dim, input.dim());
  TORCH_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  const at::DimVector inferred = at::infer_size_dv(sizes, input.size(dim));
  at::DimVector shape(input.sizes().begin(), input.sizes().end());
  shape.erase(shape.begin() + dim);
  shape.insert(shape.begin() + dim, inferred.begin(), inferred.end());
  return at::native::view(input, shape);
}

// broadcast_tensors is at::expand_outplace: every tensor expanded to the common shape, a tensor
// already of that shape passed on as it is.
std::vector<at::Tensor> broadcastTensors(const std::vector<at::Tensor>& tensors) {
  at::DimVector shape;
  for (size_t i = 0; i < tensors.size(); ++i) {
    shape = i == 0 ? at::DimVector(tensors[i].sizes().begin(), tensors[i].sizes().end())
                   : at::infer_size_dimvector(shape, tensors[i].sizes());
  }
  std::vector<at::Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    expanded.push_back(tensor.sizes().equals(shape) ? tensor : views::expand(tensor, shape));
  }
  return expanded;
}

// x.T: every dimension reversed, as ATen does (without its once-per-process deprecation warning
// for ranks other than 0 and 2).
at::Tensor reversedDims(const at::Tensor& input) {
  at::DimVector order(input.dim());
  for (int64_t i = 0; i < input.dim(); ++i) {
    order[i] = input.dim() - 1 - i;
  }
  return views::permute(input, order);
}

c10::optional<int64_t> optionalInt(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<int64_t>(value.toInt());
}

} // namespace

SRT_REGISTER_KERNEL("aten::view", kNative,
                    whenMatches("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
                                [](ProcessedNode& p) {
                                  p.output(0) = at::native::view(self(p), p.input(1).toDimVector());
                                }));
SRT_REGISTER_KERNEL("aten::view_as", kNative, always([](ProcessedNode& p) {
                      p.output(0) = at::native::view(self(p), p.input(1).toTensor().sizes());
                    }));
SRT_REGISTER_KERNEL("aten::reshape", kNative, always([](ProcessedNode& p) {
                      p.output(0) = viewOrCopy(self(p), p.input(1).toDimVector());
                    }));
SRT_REGISTER_KERNEL("aten::reshape_as", kNative, always([](ProcessedNode& p) {
                      p.output(0) = viewOrCopy(self(p), p.input(1).toTensor().sizes());
                    }));
SRT_REGISTER_KERNEL(
    "aten::flatten", kNative,
    whenMatches(
        "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
        [](ProcessedNode& p) {
          p.output(0) = flattenDims(self(p), p.input(1).toInt(), p.input(2).toInt());
        }));
SRT_REGISTER_KERNEL(
    "aten::unflatten", kNative,
    whenMatches("aten::unflatten.int(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) = unflattenDim(self(p), p.input(1).toInt(), p.input(2).toDimVector());
                }));
SRT_REGISTER_KERNEL("aten::broadcast_tensors", kNative, always([](ProcessedNode& p) {
                      p.output(0) = broadcastTensors(p.input(0).toTensorVector());
                    }));
SRT_REGISTER_KERNEL("aten::numpy_T", kNative,
                    always([](ProcessedNode& p) { p.output(0) = reversedDims(self(p)); }));
// movedim, diagonal and meshgrid: ATen's own functions (their argument checks and errors), which
// build the views through the dispatcher.
SRT_REGISTER_KERNEL(
    "aten::movedim", kNative,
    whenMatches("aten::movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) =
                      at::native::movedim(self(p), p.input(1).toInt(), p.input(2).toInt());
                }));
SRT_REGISTER_KERNEL(
    "aten::movedim", kNative,
    whenMatches(
        "aten::movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
        [](ProcessedNode& p) {
          p.output(0) =
              at::native::movedim(self(p), p.input(1).toDimVector(), p.input(2).toDimVector());
        }));
SRT_REGISTER_KERNEL(
    "aten::diagonal", kNative,
    whenMatches("aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) = at::native::diagonal(self(p), p.input(1).toInt(),
                                                     p.input(2).toInt(), p.input(3).toInt());
                }));
SRT_REGISTER_KERNEL("aten::meshgrid", kNative,
                    whenMatches("aten::meshgrid(Tensor[] tensors) -> Tensor[]",
                                [](ProcessedNode& p) {
                                  p.output(0) = at::native::meshgrid(p.input(0).toTensorVector());
                                }));
SRT_REGISTER_KERNEL(
    "aten::meshgrid", kNative,
    whenMatches("aten::meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]",
                [](ProcessedNode& p) {
                  p.output(0) =
                      at::native::meshgrid(p.input(0).toTensorVector(), p.input(1).toStringView());
                }));
SRT_REGISTER_KERNEL("aten::permute", kNative, always([](ProcessedNode& p) {
                      p.output(0) = views::permute(self(p), p.input(1).toDimVector());
                    }));
SRT_REGISTER_KERNEL(
    "aten::transpose", kNative,
    whenMatches("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) = views::transpose(self(p), p.input(1).toInt(), p.input(2).toInt());
                }));
SRT_REGISTER_KERNEL("aten::t", kNative,
                    always([](ProcessedNode& p) { p.output(0) = views::t(self(p)); }));
SRT_REGISTER_KERNEL("aten::squeeze", kNative,
                    whenMatches("aten::squeeze(Tensor(a) self) -> Tensor(a)",
                                [](ProcessedNode& p) { p.output(0) = views::squeeze(self(p)); }));
SRT_REGISTER_KERNEL("aten::squeeze", kNative,
                    whenMatches("aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
                                [](ProcessedNode& p) {
                                  p.output(0) = views::squeeze(self(p), p.input(1).toInt());
                                }));
SRT_REGISTER_KERNEL("aten::unsqueeze", kNative, always([](ProcessedNode& p) {
                      p.output(0) = views::unsqueeze(self(p), p.input(1).toInt());
                    }));
SRT_REGISTER_KERNEL("aten::expand", kNative, always([](ProcessedNode& p) {
                      p.output(0) = views::expand(self(p), p.input(1).toDimVector());
                    }));
SRT_REGISTER_KERNEL("aten::expand_as", kNative, always([](ProcessedNode& p) {
                      p.output(0) = views::expand(self(p), p.input(1).toTensor().sizes());
                    }));
SRT_REGISTER_KERNEL(
    "aten::narrow", kNative,
    whenMatches("aten::narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) = views::narrow(self(p), p.input(1).toInt(), p.input(2).toInt(),
                                              p.input(3).toInt());
                }));
SRT_REGISTER_KERNEL(
    "aten::unfold", kNative,
    whenMatches("aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) = views::unfold(self(p), p.input(1).toInt(), p.input(2).toInt(),
                                              p.input(3).toInt());
                }));
SRT_REGISTER_KERNEL(
    "aten::slice", kNative,
    whenMatches("aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? "
                "end=None, SymInt step=1) -> Tensor(a)",
                [](ProcessedNode& p) {
                  p.output(0) = views::slice(self(p), p.input(1).toInt(), optionalInt(p.input(2)),
                                             optionalInt(p.input(3)), p.input(4).toInt());
                }));
SRT_REGISTER_KERNEL("aten::select", kNative,
                    whenMatches("aten::select.int(Tensor(a) self, int dim, int index) -> Tensor(a)",
                                [](ProcessedNode& p) {
                                  p.output(0) = views::select(self(p), p.input(1).toInt(),
                                                              p.input(2).toInt());
                                }));
SRT_REGISTER_KERNEL("aten::chunk", kNative, always([](ProcessedNode& p) {
                      p.output(0) = views::chunk(self(p), p.input(1).toInt(), p.input(2).toInt());
                    }));
SRT_REGISTER_KERNEL(
    "aten::split", kNative,
    whenMatches("aten::split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]",
                [](ProcessedNode& p) {
                  p.output(0) = views::split(self(p), p.input(1).toInt(), p.input(2).toInt());
                }));
SRT_REGISTER_KERNEL(
    "aten::split", kNative,
    whenMatches(
        "aten::split.sizes(Tensor(a -> *) self, int[] split_size, int dim=0) -> Tensor(a)[]",
        [](ProcessedNode& p) {
          p.output(0) =
              views::splitWithSizes(self(p), p.input(1).toDimVector(), p.input(2).toInt());
        }));
SRT_REGISTER_KERNEL(
    "aten::split", kNative,
    whenMatches("aten::split(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]",
                [](ProcessedNode& p) {
                  p.output(0) =
                      views::splitWithSizes(self(p), p.input(1).toDimVector(), p.input(2).toInt());
                }));
SRT_REGISTER_KERNEL("aten::split_with_sizes", kNative, always([](ProcessedNode& p) {
                      p.output(0) = views::splitWithSizes(self(p), p.input(1).toDimVector(),
                                                          p.input(2).toInt());
                    }));
SRT_REGISTER_KERNEL(
    "aten::tensor_split", kNative,
    whenMatches(
        "aten::tensor_split.sections(Tensor(a -> *) self, int sections, int dim=0) -> Tensor(a)[]",
        [](ProcessedNode& p) {
          p.output(0) = views::tensorSplit(self(p), p.input(1).toInt(), p.input(2).toInt());
        }));
SRT_REGISTER_KERNEL(
    "aten::tensor_split", kNative,
    whenMatches(
        "aten::tensor_split.indices(Tensor(a -> *) self, int[] indices, int dim=0) -> Tensor(a)[]",
        [](ProcessedNode& p) {
          p.output(0) = views::tensorSplit(self(p), p.input(1).toDimVector(), p.input(2).toInt());
        }));
SRT_REGISTER_KERNEL("aten::unbind", kNative,
                    whenMatches("aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
                                [](ProcessedNode& p) {
                                  p.output(0) = views::unbind(self(p), p.input(1).toInt());
                                }));
SRT_REGISTER_KERNEL("aten::detach", kNative,
                    always([](ProcessedNode& p) { p.output(0) = at::native::detach(self(p)); }));

} // namespace srt::ops
