// ops/conv/upsample.cpp: F.interpolate's 2-D modes (the .vec overloads it calls) by size and by
// scale factor, against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_differential.h"

namespace srt::testing {
namespace {

TEST(Upsample, TwoDimensionalModesBySizeAndScale) {
  const auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %seven : int = prim::Constant[value=7]()
  %nine : int = prim::Constant[value=9]()
  %six : int = prim::Constant[value=6]()
  %two : float = prim::Constant[value=2.]()
  %one_and_half : float = prim::Constant[value=1.5]()
  %half : float = prim::Constant[value=0.5]()
  %size : int[] = prim::ListConstruct(%seven, %nine)
  %square : int[] = prim::ListConstruct(%six, %six)
  %double : float[] = prim::ListConstruct(%two, %two)
  %uneven : float[] = prim::ListConstruct(%one_and_half, %half)
  %a : Tensor = aten::upsample_bilinear2d(%x, %size, %false, %none)
  %b : Tensor = aten::upsample_bilinear2d(%x, %none, %true, %double)
  %c : Tensor = aten::upsample_nearest2d(%x, %none, %uneven)
  %d : Tensor = aten::upsample_bicubic2d(%x, %square, %false, %none)
  %result : (Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %b, %c, %d)
  return (%result))IR");
  expectGraphMatchesJit(graph, {{torch::randn({1, 3, 4, 5})},
                                {torch::randn({2, 2, 8, 6})},
                                {torch::randn({1, 4, 6, 3}).permute({0, 3, 1, 2})}});
  const auto kinds = kernelKinds(StaticModule(graph->copy()));
  for (const char* op :
       {"aten::upsample_bilinear2d", "aten::upsample_nearest2d", "aten::upsample_bicubic2d"}) {
    EXPECT_EQ(kinds.at(op), std::set<ops::KernelKind>{ops::KernelKind::kOutVariant}) << op;
  }
}

} // namespace
} // namespace srt::testing
