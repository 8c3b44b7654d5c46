// Ops that build a new tensor out of pieces of others: cat, stack, index_select, gather. Each
// writes into last run's output through the at::cpu entry point (no dispatcher).
#include <ATen/CPUFunctions.h>
#include <ATen/NativeFunctions.h>
#include <ATen/native/TypeProperties.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

// cat and stack promote mixed dtypes the way binary ops do.
at::ScalarType resultType(const at::ITensorListRef& tensors) {
  return at::native::result_type(tensors);
}

void cat(ProcessedNode& p) {
  const c10::List<at::Tensor> tensors = p.input(0).toTensorList();
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  const at::ITensorListRef list(tensors);
  const at::Tensor& first = tensors.get(0);
  at::Tensor& out = outputTensor(p, 0, first.options().dtype(resultType(list)));
  at::cpu::cat_outf(list, p.input(1).toInt(), out);
}

// at::native::stack_out takes an ArrayRef, so the list is copied into a vector this node keeps
// (cleared after each run so it holds no tensor between runs, but keeps its capacity).
struct StackInputs : NodeState {
  std::vector<at::Tensor> tensors;
};

void stack(ProcessedNode& p) {
  std::vector<at::Tensor>& tensors = p.state<StackInputs>().tensors;
  struct Clear {
    std::vector<at::Tensor>& tensors;
    ~Clear() { tensors.clear(); }
  } clear{tensors};
  for (const c10::IValue& element : p.input(0).toListRef()) {
    tensors.push_back(element.toTensor());
  }
  TORCH_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  at::Tensor& out =
      outputTensor(p, 0, tensors.front().options().dtype(resultType(at::ITensorListRef(tensors))));
  // stack_out unsqueezes the inputs and calls cat_out through the dispatcher.
  const InferenceDispatch below_autograd;
  at::native::stack_out(tensors, p.input(1).toInt(), out);
}

void indexSelect(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::cpu::index_select_outf(self, p.input(1).toInt(), p.input(2).toTensor(), out);
}

void gather(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::cpu::gather_outf(self, p.input(1).toInt(), p.input(2).toTensor(), p.input(3).toBool(), out);
}

} // namespace

SRT_REGISTER_KERNEL("aten::cat", kOutVariant,
                    whenMatches("aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat));
SRT_REGISTER_KERNEL("aten::stack", kOutVariant,
                    whenMatches("aten::stack(Tensor[] tensors, int dim=0) -> Tensor", stack));
SRT_REGISTER_KERNEL("aten::index_select", kOutVariant,
                    whenMatches("aten::index_select(Tensor self, int dim, Tensor index) -> Tensor",
                                indexSelect));
SRT_REGISTER_KERNEL(
    "aten::gather", kOutVariant,
    whenMatches(
        "aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
        gather));

} // namespace srt::ops
