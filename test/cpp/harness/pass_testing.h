// Helpers for testing one optimization pass: build a graph, apply the pass, check the rewrite and
// that the JIT computes the same results from the rewritten graph as from the original.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "harness/differential.h"
#include "passes/pipeline.h"

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace srt::testing {

using GraphInputs = std::vector<c10::IValue>;

// The prepared graph (frozen, flattened, no optimization pass yet) of a TorchScript source that
// defines `forward(self, ...)`.
std::shared_ptr<torch::jit::Graph> preparedGraph(const std::string& source);

// A graph parsed from IR text (torch::jit::parseIR), for patterns TorchScript cannot spell.
std::shared_ptr<torch::jit::Graph> parsedGraph(const std::string& ir);

// Nodes of this kind ("aten::linear", "srt::fused_linear", ...), sub-blocks included.
size_t countKind(const torch::jit::Graph& graph, const std::string& kind);

// Top-level tensor constants of exactly these sizes: after a weight-packing pass, the plain
// weights that are left.
size_t tensorConstantsOfSize(const torch::jit::Graph& graph, at::IntArrayRef sizes);

// The same inputs as differential-harness input sets (positional arguments, no keywords).
std::vector<InputSet> asInputSets(const std::vector<GraphInputs>& inputs);

// Runs a graph through the JIT interpreter (no static_runtime involved).
std::vector<c10::IValue> runWithJit(const std::shared_ptr<torch::jit::Graph>& graph,
                                    const GraphInputs& inputs);

// Applies `pass` to a copy of `graph`, checks the result lints, then checks that the JIT
// computes the same outputs (within `tolerance`) from both graphs on every input set, and that
// the pass returned `expect_changed`. Returns the rewritten graph for the caller to inspect.
std::shared_ptr<torch::jit::Graph>
expectPassPreservesResults(passes::GraphPass pass, const std::shared_ptr<torch::jit::Graph>& graph,
                           const std::vector<GraphInputs>& input_sets, bool expect_changed,
                           double tolerance = 1e-5);

} // namespace srt::testing
