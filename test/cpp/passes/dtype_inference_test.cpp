// passes/dtype_inference.cpp: which dtypes the graph alone decides, and that it claims nothing
// the caller's inputs decide.
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>

#include "harness/pass_testing.h"
#include "passes/dtype_inference.h"

namespace srt::testing {
namespace {

using torch::jit::Node;

// The output of the one top-level node of `kind` (sub-blocks included).
const torch::jit::Value* outputOf(const torch::jit::Block& block, const std::string& kind) {
  for (const Node* node : block.nodes()) {
    if (node->kind().toQualString() == kind) {
      return node->output(0);
    }
    for (const torch::jit::Block* sub_block : node->blocks()) {
      if (const torch::jit::Value* found = outputOf(*sub_block, kind)) {
        return found;
      }
    }
  }
  return nullptr;
}

std::optional<c10::ScalarType> dtypeOf(const torch::jit::Graph& graph, const std::string& kind) {
  const torch::jit::Value* value = outputOf(*graph.block(), kind);
  EXPECT_NE(value, nullptr) << "no " << kind << " in\n" << graph;
  return value == nullptr ? std::nullopt : passes::knownDtype(value);
}

TEST(DtypeInference, WeightsConversionsAndFloatOpsDecide) {
  // torch.ones folds to a float32 constant: the convolution's result is float32 whatever x is
  // (ATen refuses another input dtype), and so is what float ops make of it.
  const auto graph = preparedGraph(R"JIT(
def forward(self, x, y):
    w = torch.ones(2, 3, 1, 1)
    a = torch.conv2d(x, w)
    b = torch.max_pool2d(torch.relu(a), 2)
    c = torch.cat([b, b], 1).flatten(1)
    d = y.to(7)  # float64
    e = torch.sigmoid(d) * 2.0
    return c, e, x.sum(), x + y, torch.sigmoid(x)
)JIT");
  EXPECT_EQ(dtypeOf(*graph, "aten::conv2d"), c10::kFloat);
  EXPECT_EQ(dtypeOf(*graph, "aten::max_pool2d"), c10::kFloat);
  EXPECT_EQ(dtypeOf(*graph, "aten::flatten"), c10::kFloat);
  EXPECT_EQ(dtypeOf(*graph, "aten::to"), c10::kDouble);
  EXPECT_EQ(dtypeOf(*graph, "aten::mul"), c10::kDouble);
  // The caller decides these: x and y are plain Tensors.
  EXPECT_EQ(dtypeOf(*graph, "aten::sum"), std::nullopt);
  EXPECT_EQ(dtypeOf(*graph, "aten::add"), std::nullopt);
}

TEST(DtypeInference, MixedOrUnknownOperandsAreNotGuessed) {
  const auto graph = parsedGraph(R"IR(
graph(%f : Float(3), %h : Double(3), %i : Long(3), %x : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%f, %h)
  %b : Tensor = aten::sub(%i, %one, %one)
  %c : Tensor = aten::clamp(%f, %x, %none)
  %d : Tensor = aten::div(%f, %x)
  return (%a, %b, %c, %d))IR");
  // float32 * float64 promotes; an integer tensor's ops may turn float; a tensor bound takes
  // part in clamp's promotion; x is the caller's.
  EXPECT_EQ(dtypeOf(*graph, "aten::mul"), std::nullopt);
  EXPECT_EQ(dtypeOf(*graph, "aten::sub"), std::nullopt);
  EXPECT_EQ(dtypeOf(*graph, "aten::clamp"), std::nullopt);
  EXPECT_EQ(dtypeOf(*graph, "aten::div"), std::nullopt);
}

TEST(DtypeInference, DeclaredInputsAndBranchesThatAgree) {
  const auto graph = parsedGraph(R"IR(
graph(%x : Float(*, *), %c : bool):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      %b : Tensor = aten::neg(%x)
      -> (%b)
  %z : Tensor = aten::add_(%y, %x, %one)
  return (%z))IR");
  EXPECT_EQ(passes::knownDtype(graph->inputs()[0]), c10::kFloat);
  EXPECT_EQ(dtypeOf(*graph, "prim::If"), c10::kFloat);
  EXPECT_EQ(dtypeOf(*graph, "aten::add_"), c10::kFloat);
}

} // namespace
} // namespace srt::testing
