// passes/list_unpack_fusion.cpp and its kernels (ops/shapes/list_unpack.cpp): chunk/split/unbind
// whose list is only unpacked become one node with one output per piece.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

std::shared_ptr<torch::jit::Graph>
expectRewrite(const char* source, const std::vector<GraphInputs>& inputs, bool expect_changed) {
  return expectPassPreservesResults(passes::fuseListUnpack, preparedGraph(source), inputs,
                                    expect_changed);
}

const char* kEveryFamily = R"JIT(
def forward(self, x):
    a, b, c = x.chunk(3, -1)
    d, e = torch.split(x, 3, 1)
    f, g = torch.split(x, [2, 4], 1)
    h, i = x.unbind(0)
    return a * 1.0, b + c, d - e, f.sum() + g.sum(), h * i
)JIT";

TEST(ListUnpackFusion, EveryFamilyBecomesOneNode) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 6})}, {torch::randn({2, 6}).mul(3)}};
  auto rewritten = expectRewrite(kEveryFamily, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::chunk_unpack_3"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::split_unpack_2"), 1u);
  EXPECT_EQ(countKind(*rewritten, "srt::split_with_sizes_unpack_2"), 1u);
  EXPECT_EQ(countKind(*rewritten, "srt::unbind_unpack_2"), 1u);
  EXPECT_EQ(countKind(*rewritten, "prim::ListUnpack"), 0u);
  expectMatchesJit(kEveryFamily, asInputSets(inputs));
  expectKinds(kEveryFamily, {{"srt::chunk_unpack_3", ops::KernelKind::kNative},
                             {"srt::unbind_unpack_2", ops::KernelKind::kNative}});
}

// The pieces are views of the input, and AliasDb knows: the planner keeps the input alive.
TEST(ListUnpackFusion, PiecesAliasTheInput) {
  auto graph = preparedGraph(R"JIT(
def forward(self, x):
    a, b = (x * 2.0).chunk(2, 0)
    return a + b
)JIT");
  passes::fuseListUnpack(graph);
  torch::jit::Node* fused = nullptr;
  for (torch::jit::Node* node : graph->nodes()) {
    if (node->kind() == c10::Symbol::fromQualString("srt::chunk_unpack_2")) {
      fused = node;
    }
  }
  ASSERT_NE(fused, nullptr) << *graph;
  torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
  EXPECT_TRUE(alias_db.mayAlias(fused->output(0), fused->input(0)));
  EXPECT_TRUE(alias_db.mayAlias(fused->output(1), fused->input(0)));
}

TEST(ListUnpackFusion, PieceCountMismatchIsAnError) {
  // chunk(3) of a dim of size 2 gives 2 pieces, not 3: an error in the JIT, and in ours.
  const char* source = R"JIT(
def forward(self, x):
    a, b, c = x.chunk(3, 0)
    return a + b + c
)JIT";
  StaticModule module(scriptModule(source));
  EXPECT_EQ(countKind(module.graph(), "srt::chunk_unpack_3"), 1u);
  EXPECT_THROW((void)module({torch::randn({2, 2})}), c10::Error);
  EXPECT_NO_THROW((void)module({torch::randn({3, 2})}));
}

TEST(ListUnpackFusion, ListsUsedOtherwiseStay) {
  const std::vector<GraphInputs> inputs = {{torch::randn({4, 2})}, {torch::randn({4, 3})}};
  // Returned as a list.
  expectRewrite(R"JIT(
def forward(self, x):
    return x.chunk(2, 0)
)JIT",
                inputs, false);
  // Indexed and unpacked.
  expectRewrite(R"JIT(
def forward(self, x):
    l = x.split(2, 0)
    a, b = l
    return a + b, l[0]
)JIT",
                inputs, false);
}

} // namespace
} // namespace srt::testing
