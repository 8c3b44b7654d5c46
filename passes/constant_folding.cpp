// Computes once, when the module is built, what only depends on constants (`w.t()`, `w * 0.125`,
// `torch.cat([wq, wk, wv])`, view ops of constants), and replaces it with the result. On a module
// prepared by passes/prepare.cpp, LibTorch's ConstantPropagation has folded most of this already
// (measured: the weight math above leaves no node); this pass also folds what it cannot see as
// constant (a list of constant tensors), and what appears later: graphs handed to StaticModule
// directly, and constant-only subgraphs other passes leave. Nodes run with grad mode off, results
// detached. Also: BatchNorm folded into the convolution before it.
#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/frozen_conv_folding.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/pipeline.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Nodes that are not computations of their inputs, whatever those are.
bool neverFolded(const Node* node) {
  static const c10::Symbol kinds[] = {
      c10::prim::Constant,       c10::prim::If,
      c10::prim::Loop,           c10::prim::Uninitialized,
      c10::prim::RaiseException, c10::prim::Print,
      c10::prim::CallFunction,   c10::prim::CallMethod,
      c10::prim::GetAttr,        c10::prim::SetAttr,
      c10::prim::Enter,          c10::prim::Exit,
  };
  for (const c10::Symbol kind : kinds) {
    if (node->kind() == kind) {
      return true;
    }
  }
  return !node->blocks().empty() || node->hasSideEffects() || node->isNondeterministic() ||
         node->inputs().empty() || !node->maybeOperator();
}

// Whether `value` reaches its block's outputs, directly or inside a tuple, list or dict.
bool escapes(const Value* value) {
  for (const torch::jit::Use& use : value->uses()) {
    const Node* user = use.user;
    if (user == user->owningBlock()->return_node()) {
      return true;
    }
    const bool container = user->kind() == c10::prim::TupleConstruct ||
                           user->kind() == c10::prim::ListConstruct ||
                           user->kind() == c10::prim::DictConstruct;
    if (container && escapes(user->output())) {
      return true;
    }
  }
  return false;
}

// A graph output computed from constants stays a computation: a caller receives a fresh tensor
// each run rather than the module's shared constant.
bool feedsReturn(const Node* node) {
  for (const Value* output : node->outputs()) {
    if (escapes(output)) {
      return true;
    }
  }
  return false;
}

// The value of `value` when it only depends on constants: a constant, or a list or tuple of such
// (which cannot be a prim::Constant itself when it holds tensors, but is what cat([wq, wk, wv])
// reads).
std::optional<c10::IValue> constantValue(const Value* value) {
  if (c10::optional<c10::IValue> constant = torch::jit::toIValue(value)) {
    return *constant;
  }
  const Node* producer = value->node();
  if (producer->kind() != c10::prim::ListConstruct &&
      producer->kind() != c10::prim::TupleConstruct) {
    return std::nullopt;
  }
  std::vector<c10::IValue> elements;
  for (const Value* input : producer->inputs()) {
    std::optional<c10::IValue> element = constantValue(input);
    if (!element) {
      return std::nullopt;
    }
    elements.push_back(std::move(*element));
  }
  if (producer->kind() == c10::prim::TupleConstruct) {
    auto type = value->type()->expect<c10::TupleType>();
    return c10::IValue(type->name() ? c10::ivalue::Tuple::createNamed(std::move(elements), type)
                                    : c10::ivalue::Tuple::create(std::move(elements)));
  }
  c10::impl::GenericList list(value->type()->expectRef<c10::ListType>().getElementType());
  for (c10::IValue& element : elements) {
    list.push_back(std::move(element));
  }
  return c10::IValue(std::move(list));
}

bool allInputsConstant(const Node* node) {
  for (const Value* input : node->inputs()) {
    if (!constantValue(input)) {
      return false;
    }
  }
  return true;
}

// The node's outputs computed from its constant inputs, tensors detached; std::nullopt when it
// throws (the error then surfaces at run time, where the user expects it).
std::optional<torch::jit::Stack> evaluate(const Node* node) {
  torch::jit::Stack stack;
  for (const Value* input : node->inputs()) {
    stack.push_back(*constantValue(input));
  }
  try {
    const at::NoGradGuard no_grad;
    node->getOperation()(stack);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (c10::IValue& value : stack) {
    if (value.isTensor()) {
      value = value.toTensor().detach();
    }
  }
  return stack;
}

// Replaces the node's outputs by constants; false (graph untouched) when one of them cannot be a
// constant (a list of tensors, an object).
bool replaceWithConstants(Node* node, const torch::jit::Stack& outputs) {
  std::vector<Value*> constants;
  {
    const torch::jit::WithInsertPoint before(node);
    for (size_t i = 0; i < outputs.size(); ++i) {
      c10::optional<Value*> constant = torch::jit::tryInsertConstant(
          *node->owningGraph(), outputs[i], node->sourceRange(), node->scope());
      if (!constant) {
        for (Value* inserted : constants) {
          inserted->node()->destroy();
        }
        return false;
      }
      (*constant)->copyMetadata(node->output(i));
      constants.push_back(*constant);
    }
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    node->output(i)->replaceAllUsesWith(constants[i]);
  }
  node->destroy();
  return true;
}

std::vector<Node*> foldableNodes(GraphPtr& graph) {
  const torch::jit::AliasDb alias_db(graph);
  return nodesWhere(graph->block(), [&](Node* node) {
    // A value something writes to is not a constant, even with constant inputs.
    return !neverFolded(node) && !feedsReturn(node) && allInputsConstant(node) &&
           !alias_db.hasWriters(node);
  });
}

// The convolutions LibTorch's FoldFrozenConvBatchnorm folds into (passes/prepare.cpp has made
// traced models' aten::_convolution one of them).
bool isFoldableConvolution(const Node* node) {
  static const c10::Symbol kinds[] = {c10::aten::conv1d, c10::aten::conv2d, c10::aten::conv3d};
  return std::find(std::begin(kinds), std::end(kinds), node->kind()) != std::end(kinds);
}

// LibTorch folds a BatchNorm only into a convolution whose output nothing else reads, and
// nn.BatchNorm2d's rank check (`input.dim() != 4`, a raise) reads it too wherever the graph does
// not fix the rank, so that check would keep a network's conv -> BN pairs apart: DenseNet's,
// whose BatchNorms read concatenations of a list. A convolution's output has its input's rank,
// so the check asks the input instead; it stays where it was, before the BatchNorm.
bool moveRankChecksOffConvolutions(torch::jit::Block* block) {
  bool changed = false;
  for (Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) {
      changed = moveRankChecksOffConvolutions(inner) || changed;
    }
    if (!node->matches(
            "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
            "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) "
            "-> Tensor") ||
        !isFoldableConvolution(node->input(0)->node())) {
      continue;
    }
    Value* conv_output = node->input(0);
    Value* conv_input = conv_output->node()->input(0);
    const std::vector<torch::jit::Use> uses = conv_output->uses();
    for (const torch::jit::Use& use : uses) {
      if (use.user->matches("aten::dim(Tensor self) -> int")) {
        use.user->replaceInput(use.offset, conv_input);
        changed = true;
      }
    }
  }
  return changed;
}

} // namespace

bool foldConstants(GraphPtr& graph) {
  bool changed = false;
  // One round folds the nodes whose inputs are constants now; their users may be next.
  for (bool folded = true; folded;) {
    folded = false;
    for (Node* node : foldableNodes(graph)) {
      if (std::optional<torch::jit::Stack> outputs = evaluate(node)) {
        folded = replaceWithConstants(node, *outputs) || folded;
      }
    }
    changed = changed || folded;
  }
  if (changed) {
    // The lists and tuples of constants that fed folded nodes.
    torch::jit::EliminateDeadCode(graph);
  }
  return changed;
}

bool foldConvBatchNorm(GraphPtr& graph) {
  // The folded weights are computed from frozen parameters: no autograd history for constants.
  const at::NoGradGuard no_grad;
  const bool moved = moveRankChecksOffConvolutions(graph->block());
  return torch::jit::FoldFrozenConvBatchnorm(graph) || moved;
}

bool foldConvAffines(GraphPtr& graph) {
  const at::NoGradGuard no_grad;
  bool changed = false;
  // The multiplication into the weight first: the addition then follows the convolution.
  for (bool folded = true; folded;) {
    folded = torch::jit::FoldFrozenConvMulOrDiv(graph);
    folded = torch::jit::FoldFrozenConvAddOrSub(graph) || folded;
    changed = changed || folded;
  }
  return changed;
}

} // namespace srt::passes
