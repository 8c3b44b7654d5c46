#include "harness/pass_testing.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "harness/differential.h"
#include "passes/prepare.h"

namespace srt::testing {

std::shared_ptr<torch::jit::Graph> preparedGraph(const std::string& source) {
  return passes::prepareModule(scriptModule(source)).graph;
}

std::shared_ptr<torch::jit::Graph> parsedGraph(const std::string& ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return graph;
}

namespace {

size_t countKindIn(const torch::jit::Block& block, c10::Symbol kind) {
  size_t count = 0;
  for (const torch::jit::Node* node : block.nodes()) {
    count += node->kind() == kind;
    for (const torch::jit::Block* sub_block : node->blocks()) {
      count += countKindIn(*sub_block, kind);
    }
  }
  return count;
}

} // namespace

size_t countKind(const torch::jit::Graph& graph, const std::string& kind) {
  return countKindIn(*graph.block(), c10::Symbol::fromQualString(kind));
}

size_t tensorConstantsOfSize(const torch::jit::Graph& graph, at::IntArrayRef sizes) {
  size_t count = 0;
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::Constant && node->output()->type()->cast<c10::TensorType>()) {
      const auto value = torch::jit::toIValue(node->output());
      count += value && value->isTensor() && value->toTensor().sizes() == sizes ? 1 : 0;
    }
  }
  return count;
}

std::vector<InputSet> asInputSets(const std::vector<GraphInputs>& inputs) {
  std::vector<InputSet> sets;
  for (const GraphInputs& args : inputs) {
    sets.push_back({args, {}});
  }
  return sets;
}

std::vector<c10::IValue> runWithJit(const std::shared_ptr<torch::jit::Graph>& graph,
                                    const GraphInputs& inputs) {
  torch::jit::Code code(graph, "pass_test");
  torch::jit::Stack stack;
  for (const c10::IValue& input : inputs) {
    stack.push_back(deepClone(input));
  }
  torch::jit::InterpreterState(code).run(stack);
  return stack;
}

std::shared_ptr<torch::jit::Graph>
expectPassPreservesResults(passes::GraphPass pass, const std::shared_ptr<torch::jit::Graph>& graph,
                           const std::vector<GraphInputs>& input_sets, bool expect_changed,
                           double tolerance) {
  std::shared_ptr<torch::jit::Graph> rewritten = graph->copy();
  const bool changed = pass(rewritten);
  EXPECT_EQ(changed, expect_changed) << "graph after the pass:\n" << *rewritten;
  EXPECT_NO_THROW(rewritten->lint()) << *rewritten;
  for (size_t set = 0; set < input_sets.size(); ++set) {
    const std::vector<c10::IValue> expected = runWithJit(graph, input_sets[set]);
    const std::vector<c10::IValue> actual = runWithJit(rewritten, input_sets[set]);
    EXPECT_EQ(expected.size(), actual.size());
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
      const std::string difference =
          compareIValues(expected[i], actual[i], tolerance, "output[" + std::to_string(i) + "]");
      EXPECT_EQ(difference, "") << "input set " << set << ", graph after the pass:\n" << *rewritten;
    }
  }
  return rewritten;
}

} // namespace srt::testing
