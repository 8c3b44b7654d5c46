// Copy-variant kernels (ops/shapes/copy_variants.cpp) run by a StaticModule against the JIT running
// the same operators' reference implementations, on graphs the passes would produce.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_differential.h"

namespace srt::testing {
namespace {

// The passes are off so the graph runs as written.
StaticModuleOptions noPasses() {
  StaticModuleOptions options;
  options.disabled_passes = {"copy_variants", "maybe_copy_variants", "remove_no_ops"};
  return options;
}

TEST(CopyVariantKernels, PermuteReshapeFlattenCopies) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[2, -3, 1]]()
  %shape : int[] = prim::Constant[value=[-1, 2]]()
  %one : int = prim::Constant[value=1]()
  %minus_one : int = prim::Constant[value=-1]()
  %p : Tensor = srt::permute_copy(%x, %dims)
  %r : Tensor = srt::reshape_copy(%p, %shape)
  %f : Tensor = srt::flatten_copy(%x, %one, %minus_one)
  %out : (Tensor, Tensor, Tensor) = prim::TupleConstruct(%p, %r, %f)
  return (%out)
)IR");
  // Contiguous, transposed, a shape change, zero elements, another dtype.
  expectGraphMatchesJit(graph,
                        {{torch::randn({2, 3, 4})},
                         {torch::randn({4, 3, 2}).transpose(0, 2)},
                         {torch::randn({3, 1, 6})},
                         {torch::zeros({0, 2, 3})},
                         {torch::arange(24).view({2, 4, 3})}},
                        noPasses());
}

TEST(CopyVariantKernels, CopiesAreContiguousAndOwnTheirMemory) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[1, 0]]()
  %p : Tensor = srt::permute_copy(%x, %dims)
  return (%p)
)IR");
  StaticModule module(graph, noPasses());
  at::Tensor x = torch::randn({3, 5});
  at::Tensor out = module({x}).toTensor();
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_FALSE(out.is_alias_of(x));
  EXPECT_TRUE(torch::equal(out, x.t()));
}

TEST(CopyVariantKernels, FlattenCopyOfZeroDimTensor) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %minus_one : int = prim::Constant[value=-1]()
  %f : Tensor = srt::flatten_copy(%x, %zero, %minus_one)
  %two : float = prim::Constant[value=2.]()
  %y : Tensor = aten::mul(%f, %two)
  return (%y)
)IR");
  expectGraphMatchesJit(graph, {{torch::tensor(3.5)}, {torch::randn({2, 2})}}, noPasses());
}

TEST(CopyVariantKernels, ToMaybeCopySelectsTheInputOrTheCopy) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor, %other : Tensor):
  %float : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %c1 : Tensor, %copied1 : bool = srt::to_maybe_copy(%x, %float, %none, %false)
  %a : Tensor = srt::select_tensor(%x, %c1, %copied1)
  %c2 : Tensor, %copied2 : bool = srt::to_maybe_copy(%x, %none, %other, %false)
  %b : Tensor = srt::select_tensor(%x, %c2, %copied2)
  %c3 : Tensor, %copied3 : bool = srt::to_maybe_copy(%x, %none, %none, %true)
  %c : Tensor = srt::select_tensor(%x, %c3, %copied3)
  %out : (Tensor, Tensor, Tensor, bool, bool, bool) = prim::TupleConstruct(%a, %b, %c, %copied1, %copied2, %copied3)
  return (%out)
)IR");
  expectGraphMatchesJit(
      graph,
      {{torch::randn({2, 3}), torch::randn({1})},
       {torch::randn({2, 3}, torch::kFloat64), torch::randn({1}, torch::kFloat64)},
       {torch::arange(6).view({3, 2}).t(), torch::randn({1})}},
      noPasses());
}

// A copy made by to_maybe_copy has the strides aten::to gives it: the input's, when dense.
TEST(CopyVariantKernels, ToMaybeCopyKeepsTheInputsStrides) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %double : int = prim::Constant[value=7]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %c : Tensor, %copied : bool = srt::to_maybe_copy(%x, %double, %none, %false)
  %y : Tensor = srt::select_tensor(%x, %c, %copied)
  return (%y)
)IR");
  StaticModule module(graph, noPasses());
  StaticRuntime runtime(module);
  for (const torch::Tensor& x :
       {torch::randn({4, 3}).t(), torch::randn({2, 3, 4}).permute({1, 2, 0}),
        torch::randn({3, 4})}) {
    for (int run = 0; run < 2; ++run) {
      const at::Tensor y = runtime({x}).toTensor();
      EXPECT_EQ(y.strides(), x.strides());
      EXPECT_TRUE(torch::equal(y, x.to(torch::kFloat64)));
    }
  }
}

TEST(CopyVariantKernels, ReshapeMaybeCopyCopiesOnlyWithoutAView) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %shape : int[] = prim::Constant[value=[-1]]()
  %c : Tensor, %copied : bool = srt::reshape_maybe_copy(%x, %shape)
  %y : Tensor = srt::select_reshape(%x, %shape, %c, %copied)
  %out : (Tensor, bool) = prim::TupleConstruct(%y, %copied)
  return (%out)
)IR");
  expectGraphMatchesJit(
      graph, {{torch::randn({2, 3})}, {torch::randn({3, 4}).t()}, {torch::randn({5, 2})}},
      noPasses());
  StaticModule module(graph, noPasses());
  at::Tensor x = torch::randn({2, 3});
  auto result = module({x}).toTupleRef().elements();
  EXPECT_TRUE(result[0].toTensor().is_alias_of(x)) << "a viewable reshape must stay a view";
  EXPECT_FALSE(result[1].toBool());
}

TEST(CopyVariantKernels, KernelKinds) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %shape : int[] = prim::Constant[value=[-1]]()
  %c : Tensor, %copied : bool = srt::reshape_maybe_copy(%x, %shape)
  %y : Tensor = srt::select_reshape(%x, %shape, %c, %copied)
  %z : Tensor = srt::reshape_copy(%y, %shape)
  return (%z)
)IR");
  const auto kinds = kernelKinds(StaticModule(graph, noPasses()));
  EXPECT_EQ(kinds.at("srt::reshape_maybe_copy"),
            std::set<ops::KernelKind>{ops::KernelKind::kOutVariant});
  EXPECT_EQ(kinds.at("srt::select_reshape"), std::set<ops::KernelKind>{ops::KernelKind::kNative});
  EXPECT_EQ(kinds.at("srt::reshape_copy"), std::set<ops::KernelKind>{ops::KernelKind::kOutVariant});
}

} // namespace
} // namespace srt::testing
