#include "passes/prepare.h"

#include "passes/describe_node.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/canonicalize.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/remove_dropout.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

namespace srt::passes {
namespace {

// The LibTorch passes that flatten a graph, in the order PyTorch's Static Runtime runs them:
// constants propagate again after each pass that exposes more of them.
std::shared_ptr<torch::jit::Graph> flatten(std::shared_ptr<torch::jit::Graph> graph) {
  refuseUnknownOperators(*graph);
  torch::jit::Inline(*graph);
  torch::jit::ConstantPropagation(graph);
  graph = torch::jit::Canonicalize(graph);
  torch::jit::ConstantPropagation(graph);
  torch::jit::RemoveTensorMutation(graph);
  torch::jit::ConstantPropagation(graph);
  // Eval-mode dropout is the identity; left in, its schema would tell AliasDb its output is a
  // fresh tensor when it is the input itself.
  torch::jit::removeDropout(graph);
  torch::jit::EliminateDeadCode(graph);
  return graph;
}

// A forward that never touches `self` has nothing left to fold. (PyTorch's test, "has no
// `training` attribute", misreads modules built in C++, which never had one.)
bool needsFreezing(const torch::jit::Module& module) {
  return module.get_method("forward").graph()->inputs().at(0)->hasUses();
}

std::string inputName(const torch::jit::Value* value, size_t position) {
  if (value->hasDebugName()) {
    std::string name = value->debugName();
    // Uniquified names look like "x.1": the caller knows the argument as "x".
    const auto dot = name.find('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
  }
  return "input_" + std::to_string(position);
}

} // namespace

PreparedGraph prepareModule(const torch::jit::Module& module) {
  TORCH_CHECK(module.find_method("forward"), "static_runtime: the module has no `forward` method");
  torch::jit::Module frozen = module;
  if (needsFreezing(module)) {
    torch::jit::Module copy = module.clone();
    if (copy.hasattr("training")) {
      copy.eval();
    }
    frozen = torch::jit::freeze_module(copy);
  }
  torch::jit::Method forward = frozen.get_method("forward");
  std::shared_ptr<torch::jit::Graph> graph = flatten(forward.graph()->copy());

  torch::jit::Value* self = graph->inputs().at(0);
  if (self->hasUses()) {
    // Names the attribute reads/writes and calls that freezing could not fold.
    checkSupported(*graph);
    TORCH_CHECK(false, "static_runtime: forward still uses `self` after freezing, in ",
                describeNode(self->uses().front().user), "; such modules are not supported");
  }
  graph->eraseInput(0);
  const c10::FunctionSchema& with_self = forward.function().getSchema();
  std::vector<c10::Argument> arguments(with_self.arguments().begin() + 1,
                                       with_self.arguments().end());
  c10::FunctionSchema schema = with_self.cloneWithArguments(std::move(arguments));
  checkSupported(*graph);
  return {std::move(graph), std::move(schema)};
}

PreparedGraph prepareGraph(const std::shared_ptr<torch::jit::Graph>& original) {
  std::shared_ptr<torch::jit::Graph> graph = flatten(original->copy());
  std::vector<c10::Argument> arguments;
  for (size_t i = 0; i < graph->inputs().size(); ++i) {
    const torch::jit::Value* input = graph->inputs()[i];
    arguments.emplace_back(inputName(input, i), input->type());
  }
  std::vector<c10::Argument> returns;
  for (const torch::jit::Value* output : graph->outputs()) {
    returns.emplace_back("", output->type());
  }
  c10::FunctionSchema schema("forward", "", std::move(arguments), std::move(returns));
  checkSupported(*graph);
  return {std::move(graph), std::move(schema)};
}

} // namespace srt::passes
