// passes/maybe_copy_variants.cpp: aten::to and strided reshapes split into a planned maybe-copy and
// a select, with exactly the op's results and aliasing.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

std::shared_ptr<torch::jit::Graph>
expectRewrite(const char* source, const std::vector<GraphInputs>& inputs, bool expect_changed) {
  return expectPassPreservesResults(passes::useMaybeCopyVariants, preparedGraph(source), inputs,
                                    expect_changed);
}

// dtype=6 is torch.float32: a no-op for the float input, a conversion for the double one.
const char* kToFloat = R"JIT(
def forward(self, x, y):
    a = x.to(dtype=6)
    b = x.to(y)
    c = x.to(6, False, True)
    return a * 2.0 + b + c
)JIT";

TEST(MaybeCopyVariants, ToBecomesAMaybeCopyAndASelect) {
  const std::vector<GraphInputs> inputs = {
      {torch::randn({2, 3}), torch::randn({1})},
      {torch::randn({4, 1}, torch::kFloat64), torch::randn({1}, torch::kFloat64)},
      {torch::randn({3, 5}).t(), torch::randn({1}, torch::kFloat64)}};
  auto rewritten = expectRewrite(kToFloat, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::to_maybe_copy"), 3u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::select_tensor"), 3u);
  EXPECT_EQ(countKind(*rewritten, "aten::to"), 0u);
  expectMatchesJit(kToFloat, asInputSets(inputs));
}

TEST(MaybeCopyVariants, TheCopiesArePlanned) {
  StaticModuleOptions without_pass;
  without_pass.disabled_passes = {"maybe_copy_variants"};
  const ModuleStats with = StaticModule(scriptModule(kToFloat)).stats();
  const ModuleStats without = StaticModule(scriptModule(kToFloat), without_pass).stats();
  // Both plan the copies (aten::to's kernel always copies); the split ones copy only when needed.
  EXPECT_EQ(with.num_managed_tensors, without.num_managed_tensors);
  EXPECT_EQ(with.out_variant_nodes, without.out_variant_nodes);
}

TEST(MaybeCopyVariants, ReshapeOfAStridedViewCopiesOnlyWhenItMust) {
  const char* source = R"JIT(
def forward(self, x):
    a = x[:, 1:].reshape(-1)
    b = x.chunk(2, 0)[0].reshape(-1)
    return a.sum() + b * 2.0
)JIT";
  // Rows sliced from a contiguous tensor: no view of x[:, 1:] as one dim, but chunk rows are.
  const std::vector<GraphInputs> inputs = {
      {torch::randn({2, 3})}, {torch::randn({4, 1})}, {torch::randn({6, 4}).t()}};
  auto rewritten = expectRewrite(source, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::reshape_maybe_copy"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::select_reshape"), 1u);
  expectMatchesJit(source, asInputSets(inputs));
}

TEST(MaybeCopyVariants, LeavesWhatCannotBePlannedOrGainsNothing) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3})},
                                           {torch::randn({2, 3}, torch::kFloat64)}};
  // Returned: the caller's copy cannot be planned memory.
  expectRewrite(R"JIT(
def forward(self, x):
    return x.to(dtype=6)
)JIT",
                inputs, false);
  // A reshape of a fresh (contiguous) tensor is a view: one native node is cheaper than two.
  expectRewrite(R"JIT(
def forward(self, x):
    return (x * 2.0).reshape(-1) + 1.0
)JIT",
                inputs, false);
  // Another memory format than preserve.
  expectRewrite(R"JIT(
def forward(self, x):
    return x.to(6, False, False, 0) + 1.0
)JIT",
                inputs, false);
}

} // namespace
} // namespace srt::testing
