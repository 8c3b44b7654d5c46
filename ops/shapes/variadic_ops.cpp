// srt::variadic_cat / srt::variadic_stack: cat and stack with their tensors as separate inputs
// (`tensors..., dim`), which passes/variadic_ops.cpp puts in place of aten::cat/stack on a
// ListConstruct, so no list is built per run.
//
// Vararg schemas: the JIT interpreter pushes the input count on top of the stack when it calls
// them (ops/core/fallback.cpp does the same), which the reference implementation pops.
#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#include <ATen/native/TypeProperties.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

// The node's tensors as the vector ATen takes, kept in the node's state so its capacity is
// reused; emptied after every run so it holds no tensor between runs.
struct VariadicInputs : NodeState {
  std::vector<at::Tensor> tensors;
};

class BorrowInputs {
public:
  explicit BorrowInputs(ProcessedNode& p) : tensors_(p.state<VariadicInputs>().tensors) {
    TORCH_CHECK(p.numInputs() >= 2, "static_runtime: ", p.node()->kind().toQualString(),
                " expects at least one tensor and a dim");
    for (size_t i = 0; i + 1 < p.numInputs(); ++i) {
      tensors_.push_back(p.input(i).toTensor());
    }
  }
  ~BorrowInputs() { tensors_.clear(); }
  BorrowInputs(const BorrowInputs&) = delete;
  BorrowInputs& operator=(const BorrowInputs&) = delete;

  const std::vector<at::Tensor>& tensors() const { return tensors_; }
  at::ScalarType resultType() const {
    return at::native::result_type(at::ITensorListRef(tensors_));
  }

private:
  std::vector<at::Tensor>& tensors_;
};

int64_t dimArgument(const ProcessedNode& p) {
  return p.input(p.numInputs() - 1).toInt();
}

void catOut(ProcessedNode& p) {
  BorrowInputs inputs(p);
  at::Tensor& out =
      outputTensor(p, 0, inputs.tensors().front().options().dtype(inputs.resultType()));
  at::cpu::cat_outf(at::ITensorListRef(inputs.tensors()), dimArgument(p), out);
}

void stackOut(ProcessedNode& p) {
  BorrowInputs inputs(p);
  at::Tensor& out =
      outputTensor(p, 0, inputs.tensors().front().options().dtype(inputs.resultType()));
  // stack_out unsqueezes the inputs and calls cat_out through the dispatcher.
  const InferenceDispatch below_autograd;
  at::native::stack_out(inputs.tensors(), dimArgument(p), out);
}

// Without out variants: a new tensor each run, as aten::cat/stack would give.
void catNative(ProcessedNode& p) {
  BorrowInputs inputs(p);
  p.output(0) = at::cpu::cat(at::ITensorListRef(inputs.tensors()), dimArgument(p));
}

void stackNative(ProcessedNode& p) {
  BorrowInputs inputs(p);
  const InferenceDispatch below_autograd;
  p.output(0) = at::native::stack(inputs.tensors(), dimArgument(p));
}

// Stack: [tensors..., dim, count] -> [result].
template <at::Tensor (*Fn)(at::TensorList, int64_t)>
void reference(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const auto count = torch::jit::pop(*stack).toInt();
  TORCH_CHECK(count >= 2 && static_cast<int64_t>(stack->size()) >= count,
              "srt::variadic_cat/stack expects tensors and a dim, got ", count, " inputs");
  const int64_t dim = stack->back().toInt();
  std::vector<at::Tensor> tensors;
  tensors.reserve(count - 1);
  for (auto it = stack->end() - count; it != stack->end() - 1; ++it) {
    tensors.push_back(it->toTensor());
  }
  torch::jit::drop(*stack, count);
  torch::jit::push(*stack, Fn(tensors, dim));
}

at::Tensor catReference(at::TensorList tensors, int64_t dim) {
  return at::cat(tensors, dim);
}

at::Tensor stackReference(at::TensorList tensors, int64_t dim) {
  return at::stack(tensors, dim);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  // A new tensor from inputs it only reads: nothing aliases.
  m.def(torch::schema("srt::variadic_cat(...) -> Tensor", c10::AliasAnalysisKind::PURE_FUNCTION),
        torch::CppFunction::makeFromBoxedFunction<reference<catReference>>());
  m.def(torch::schema("srt::variadic_stack(...) -> Tensor", c10::AliasAnalysisKind::PURE_FUNCTION),
        torch::CppFunction::makeFromBoxedFunction<reference<stackReference>>());
}

SRT_REGISTER_KERNEL("srt::variadic_cat", kOutVariant, always(catOut));
SRT_REGISTER_KERNEL("srt::variadic_cat", kNative, always(catNative));
SRT_REGISTER_KERNEL("srt::variadic_stack", kOutVariant, always(stackOut));
SRT_REGISTER_KERNEL("srt::variadic_stack", kNative, always(stackNative));

} // namespace srt::ops
