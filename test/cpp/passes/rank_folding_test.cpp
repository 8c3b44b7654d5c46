// rank_folding (passes/rank_folding.cpp): dim() of a tensor whose rank the graph fixes becomes a
// constant and its assert folds away; an assert on a tensor only the assert vouches for stays; a
// comparison the tensor's possible ranks decide folds, one they leave open stays.
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

// F.adaptive_avg_pool2d's `len(x.size()) > 2` on a convolution's output, which is 3-D
// (unbatched) or 4-D whatever x is; whether it is batched is for the run to say.
const char* kPoolCheckIr = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %4 : int = prim::Constant[value=4]()
  %msg : str = prim::Constant[value="too few dims"]()
  %ones : int[] = prim::ListConstruct(%1, %1)
  %zeros : int[] = prim::ListConstruct(%0, %0)
  %y : Tensor = aten::conv2d(%x, %w, %none, %ones, %ones, %ones, %1)
  %a : Tensor = aten::hardswish(%y)
  %sizes : int[] = aten::size(%a)
  %n : int = aten::len(%sizes)
  %enough : bool = aten::gt(%n, %2)
  prim::If(%enough)
    block0():
      -> ()
    block1():
      prim::RaiseException(%msg, %none)
      -> ()
  %d : int = aten::dim(%a)
  %batched : bool = aten::eq(%d, %4)
  %p : Tensor = aten::adaptive_avg_pool2d(%a, %ones)
  return (%p, %batched)
)IR";

TEST(RankFolding, FoldsTheChecksAConvolutionsRanksDecide) {
  const std::vector<GraphInputs> sets = {{torch::randn({2, 3, 8, 8}), torch::randn({4, 3, 3, 3})},
                                         {torch::randn({3, 6, 6}), torch::randn({4, 3, 3, 3})}};
  auto folded = expectPassPreservesResults(passes::foldKnownRanks, parsedGraph(kPoolCheckIr), sets,
                                           /*expect_changed=*/true);
  EXPECT_EQ(countKind(*folded, "prim::If"), 0u) << *folded;
  EXPECT_EQ(countKind(*folded, "aten::len"), 0u) << *folded;
  // Batched or not stays the run's question.
  EXPECT_EQ(countKind(*folded, "aten::dim"), 1u) << *folded;
  EXPECT_EQ(countKind(*folded, "aten::eq"), 1u) << *folded;
}

TEST(RankFolding, KeepsAComparisonTheRanksLeaveOpen) {
  // `len(x.size()) > 3` holds for a batched convolution output only: it must still raise on an
  // unbatched one.
  std::string ir = kPoolCheckIr;
  ir.replace(ir.find("aten::gt(%n, %2)"), 16, "aten::gt(%n, %4)");
  ir.replace(ir.find("%4 : int = prim::Constant[value=4]()"), 36,
             "%4 : int = prim::Constant[value=3]()");
  auto graph = parsedGraph(ir);
  auto copy = graph->copy();
  passes::foldKnownRanks(copy);
  EXPECT_EQ(countKind(*copy, "prim::If"), 1u) << *copy;
  EXPECT_NO_THROW(runWithJit(copy, {torch::randn({1, 3, 8, 8}), torch::randn({4, 3, 3, 3})}));
  EXPECT_THROW(runWithJit(copy, {torch::randn({3, 8, 8}), torch::randn({4, 3, 3, 3})}),
               std::exception);
}

// BatchNorm2d's `if input.dim() != 4: raise` on x, then on the convolution of x: the first check
// settles the second (a convolution's output has its input's rank), not the other way round.
const char* kRepeatedCheckIr = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %1 : int = prim::Constant[value=1]()
  %4 : int = prim::Constant[value=4]()
  %msg : str = prim::Constant[value="expected 4D input"]()
  %ones : int[] = prim::ListConstruct(%1, %1)
  %xd : int = aten::dim(%x)
  %x_wrong : bool = aten::ne(%xd, %4)
  prim::If(%x_wrong)
    block0():
      prim::RaiseException(%msg, %none)
      -> ()
    block1():
      -> ()
  %r : Tensor = aten::relu(%x)
  %y : Tensor = aten::conv2d(%r, %w, %none, %ones, %ones, %ones, %1)
  %yd : int = aten::dim(%y)
  %y_wrong : bool = aten::ne(%yd, %4)
  prim::If(%y_wrong)
    block0():
      prim::RaiseException(%msg, %none)
      -> ()
    block1():
      -> ()
  return (%y)
)IR";

TEST(RankFolding, AnAssertSettlesTheSameChecksBelowIt) {
  const std::vector<GraphInputs> sets = {{torch::randn({2, 3, 8, 8}), torch::randn({4, 3, 3, 3})},
                                         {torch::randn({1, 3, 6, 5}), torch::randn({4, 3, 3, 3})}};
  auto folded = expectPassPreservesResults(passes::foldKnownRanks, parsedGraph(kRepeatedCheckIr),
                                           sets, /*expect_changed=*/true);
  EXPECT_EQ(countKind(*folded, "prim::If"), 1u) << *folded; // x's own check stays
  EXPECT_EQ(countKind(*folded, "aten::dim"), 1u) << *folded;
  EXPECT_THROW(runWithJit(folded, {torch::randn({3, 8, 8}), torch::randn({4, 3, 3, 3})}),
               std::exception);
}

} // namespace
} // namespace srt::testing
