#include "passes/prepare.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/canonicalize.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

namespace srt::passes {
namespace {

// The LibTorch passes that flatten a graph, in the order PyTorch's Static Runtime runs them:
// constants propagate again after each pass that exposes more of them.
std::shared_ptr<torch::jit::Graph> flatten(std::shared_ptr<torch::jit::Graph> graph) {
  torch::jit::Inline(*graph);
  torch::jit::ConstantPropagation(graph);
  graph = torch::jit::Canonicalize(graph);
  torch::jit::ConstantPropagation(graph);
  torch::jit::RemoveTensorMutation(graph);
  torch::jit::ConstantPropagation(graph);
  torch::jit::EliminateDeadCode(graph);
  return graph;
}

bool isFrozen(const torch::jit::Module& module) {
  // freeze_module folds every attribute, `training` included.
  return !module.hasattr("training");
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
  if (!isFrozen(module)) {
    torch::jit::Module copy = module.clone();
    copy.eval();
    frozen = torch::jit::freeze_module(copy);
  }
  torch::jit::Method forward = frozen.get_method("forward");
  std::shared_ptr<torch::jit::Graph> graph = forward.graph()->copy();

  TORCH_CHECK(!graph->inputs().empty() && !graph->inputs()[0]->hasUses(),
              "static_runtime: forward still uses `self` after freezing (it reads or writes an "
              "attribute that freezing cannot fold, e.g. one the model mutates); such modules "
              "are not supported");
  graph->eraseInput(0);
  const c10::FunctionSchema& with_self = forward.function().getSchema();
  std::vector<c10::Argument> arguments(with_self.arguments().begin() + 1,
                                       with_self.arguments().end());
  c10::FunctionSchema schema = with_self.cloneWithArguments(std::move(arguments));

  graph = flatten(std::move(graph));
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
