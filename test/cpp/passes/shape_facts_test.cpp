// shape_facts (passes/shape_facts.cpp): the ranks, sizes and numbers a graph fixes, and the ones
// it does not.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/pass_testing.h"
#include "passes/shape_facts.h"

namespace srt::testing {
namespace {

// GPT-2's head split: B, T, C from x.size(), a [96, 32] projection split in three, heads of
// C // 4, the scale 1 / sqrt(k.size(-1)); y is an input nothing fixes.
const char* kGpt2Ir = R"IR(
graph(%x : Tensor, %y : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one_f : float = prim::Constant[value=1.]()
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %m1 : int = prim::Constant[value=-1]()
  %H : int = prim::Constant[value=4]()
  %D : int = prim::Constant[value=32]()
  %sizes : int[] = aten::size(%x)
  %B : int, %T : int, %C : int = prim::ListUnpack(%sizes)
  %qkv : Tensor = aten::linear(%x, %w, %none)
  %list : Tensor[] = aten::split(%qkv, %D, %2)
  %q : Tensor, %k : Tensor, %v : Tensor = prim::ListUnpack(%list)
  %dh : int = aten::floordiv(%C, %H)
  %shape : int[] = prim::ListConstruct(%B, %T, %H, %dh)
  %kv : Tensor = aten::view(%k, %shape)
  %kh : Tensor = aten::transpose(%kv, %1, %2)
  %klast : int = aten::size(%kh, %m1)
  %root : float = aten::sqrt(%klast)
  %scale : float = aten::div(%one_f, %root)
  %ylast : int = aten::size(%y, %m1)
  %yroot : float = aten::sqrt(%ylast)
  return (%scale, %yroot, %v)
)IR";

// Output `output` of the `nth` node of `kind` (parseIR keeps no value names but the inputs').
torch::jit::Value* outputOf(torch::jit::Graph& graph, const std::string& kind, size_t nth = 0,
                            size_t output = 0) {
  for (torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::Symbol::fromQualString(kind) && nth-- == 0) {
      return node->output(output);
    }
  }
  ADD_FAILURE() << "no " << kind << " in\n" << graph;
  return graph.inputs()[0];
}

std::shared_ptr<torch::jit::Graph> gpt2Graph() {
  auto graph = parsedGraph(kGpt2Ir);
  // The projection's weight a constant, as freezing makes it.
  torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
  graph->inputs()[2]->replaceAllUsesWith(graph->insertConstant(torch::randn({96, 32})));
  graph->eraseInput(2);
  return graph;
}

TEST(ShapeFacts, ProvesGpt2HeadSizeAndScale) {
  auto graph = gpt2Graph();
  torch::jit::Value* x = graph->inputs()[0];
  EXPECT_EQ(passes::knownRank(x), 3);      // unpacked into three sizes
  EXPECT_EQ(passes::knownSize(x, -1), 32); // what the projection reads
  EXPECT_EQ(passes::knownSize(outputOf(*graph, "aten::linear"), 2), 96);
  EXPECT_EQ(passes::knownSize(outputOf(*graph, "prim::ListUnpack", 1, 2), -1), 32); // v
  EXPECT_EQ(passes::knownInt(outputOf(*graph, "aten::floordiv")), 8);
  EXPECT_EQ(passes::knownSize(outputOf(*graph, "aten::transpose"), 3), 8);
  const std::optional<double> scale = passes::knownNumber(graph->outputs()[0]);
  ASSERT_TRUE(scale.has_value());
  EXPECT_DOUBLE_EQ(*scale, 1.0 / std::sqrt(8.0));
}

TEST(ShapeFacts, LeavesUnknownWhatNothingFixes) {
  auto graph = gpt2Graph();
  EXPECT_FALSE(passes::knownRank(graph->inputs()[1]).has_value());
  EXPECT_FALSE(passes::knownNumber(graph->outputs()[1]).has_value());
  // x's batch and T: run-time sizes.
  EXPECT_FALSE(passes::knownInt(outputOf(*graph, "prim::ListUnpack")).has_value());
  EXPECT_FALSE(passes::knownSize(outputOf(*graph, "aten::transpose"), 2).has_value());
}

TEST(ShapeFacts, RankFromAnAssert) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor, %y : Tensor):
  %3 : int = prim::Constant[value=3]()
  %msg : str = prim::Constant[value="expected 3-D"]()
  %none : NoneType = prim::Constant()
  %d : int = aten::dim(%x)
  %ok : bool = aten::eq(%d, %3)
  prim::If(%ok)
    block0():
      -> ()
    block1():
      prim::RaiseException(%msg, %none)
      -> ()
  %dy : int = aten::dim(%y)
  %is3 : bool = aten::eq(%dy, %3)
  return (%x, %is3)
)IR");
  EXPECT_EQ(passes::knownRank(graph->inputs()[0]), 3);
  // A comparison alone asserts nothing.
  EXPECT_FALSE(passes::knownRank(graph->inputs()[1]).has_value());
}

TEST(ShapeFacts, CatRankFromOnePieceAboveOneDim) {
  // cat([k, z]) with k 3-D (a view) and z of a rank nothing fixes: every piece of a cat has the
  // result's rank, but for legacy empty 1-D ones, so k's rank is the result's. A 1-D piece does
  // not fix it (it may be such an empty one).
  auto graph = parsedGraph(R"IR(
graph(%k : Tensor, %z : Tensor, %flat : Tensor):
  %1 : int = prim::Constant[value=1]()
  %m1 : int = prim::Constant[value=-1]()
  %2 : int = prim::Constant[value=2]()
  %shape : int[] = prim::ListConstruct(%2, %m1, %2)
  %k3 : Tensor = aten::view(%k, %shape)
  %pieces : Tensor[] = prim::ListConstruct(%k3, %z)
  %joined : Tensor = aten::cat(%pieces, %1)
  %flat_shape : int[] = prim::ListConstruct(%m1)
  %f1 : Tensor = aten::view(%flat, %flat_shape)
  %others : Tensor[] = prim::ListConstruct(%f1, %z)
  %unknown : Tensor = aten::cat(%others, %1)
  return (%joined, %unknown)
)IR");
  EXPECT_EQ(passes::knownRank(graph->outputs()[0]), 3);
  EXPECT_FALSE(passes::knownRank(graph->outputs()[1]).has_value());
}

} // namespace
} // namespace srt::testing
