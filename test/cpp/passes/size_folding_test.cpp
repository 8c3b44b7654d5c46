// size_folding (passes/size_folding.cpp): x.size(d) becomes a constant where the graph fixes it,
// and, where only a linear reading x fixes it, in the block of that linear: the cross-attention
// projection of nn.MultiheadAttention (F._in_projection_packed) then gets constant weights.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

// F._in_projection_packed as nn.MultiheadAttention calls it: one constant [3E, E] weight, split
// by the query's size when the query is not the key (cross-attention), chunked otherwise.
torch::jit::Module inProjection() {
  torch::jit::Module module("InProjection");
  module.register_parameter("w", torch::randn({24, 8}) * 0.3, false);
  module.register_parameter("b", torch::randn({24}), false);
  module.define(R"JIT(
def forward(self, q, k):
    E = q.size(-1)
    if q is k:
        qkv = torch.linear(q, self.w, self.b).chunk(3, -1)
        return qkv[0], qkv[1] + qkv[2]
    else:
        w_q, w_kv = self.w.split([E, E * 2])
        b_q, b_kv = self.b.split([E, E * 2])
        kv = torch.linear(k, w_kv, b_kv).chunk(2, -1)
        return torch.linear(q, w_q, b_q), kv[0] + kv[1]
)JIT");
  module.eval();
  return module;
}

TEST(SizeFolding, CrossAttentionProjectionGetsConstantWeights) {
  const torch::Tensor same = torch::randn({2, 5, 8});
  expectMatchesJit(inProjection(),
                   {{{torch::randn({2, 5, 8}), torch::randn({2, 7, 8})}, {}},
                    {{torch::randn({3, 4, 8}), torch::randn({3, 9, 8})}, {}},
                    {{same, same}, {}}},
                   {}, 1e-5);
  const StaticModule module(inProjection());
  const auto kinds = kernelKinds(module);
  for (const auto& [kind, kernel_kinds] : kinds) {
    EXPECT_EQ(kind.find("split"), std::string::npos) << kind << " left in\n" << module.graph();
  }
  EXPECT_EQ(kinds.count("aten::linear"), 0u) << module.graph(); // packed linears only
}

TEST(SizeFolding, InputsOfAnotherSizeStillRaise) {
  torch::jit::Module reference = inProjection();
  StaticModule module(reference);
  EXPECT_THROW(module({torch::randn({2, 5, 6}), torch::randn({2, 7, 6})}), c10::Error);
  const torch::Tensor q = torch::randn({1, 3, 8});
  const torch::Tensor k = torch::randn({1, 4, 8});
  const auto expected = reference.forward({q, k}).toTupleRef().elements();
  const auto actual = module({q, k}).toTupleRef().elements();
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(torch::allclose(actual[i].toTensor(), expected[i].toTensor(), 1e-5, 1e-5)) << i;
  }
}

// A size only the caller's tensor decides, and a size read in a block without the linear.
TEST(SizeFolding, KeepsSizesNothingFixes) {
  auto graph = passes::prepareModule(scriptModule(R"JIT(
def forward(self, x, w, flag: bool):
    n = x.size(-1)
    if flag:
        return torch.linear(x, w) * n
    return x * n
)JIT"))
                   .graph;
  auto folded = expectPassPreservesResults(passes::foldKnownSizes, graph,
                                           {{torch::randn({2, 3}), torch::randn({4, 3}), true},
                                            {torch::randn({5, 6}), torch::randn({2, 6}), false}},
                                           /*expect_changed=*/false);
  EXPECT_EQ(countKind(*folded, "aten::size"), 1u) << *folded;
}

} // namespace
} // namespace srt::testing
