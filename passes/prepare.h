// Turns a TorchScript module or graph into the flat graph the runtime executes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/function_schema.h>

namespace torch::jit {
struct Graph;
struct Module;
} // namespace torch::jit

namespace srt::passes {

struct PreparedGraph {
  std::shared_ptr<torch::jit::Graph> graph;
  // forward's schema without `self`: names, types and defaults the caller's arguments bind to.
  c10::FunctionSchema schema;
  // Tensor attributes left out of freezing (StaticModuleOptions::unbound_constants): the graph
  // reads them as extra inputs after forward's arguments, in this order.
  std::vector<std::string> unbound_constants;
};

// Freezes the module when it is not frozen yet (on a copy, in eval mode), then prepares the graph
// of its `forward`. The caller's module is left untouched. `unbound_constants` names tensor
// attributes ("fc1.weight") to keep out of freezing: they become trailing graph inputs.
PreparedGraph prepareModule(const torch::jit::Module& module,
                            const std::vector<std::string>& unbound_constants = {});

// Prepares a copy of a free-standing graph (no `self` input); its schema is derived from the
// graph's inputs.
PreparedGraph prepareGraph(const std::shared_ptr<torch::jit::Graph>& graph);

// Throws a c10::Error naming every non-prim node no kernel or JIT operator implements. Runs
// before LibTorch's passes, whose alias analysis asserts on unknown operators.
void refuseUnknownOperators(const torch::jit::Graph& graph);

// Throws a c10::Error naming every node the runtime cannot execute: calls that survived inlining,
// references to the module, forks, and nodes with neither a kernel nor a JIT operator.
void checkSupported(const torch::jit::Graph& graph);

} // namespace srt::passes
