// passes/copy_variants.cpp: which views become copies into planned memory, which must stay views,
// and that results do not change.
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
  return expectPassPreservesResults(passes::useCopyVariants, preparedGraph(source), inputs,
                                    expect_changed);
}

const char* kPermuteThenReshape = R"JIT(
def forward(self, x):
    y = x.permute(0, 2, 1)
    z = y.reshape(x.size(0), -1)
    return z * 2.0
)JIT";

TEST(CopyVariants, PermuteBeforeReshapeBecomesACopyAndTheReshapeAView) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3, 4})}, {torch::randn({5, 1, 7})}};
  auto rewritten = expectRewrite(kPermuteThenReshape, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::permute_copy"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::permute"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::reshape"), 1u);
  expectMatchesJit(kPermuteThenReshape, asInputSets(inputs));
}

TEST(CopyVariants, TheCopyIsPlannedWhereTheReshapeAllocatedEachRun) {
  StaticModuleOptions without_pass;
  // maybe_copy_variants would plan this reshape's copy too.
  without_pass.disabled_passes = {"copy_variants", "maybe_copy_variants"};
  const ModuleStats with = StaticModule(scriptModule(kPermuteThenReshape)).stats();
  const ModuleStats without = StaticModule(scriptModule(kPermuteThenReshape), without_pass).stats();
  EXPECT_EQ(with.num_managed_tensors, without.num_managed_tensors + 1);
}

TEST(CopyVariants, PermutesThatMatmulWouldCopy) {
  const char* source = R"JIT(
def forward(self, x, w):
    q = x.permute(0, 2, 1, 3)
    k = (x * 2.0).permute(0, 2, 1, 3)
    scores = torch.matmul(q, k.transpose(-2, -1))
    return torch.matmul(scores, q)
)JIT";
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3, 4, 5}), torch::randn({5, 6})},
                                           {torch::randn({1, 7, 2, 3}), torch::randn({3, 2})}};
  auto rewritten = expectRewrite(source, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::permute_copy"), 2u) << *rewritten;
  expectMatchesJit(source, asInputSets(inputs));
}

TEST(CopyVariants, ReshapesOfTransposesBecomeCopies) {
  const char* source = R"JIT(
def forward(self, x):
    a = x.transpose(0, 1).reshape(-1)
    b = torch.flatten(x.t(), 0)
    return a * 2.0 + b
)JIT";
  const std::vector<GraphInputs> inputs = {{torch::randn({3, 4})}, {torch::randn({1, 6})}};
  auto rewritten = expectRewrite(source, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::reshape_copy"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::flatten_copy"), 1u) << *rewritten;
  expectMatchesJit(source, asInputSets(inputs));
}

// Near misses: each would be a valid copy only if nothing could tell it from the view.
TEST(CopyVariants, ViewsStayWhenACopyCouldBeTold) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3, 4})}, {torch::randn({3, 2, 5})}};
  // The caller receives the view.
  expectRewrite(R"JIT(
def forward(self, x):
    return x.permute(0, 2, 1).reshape(-1)
)JIT",
                inputs, false);
  // An element-wise reader takes any strides: a copy would only add work.
  expectRewrite(R"JIT(
def forward(self, x):
    return x.permute(0, 2, 1) + 1.0
)JIT",
                inputs, false);
  // matmul folds batch dims that are still in order without a copy.
  expectRewrite(R"JIT(
def forward(self, x):
    return torch.matmul(x.permute(0, 2, 1), x)
)JIT",
                {{torch::randn({2, 3, 3})}, {torch::randn({4, 5, 5})}}, false);
  // A reader looks at the strides (through a view of the reshaped tensor).
  expectRewrite(R"JIT(
def forward(self, x):
    z = x.transpose(0, 1).reshape(x.size(1), -1)
    w = z.transpose(0, 1)
    return w + 1.0, w.is_contiguous()
)JIT",
                {{torch::randn({3, 4})}, {torch::randn({2, 2})}}, false);
}

// The permute stays a view when one of its readers takes any strides, or when its permutation is
// not a constant; the reshape of it is then the copy.
TEST(CopyVariants, PermutesThatMustStayLeaveTheCopyToTheReshape) {
  auto mixed_readers = expectRewrite(R"JIT(
def forward(self, x):
    y = x.permute(0, 2, 1)
    return y.reshape(-1) * 2.0, y + 1.0
)JIT",
                                     {{torch::randn({2, 3, 4})}, {torch::randn({3, 2, 5})}}, true);
  EXPECT_EQ(countKind(*mixed_readers, "aten::permute"), 1u) << *mixed_readers;
  EXPECT_EQ(countKind(*mixed_readers, "srt::reshape_copy"), 1u);
  auto unknown_dims = expectRewrite(R"JIT(
def forward(self, x, dims: List[int]):
    return x.permute(dims).reshape(-1) * 2.0
)JIT",
                                    {{torch::randn({2, 3}), c10::List<int64_t>({1, 0})}}, true);
  EXPECT_EQ(countKind(*unknown_dims, "aten::permute"), 1u) << *unknown_dims;
  EXPECT_EQ(countKind(*unknown_dims, "srt::reshape_copy"), 1u);
}

TEST(CopyVariants, ViewsWrittenInPlaceStayViews) {
  // add_ through the view writes x too; a copy would not.
  expectRewrite(R"JIT(
def forward(self, x):
    x = x * 1.0
    y = x.permute(1, 0)
    y.add_(1.0)
    return x.reshape(-1) + y.reshape(-1)
)JIT",
                {{torch::randn({2, 3})}, {torch::randn({4, 1})}}, false);
}

} // namespace
} // namespace srt::testing
