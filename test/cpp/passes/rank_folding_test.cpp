// rank_folding (passes/rank_folding.cpp): dim() of a tensor whose rank the graph fixes becomes a
// constant and its assert folds away; an assert on a tensor only the assert vouches for stays.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

// y = x.reshape(a, b, -1) is 3-D whatever x is; x itself is only asserted 2-D.
const char* kAssertsIr = R"IR(
graph(%x : Tensor, %a : int, %b : int):
  %2 : int = prim::Constant[value=2]()
  %3 : int = prim::Constant[value=3]()
  %m1 : int = prim::Constant[value=-1]()
  %msg : str = prim::Constant[value="wrong rank"]()
  %none : NoneType = prim::Constant()
  %xd : int = aten::dim(%x)
  %x2 : bool = aten::eq(%xd, %2)
  prim::If(%x2)
    block0():
      -> ()
    block1():
      prim::RaiseException(%msg, %none)
      -> ()
  %sizes : int[] = prim::ListConstruct(%a, %b, %m1)
  %y : Tensor = aten::reshape(%x, %sizes)
  %yd : int = aten::dim(%y)
  %y3 : bool = aten::eq(%yd, %3)
  prim::If(%y3)
    block0():
      -> ()
    block1():
      prim::RaiseException(%msg, %none)
      -> ()
  %z : Tensor = aten::relu(%y)
  return (%z)
)IR";

TEST(RankFolding, FoldsWhatTheGraphProvesAndKeepsWhatOnlyTheAssertSays) {
  const std::vector<GraphInputs> sets = {{torch::randn({4, 6}), int64_t{2}, int64_t{2}},
                                         {torch::randn({2, 12}), int64_t{1}, int64_t{4}}};
  auto folded = expectPassPreservesResults(passes::foldKnownRanks, parsedGraph(kAssertsIr), sets,
                                           /*expect_changed=*/true);
  EXPECT_EQ(countKind(*folded, "aten::dim"), 1u) << *folded; // x's
  EXPECT_EQ(countKind(*folded, "prim::If"), 1u) << *folded;  // x's assert
  EXPECT_EQ(countKind(*folded, "aten::reshape"), 1u) << *folded;
}

TEST(RankFolding, KeepsTheAssertThatFails) {
  // x is 3-D here: its own assert must still raise.
  auto graph = parsedGraph(kAssertsIr);
  auto copy = graph->copy();
  passes::foldKnownRanks(copy);
  EXPECT_THROW(runWithJit(copy, {torch::randn({2, 2, 3}), int64_t{2}, int64_t{2}}), std::exception);
}

} // namespace
} // namespace srt::testing
