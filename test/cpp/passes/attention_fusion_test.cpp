// attention_fusion (passes/attention_fusion.cpp): which spellings of softmax(q @ kᵀ * scale
// [+ mask]) @ v become srt::attention, which near-misses do not, and that results do not change
// (through the JIT, and through StaticModule with the fused kernel).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

// The zoo's spelling: scale by a constant, the Optional mask behind `if mask is not None`.
const char* kOptionalMask = R"JIT(
def forward(self, q, k, v, mask: Optional[Tensor]=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) * 0.25
    if mask is not None:
        scores = scores + mask
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT";

// mask + scores (the mask on the left), div by the scale, k transposed positively after a
// permute that fixes its rank.
const char* kDivLeftMaskPermutedKey = R"JIT(
def forward(self, q, k, v, mask):
    kt = k.permute(0, 1, 3, 2)
    scores = torch.matmul(q, kt) / 4.0
    return torch.matmul(torch.softmax(mask + scores, -1), v)
)JIT";

const char* kNoScaleNoMask = R"JIT(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-1, -2)), -1), v)
)JIT";

at::Tensor randn(at::IntArrayRef shape) {
  return torch::randn(shape);
}

// Two shapes each: batch 1 and > 1, 4-D heads and 3-D.
std::vector<GraphInputs> qkvSets() {
  return {{randn({1, 2, 5, 8}), randn({1, 2, 5, 8}), randn({1, 2, 5, 8})},
          {randn({3, 4, 7, 16}), randn({3, 4, 9, 16}), randn({3, 4, 9, 6})},
          {randn({2, 6, 8}), randn({2, 6, 8}), randn({2, 6, 8})}};
}

std::vector<GraphInputs> withMask(std::vector<GraphInputs> sets, bool none_too) {
  std::vector<GraphInputs> result;
  for (GraphInputs& set : sets) {
    const at::Tensor& q = set[0].toTensor();
    const at::Tensor& k = set[1].toTensor();
    std::vector<int64_t> scores(q.sizes().begin(), q.sizes().end());
    scores.back() = k.size(-2);
    GraphInputs masked = set;
    masked.emplace_back(randn(scores)); // full [.., Sq, Sk]
    result.push_back(masked);
    GraphInputs broadcast = set;
    broadcast.emplace_back(randn({q.size(-2), k.size(-2)})); // [Sq, Sk], broadcast over batch
    result.push_back(broadcast);
    if (none_too) {
      set.emplace_back(c10::IValue());
      result.push_back(set);
    }
  }
  return result;
}

void expectFusedOnce(const std::shared_ptr<torch::jit::Graph>& graph) {
  EXPECT_EQ(countKind(*graph, "srt::attention"), 1u) << *graph;
  for (const char* gone : {"aten::softmax", "aten::matmul", "aten::transpose", "aten::permute",
                           "aten::mul", "aten::div", "aten::add", "prim::If"}) {
    EXPECT_EQ(countKind(*graph, gone), 0u) << gone << " left in\n" << *graph;
  }
}

TEST(AttentionFusion, FusesTheOptionalMaskBranch) {
  auto fused = expectPassPreservesResults(passes::fuseAttention, preparedGraph(kOptionalMask),
                                          withMask(qkvSets(), /*none_too=*/true),
                                          /*expect_changed=*/true);
  expectFusedOnce(fused);
  EXPECT_EQ(countKind(*fused, "aten::__isnot__"), 0u) << *fused;
}

TEST(AttentionFusion, FusesDivScaleLeftMaskAndPermutedKey) {
  std::vector<GraphInputs> sets;
  for (GraphInputs set : withMask(qkvSets(), /*none_too=*/false)) {
    if (set[0].toTensor().dim() == 4) {
      sets.push_back(set);
    }
  }
  expectFusedOnce(expectPassPreservesResults(passes::fuseAttention,
                                             preparedGraph(kDivLeftMaskPermutedKey), sets, true));
}

TEST(AttentionFusion, FusesWithoutScaleOrMask) {
  expectFusedOnce(expectPassPreservesResults(passes::fuseAttention, preparedGraph(kNoScaleNoMask),
                                             qkvSets(), true));
}

// Scales on q, on k before its transpose and after a -inf fill multiply; the boolean mask fills.
const char* kFillMaskScattteredScales = R"JIT(
def forward(self, q, k, v, mask):
    kt = (k / 2.0).transpose(-2, -1)
    scores = torch.matmul(q * 0.5, kt).masked_fill(mask, float("-inf")) * 1.5
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT";

std::vector<GraphInputs> withBoolMask(std::vector<GraphInputs> sets) {
  for (GraphInputs& set : sets) {
    const int64_t sq = set[0].toTensor().size(-2);
    const int64_t sk = set[1].toTensor().size(-2);
    at::Tensor mask = torch::rand({sq, sk}) > 0.6;
    mask.select(1, 0).fill_(false); // one key left per row
    set.emplace_back(mask);
  }
  return sets;
}

TEST(AttentionFusion, FusesFillMaskAndScalesAnywhere) {
  auto fused =
      expectPassPreservesResults(passes::fuseAttention, preparedGraph(kFillMaskScattteredScales),
                                 withBoolMask(qkvSets()), true);
  expectFusedOnce(fused);
  EXPECT_EQ(countKind(*fused, "aten::masked_fill"), 0u) << *fused;
  expectMatchesJit(kFillMaskScattteredScales, asInputSets(withBoolMask(qkvSets())));
}

// Scales only known at run time: multiplied into the fused node's scale by float ops.
const char* kRunTimeScales = R"JIT(
def forward(self, q, k, v, scale: float):
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale * k.size(-1) ** -0.5
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT";

TEST(AttentionFusion, FusesRunTimeScales) {
  std::vector<GraphInputs> sets = qkvSets();
  for (GraphInputs& set : sets) {
    set.emplace_back(0.75);
  }
  auto fused =
      expectPassPreservesResults(passes::fuseAttention, preparedGraph(kRunTimeScales), sets, true);
  EXPECT_EQ(countKind(*fused, "srt::attention"), 1u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::softmax"), 0u) << *fused;
  expectMatchesJit(kRunTimeScales, asInputSets(sets));
}

// nn.MultiheadAttention's slow path (F.multi_head_attention_forward in PyTorch 1.13): q divided by
// the square root of its run-time size, baddbmm adding the mask, bmm; the 3-D ranks fixed by
// the unpacked shapes (by views, in the module).
const char* kSlowPathCore = R"JIT(
def forward(self, q, k, v, mask):
    B, T, E = q.shape
    Bk, S, Ek = k.shape
    q = q / float(E) ** 0.5
    scores = torch.baddbmm(mask, q, k.transpose(-2, -1))
    return torch.bmm(torch.softmax(scores, dim=-1), v.view(B, S, -1))
)JIT";

// The same with its mask Optional: baddbmm or bmm behind `if attn_mask is not None`.
const char* kSlowPathOptionalMask = R"JIT(
def forward(self, q, k, v, mask: Optional[Tensor]=None):
    B, T, E = q.shape
    Bk, S, Ek = k.shape
    q = q / float(E) ** 0.5
    if mask is not None:
        scores = torch.baddbmm(mask, q, k.transpose(-2, -1))
    else:
        scores = torch.bmm(q, k.transpose(-2, -1))
    return torch.bmm(torch.softmax(scores, dim=-1), v.view(B, S, -1))
)JIT";

std::vector<GraphInputs> qkv3dSets() {
  return {{randn({2, 6, 8}), randn({2, 6, 8}), randn({2, 6, 8})},
          {randn({3, 7, 16}), randn({3, 9, 16}), randn({3, 9, 6})}};
}

TEST(AttentionFusion, FusesTheMultiheadAttentionSlowPath) {
  for (const char* source : {kSlowPathCore, kSlowPathOptionalMask}) {
    const bool optional = source == kSlowPathOptionalMask;
    const std::vector<GraphInputs> sets = withMask(qkv3dSets(), /*none_too=*/optional);
    auto fused =
        expectPassPreservesResults(passes::fuseAttention, preparedGraph(source), sets, true);
    EXPECT_EQ(countKind(*fused, "srt::attention"), 1u) << *fused;
    for (const char* gone : {"aten::softmax", "aten::bmm", "aten::baddbmm", "prim::If"}) {
      EXPECT_EQ(countKind(*fused, gone), 0u) << gone << " left in\n" << *fused;
    }
    // q / sqrt(E) became the fused node's scale: it reads q itself (the one div left divides
    // floats).
    for (const torch::jit::Node* node : fused->nodes()) {
      if (node->kind().toQualString() == std::string("srt::attention")) {
        EXPECT_EQ(node->input(0), fused->inputs()[0]) << *fused;
      }
    }
    expectMatchesJit(source, asInputSets(sets));
  }
}

TEST(AttentionFusion, MatchesJitThroughStaticModule) {
  expectMatchesJit(kOptionalMask, asInputSets(withMask(qkvSets(), true)));
  expectMatchesJit(kNoScaleNoMask, asInputSets(qkvSets()));
}

struct NearMiss {
  const char* why;
  const char* source;
};

const NearMiss kNearMisses[] = {
    {"softmax over another dim", R"JIT(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, -2), v)
)JIT"},
    {"softmax over dim 3 of a tensor of unknown rank", R"JIT(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, 3), v)
)JIT"},
    {"scores used elsewhere", R"JIT(
def forward(self, q, k, v):
    scores = torch.matmul(q, k.transpose(-2, -1)) * 0.25
    return torch.matmul(torch.softmax(scores, -1), v), scores
)JIT"},
    {"attention weights used elsewhere", R"JIT(
def forward(self, q, k, v):
    weights = torch.softmax(torch.matmul(q, k.transpose(-2, -1)), -1)
    return torch.matmul(weights, v), weights
)JIT"},
    {"transpose of other dims", R"JIT(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-3, -1)), -1), v)
)JIT"},
    {"transpose(2, 3) of a tensor of unknown rank", R"JIT(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(2, 3)), -1), v)
)JIT"},
    {"mask added with alpha 2", R"JIT(
def forward(self, q, k, v, mask):
    scores = torch.add(torch.matmul(q, k.transpose(-2, -1)), mask, alpha=2)
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT"},
    {"masked_fill with a finite value (replaces, not adds)", R"JIT(
def forward(self, q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1)).masked_fill(mask, -1e9)
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT"},
    {"scale after an additive mask (scales the mask too)", R"JIT(
def forward(self, q, k, v, mask):
    scores = (torch.matmul(q, k.transpose(-2, -1)) + mask) * 0.25
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT"},
    {"negative scale after a -inf fill", R"JIT(
def forward(self, q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1)).masked_fill(mask, float("-inf")) * -0.5
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT"},
    {"a run-time scale after an additive mask", R"JIT(
def forward(self, q, k, v, mask):
    scores = (torch.matmul(q, k.transpose(-2, -1)) + mask) * k.size(-1) ** -0.5
    return torch.matmul(torch.softmax(scores, -1), v)
)JIT"},
    {"bmm of tensors of unknown rank (it raises on 4-D ones, the fused op would not)", R"JIT(
def forward(self, q, k, v):
    return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(-2, -1)), -1), v)
)JIT"},
    {"baddbmm with beta 2 (scales the mask)", R"JIT(
def forward(self, q, k, v, mask):
    B, T, E = q.shape
    Bk, S, Ek = k.shape
    scores = torch.baddbmm(mask, q, k.transpose(-2, -1), beta=2.0)
    return torch.bmm(torch.softmax(scores, -1), v.view(B, S, -1))
)JIT"},
    {"the masked branch's baddbmm scaled, the other's bmm not", R"JIT(
def forward(self, q, k, v, mask: Optional[Tensor]):
    B, T, E = q.shape
    Bk, S, Ek = k.shape
    if mask is not None:
        scores = torch.baddbmm(mask, q, k.transpose(-2, -1), alpha=0.5)
    else:
        scores = torch.bmm(q, k.transpose(-2, -1))
    return torch.bmm(torch.softmax(scores, -1), v.view(B, S, -1))
)JIT"},
    {"softmax to another dtype", R"JIT(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)), -1, 6), v)
)JIT"},
};

TEST(AttentionFusion, LeavesNearMissesAlone) {
  for (const NearMiss& miss : kNearMisses) {
    SCOPED_TRACE(miss.why);
    auto graph = preparedGraph(miss.source);
    auto copy = graph->copy();
    EXPECT_FALSE(passes::fuseAttention(copy)) << *copy;
    EXPECT_EQ(countKind(*copy, "srt::attention"), 0u) << *copy;
  }
}

TEST(AttentionFusion, LeavesAWrittenInputAlone) {
  // v is written in place after the point where the fused node would read it.
  auto graph = parsedGraph(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %one : int = prim::Constant[value=1]()
  %kt : Tensor = aten::transpose(%k, %m2, %m1)
  %s : Tensor = aten::matmul(%q, %kt)
  %p : Tensor = aten::softmax(%s, %m1, %none)
  %w : Tensor = aten::add_(%v, %one, %one)
  %out : Tensor = aten::matmul(%p, %v)
  return (%out)
)IR");
  EXPECT_FALSE(passes::fuseAttention(graph)) << *graph;
}

TEST(AttentionFusion, FusesEveryBlockOfATwoLayerGraph) {
  const char* source = R"JIT(
def forward(self, q, k, v):
    a = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.5, -1), v)
    return torch.matmul(torch.softmax(torch.matmul(a, k.transpose(-2, -1)) * 0.5, -1), v)
)JIT";
  const std::vector<GraphInputs> sets = {{randn({2, 3, 4}), randn({2, 3, 4}), randn({2, 3, 4})},
                                         {randn({1, 5, 8}), randn({1, 5, 8}), randn({1, 5, 8})}};
  auto fused = expectPassPreservesResults(passes::fuseAttention, preparedGraph(source), sets, true);
  EXPECT_EQ(countKind(*fused, "srt::attention"), 2u) << *fused;
  expectMatchesJit(source, asInputSets(sets));
}

} // namespace
} // namespace srt::testing
