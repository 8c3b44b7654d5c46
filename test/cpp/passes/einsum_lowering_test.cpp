// passes/einsum_lowering.cpp: two-operand einsums that are one matrix product become matmuls.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

std::vector<InputSet> asInputSets(const std::vector<GraphInputs>& inputs) {
  std::vector<InputSet> sets;
  for (const GraphInputs& args : inputs) {
    sets.push_back({args, {}});
  }
  return sets;
}

// MaxViT's attention (q kᵀ then weights v, with batch, window and head dims), a plain mm, an
// output in another order than [batch, M, N], and an operand whose contracted dim comes first.
const char* kMatmulEinsums = R"JIT(
def forward(self, q, k, v, a, b):
    scores = torch.einsum("b n h i d, b n h j d -> b n h i j", [q, k])
    out = torch.einsum("bnhij,bnhjd->bnhid", [scores.softmax(-1), v])
    swapped = torch.einsum("bnhid,bnhjd->jbnhi", [q, k])
    product = torch.einsum("ij,jk->ik", [a, b])
    left_first = torch.einsum("ji,jk->ki", [a.t(), b])
    return out, swapped, product, left_first
)JIT";

TEST(EinsumLowering, OneMatrixProductBecomesAMatmul) {
  const std::vector<GraphInputs> inputs = {
      {torch::randn({1, 2, 3, 4, 5}), torch::randn({1, 2, 3, 6, 5}), torch::randn({1, 2, 3, 6, 7}),
       torch::randn({3, 4}), torch::randn({4, 5})},
      {torch::randn({2, 1, 2, 3, 8}), torch::randn({2, 1, 2, 5, 8}), torch::randn({2, 1, 2, 5, 2}),
       torch::randn({6, 2}), torch::randn({2, 1})}};
  auto rewritten =
      expectPassPreservesResults(passes::lowerEinsums, preparedGraph(kMatmulEinsums), inputs, true);
  EXPECT_EQ(countKind(*rewritten, "aten::einsum"), 0u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::matmul"), 5u) << *rewritten;
  expectMatchesJit(kMatmulEinsums, asInputSets(inputs), 1e-4);
  EXPECT_EQ(StaticModule(scriptModule(kMatmulEinsums)).stats().fallback_nodes, 0u);
}

// Groups of free or contracted indices (flattened into one dim), none of them (a dim of one),
// and a leading `...` on either operand, as models write them: MViT's relative positions, a
// contraction over two indices, an outer product, a batched dot product, a matrix-vector
// product, attention scores over `...` batch dims, and a weight shared across `...`.
const char* kGroupedEinsums = R"JIT(
def forward(self, r, R, a, b, q, k):
    rel = torch.einsum("bythwc,hkc->bythwk", [r, R])
    pairs = torch.einsum("ijk,jkl->il", [a, b])
    outer = torch.einsum("ij,ik->ijk", [a[:, :, 0], a[:, 0, :]])
    dots = torch.einsum("bi,bi->b", [a[:, 0, :], a[:, 1, :]])
    matvec = torch.einsum("ij,j->i", [a[:, :, 0], b[:, 0, 0]])
    scores = torch.einsum("...id,...jd->...ij", [q, k])
    shared = torch.einsum("...id,de->...ie", [q, b[0]])
    return rel, pairs, outer, dots, matvec, scores, shared
)JIT";

TEST(EinsumLowering, GroupedAndMissingIndicesAndLeadingEllipsisBecomeAMatmul) {
  const std::vector<GraphInputs> inputs = {
      {torch::randn({2, 3, 2, 4, 5, 6}), torch::randn({4, 7, 6}), torch::randn({3, 4, 4}),
       torch::randn({4, 4, 5}), torch::randn({2, 3, 5, 4}), torch::randn({2, 3, 6, 4})},
      {torch::randn({1, 2, 3, 3, 2, 8}), torch::randn({3, 5, 8}), torch::randn({2, 3, 3}),
       torch::randn({3, 3, 3}), torch::randn({4, 3}), torch::randn({1, 2, 3})}};
  auto rewritten = expectPassPreservesResults(passes::lowerEinsums, preparedGraph(kGroupedEinsums),
                                              inputs, true);
  EXPECT_EQ(countKind(*rewritten, "aten::einsum"), 0u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::matmul"), 7u) << *rewritten;
  expectMatchesJit(kGroupedEinsums, asInputSets(inputs), 1e-4);
  EXPECT_EQ(StaticModule(scriptModule(kGroupedEinsums)).stats().fallback_nodes, 0u);
}

// Sums over one operand's index or over the `...` dims, diagonals, `...` after an index, three
// operands and an implicit output are not one matmul: ATen's einsum keeps them.
TEST(EinsumLowering, OtherEquationsStayEinsums) {
  const char* source = R"JIT(
def forward(self, a, b):
    return (torch.einsum("ij,jk->k", [a, b]), torch.einsum("ii,ij->ij", [a, a]),
            torch.einsum("i...,ij->j", [a, b]), torch.einsum("ij,jk,kl->il", [a, b, b.t()]),
            torch.einsum("ij,jk", [a, b]), torch.einsum("...j,jk->k", [a, b]))
)JIT";
  const std::vector<GraphInputs> inputs = {{torch::randn({3, 3}), torch::randn({3, 3})}};
  auto rewritten =
      expectPassPreservesResults(passes::lowerEinsums, preparedGraph(source), inputs, false);
  EXPECT_EQ(countKind(*rewritten, "aten::einsum"), 6u) << *rewritten;
}

} // namespace
} // namespace srt::testing
