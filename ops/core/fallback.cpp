// The JIT-operator fallback: any node with a registered operator runs through a stack.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {

std::optional<KernelFunction> makeFallbackKernel(const torch::jit::Node* node) {
  const torch::jit::Operator* op = node->maybeOperator();
  if (op == nullptr || !op->hasOperation()) {
    return std::nullopt;
  }
  // Operation::operator() is non-const but keeps no state, so runtimes may share one.
  torch::jit::Operation operation = op->getOperation(node);
  // Vararg operators read their input count from the top of the stack, as the interpreter's OPN
  // instruction pushes it.
  const bool push_input_count = node->maybeSchema() && node->schema().is_vararg();
  return KernelFunction(
      [operation = std::move(operation), push_input_count](ProcessedNode& p) mutable {
        torch::jit::Stack stack;
        stack.reserve(std::max(p.numInputs() + 1, p.numOutputs()));
        for (size_t i = 0; i < p.numInputs(); ++i) {
          stack.emplace_back(p.input(i));
        }
        if (push_input_count) {
          stack.emplace_back(static_cast<int64_t>(p.numInputs()));
        }
        operation(stack);
        TORCH_INTERNAL_ASSERT(stack.size() == p.numOutputs(), "operator left ", stack.size(),
                              " values on the stack, the node has ", p.numOutputs(), " outputs");
        for (size_t i = 0; i < p.numOutputs(); ++i) {
          p.output(i) = std::move(stack[i]);
        }
      });
}

} // namespace srt::ops
