// The out-overload kernel: an ATen operator that no factory takes but that has an `out=` overload
// (elu, softplus, erf, sign, std, logsumexp, pixel_shuffle, upsample_linear1d, ... — most of
// ATen's functional ops) writes into the node's output tensors like a hand-written out-variant
// kernel, so its results are planned in the arena instead of allocated per call.
//
// The functional operator decides what the results are; the out overload only says where they go.
// So the first call (and any call whose inputs' dtypes differ from the last one's) runs the
// functional operator and keeps its results; later calls hand those tensors, emptied, to the out
// overload, which computes the same values with the same dtypes and resizes them for the shape
// at hand. An out overload is taken only when it has the functional form's arguments unchanged
// plus one `Tensor(a!)` per result, and only for functional forms that alias nothing (views and
// in-place ops keep their own kernels or the JIT operator).
#include "ops/core/out_overload.h"

#include <vector>

#include <c10/util/ScopeExit.h>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// A functional schema: results are fresh tensors, no argument is written or aliased.
bool isFunctionalTensorOp(const c10::FunctionSchema& schema) {
  if (schema.is_vararg() || schema.is_varret() || schema.is_mutable() || schema.returns().empty()) {
    return false;
  }
  for (const c10::Argument& argument : schema.arguments()) {
    if (argument.alias_info() != nullptr) {
      return false;
    }
  }
  for (const c10::Argument& result : schema.returns()) {
    if (result.alias_info() != nullptr || result.type()->kind() != c10::TypeKind::TensorType) {
      return false;
    }
  }
  return true;
}

// `candidate` is `functional` with one keyword-only `Tensor(a!)` per result appended.
bool isOutOverloadOf(const c10::FunctionSchema& candidate, const c10::FunctionSchema& functional) {
  const size_t arguments = functional.arguments().size();
  const size_t results = functional.returns().size();
  if (candidate.arguments().size() != arguments + results ||
      candidate.returns().size() != results) {
    return false;
  }
  for (size_t i = 0; i < arguments; ++i) {
    const c10::Argument& want = functional.arguments()[i];
    const c10::Argument& have = candidate.arguments()[i];
    if (have.name() != want.name() || *have.type() != *want.type() ||
        have.alias_info() != nullptr) {
      return false;
    }
  }
  for (size_t i = arguments; i < arguments + results; ++i) {
    const c10::Argument& out = candidate.arguments()[i];
    if (!out.kwarg_only() || out.type()->kind() != c10::TypeKind::TensorType ||
        out.alias_info() == nullptr || !out.alias_info()->isWrite()) {
      return false;
    }
  }
  return true;
}

// What decides the results' dtypes, per input: a tensor's dtype and whether it is a 0-dim
// tensor (which type promotion weighs like a scalar), a scalar's kind, a dtype argument's value.
int64_t dtypeKey(const c10::IValue& value, bool is_dtype_argument) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) {
      return -1;
    }
    return 2 * static_cast<int64_t>(tensor.scalar_type()) + (tensor.dim() == 0 ? 1 : 0);
  }
  if (value.isInt()) {
    return is_dtype_argument ? 1000 + value.toInt() : -2;
  }
  if (value.isDouble()) {
    return -3;
  }
  if (value.isBool()) {
    return -4;
  }
  return value.isComplexDouble() ? -5 : -6;
}

// Buffers reused call after call, so that a steady-state call allocates nothing.
struct OutOverloadState final : NodeState {
  std::vector<int64_t> dtype_keys; // of the inputs of the call whose results the outputs hold
  std::vector<int64_t> call_keys;  // this call's
  torch::jit::Stack stack;
};

class OutOverloadKernel {
public:
  OutOverloadKernel(torch::jit::Operation functional, torch::jit::Operation out,
                    std::vector<bool> dtype_arguments)
      : functional_(std::move(functional)), out_(std::move(out)),
        dtype_arguments_(std::move(dtype_arguments)) {}

  void operator()(ProcessedNode& p) {
    auto& state = p.state<OutOverloadState>();
    state.call_keys.resize(p.numInputs());
    for (size_t i = 0; i < p.numInputs(); ++i) {
      state.call_keys[i] = dtypeKey(p.input(i), dtype_arguments_[i]);
    }
    torch::jit::Stack& stack = state.stack;
    // Emptied however the call ends (an operator's error included): it must not keep inputs alive.
    const auto empty_stack = c10::make_scope_exit([&stack] { stack.clear(); });
    for (size_t i = 0; i < p.numInputs(); ++i) {
      stack.emplace_back(p.input(i));
    }
    if (state.call_keys == state.dtype_keys && outputsReusable(p)) {
      for (size_t i = 0; i < p.numOutputs(); ++i) {
        at::Tensor& tensor = p.output(i).toTensor();
        // Zero elements first: resizing a non-empty out tensor to another shape is a warning.
        tensor.unsafeGetTensorImpl()->set_sizes_contiguous({0});
        stack.emplace_back(tensor);
      }
      out_(stack);
      return;
    }
    functional_(stack);
    TORCH_INTERNAL_ASSERT(stack.size() == p.numOutputs(), "operator left ", stack.size(),
                          " values on the stack, the node has ", p.numOutputs(), " outputs");
    for (size_t i = 0; i < p.numOutputs(); ++i) {
      p.output(i) = std::move(stack[i]);
    }
    state.dtype_keys.swap(state.call_keys);
  }

private:
  // Plain CPU tensors nothing else holds (a caller keeps a returned one; mkldnn and quantized
  // tensors cannot be resized in place).
  static bool outputsReusable(ProcessedNode& p) {
    for (size_t i = 0; i < p.numOutputs(); ++i) {
      const c10::IValue& slot = p.output(i);
      if (!slot.isTensor()) {
        return false;
      }
      const at::Tensor& tensor = slot.toTensor();
      if (!tensor.defined() || tensor.layout() != at::kStrided || !tensor.device().is_cpu() ||
          tensor.is_quantized() || !isUniquelyOwned(tensor)) {
        return false;
      }
    }
    return true;
  }

  torch::jit::Operation functional_;
  torch::jit::Operation out_;
  std::vector<bool> dtype_arguments_;
};

} // namespace

std::optional<KernelFunction> makeOutOverloadKernel(const Node* node) {
  const torch::jit::Operator* functional = node->maybeOperator();
  if (!node->kind().is_aten() || functional == nullptr || !functional->hasOperation() ||
      !functional->isC10Op() || !isFunctionalTensorOp(functional->schema())) {
    return std::nullopt;
  }
  for (const auto& candidate : torch::jit::getAllOperatorsFor(node->kind())) {
    if (!candidate->isC10Op() || !isOutOverloadOf(candidate->schema(), functional->schema())) {
      continue;
    }
    std::vector<bool> dtype_arguments;
    for (const c10::Argument& argument : functional->schema().arguments()) {
      // ScalarType arguments are ints in the IR; the schema's declared type says what they are.
      const c10::TypePtr& type = argument.real_type();
      const c10::TypePtr element = type->kind() == c10::TypeKind::OptionalType
                                       ? type->expectRef<c10::OptionalType>().getElementType()
                                       : type;
      dtype_arguments.push_back(element->kind() == c10::TypeKind::ScalarTypeType);
    }
    return KernelFunction(OutOverloadKernel(functional->getOperation(node),
                                            candidate->getOperation(), std::move(dtype_arguments)));
  }
  return std::nullopt;
}

} // namespace srt::ops
