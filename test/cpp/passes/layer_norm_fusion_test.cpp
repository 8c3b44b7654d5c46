// layer_norm_fusion: hand-written layer norms become aten::layer_norm; near-misses stay.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

// `weight` and `bias` fold to constant tensors during preparation, like a frozen module's.
std::string layerNormSource(const std::string& body, const std::string& returned = "y") {
  return R"JIT(
def forward(self, x):
    weight = torch.linspace(0.5, 1.5, 8)
    bias = torch.linspace(-1.0, 1.0, 8)
)JIT" + body +
         "    return " + returned + "\n";
}

const std::string kMeanOfSquares = R"JIT(
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered ** 2).mean(-1, keepdim=True)
    y = centered / torch.sqrt(var + 1e-5) * weight + bias
)JIT";

const std::string kVarRsqrt = R"JIT(
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    y = weight * ((x - mean) * torch.rsqrt(var + 1e-6)) + bias
)JIT";

std::vector<GraphInputs> inputSets() {
  return {{torch::randn({2, 8})}, {torch::randn({3, 5, 8}) * 4 + 1}};
}

TEST(LayerNormFusion, FusesTheCommonSpellings) {
  for (const std::string& body : {kMeanOfSquares, kVarRsqrt}) {
    SCOPED_TRACE(body);
    auto fused = expectPassPreservesResults(passes::fuseLayerNorm,
                                            preparedGraph(layerNormSource(body)), inputSets(),
                                            /*expect_changed=*/true);
    EXPECT_EQ(countKind(*fused, "aten::layer_norm"), 1u) << *fused;
    EXPECT_EQ(countKind(*fused, "aten::mean"), 0u) << *fused;
    expectMatchesJit(layerNormSource(body),
                     {{{torch::randn({2, 8})}}, {{torch::randn({4, 3, 8})}}});
  }
}

TEST(LayerNormFusion, LeavesNearMissesAlone) {
  const std::vector<std::pair<std::string, std::string>> near_misses = {
      {"unbiased variance", R"JIT(
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=True)
    y = weight * ((x - mean) * torch.rsqrt(var + 1e-6)) + bias
)JIT"},
      {"mean over the first dim", R"JIT(
    mean = x.mean(0, keepdim=True)
    centered = x - mean
    var = (centered ** 2).mean(-1, keepdim=True)
    y = centered / torch.sqrt(var + 1e-5) * weight + bias
)JIT"},
      {"cubed, not squared", R"JIT(
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered ** 3).mean(-1, keepdim=True)
    y = centered / torch.sqrt(var + 1e-5) * weight + bias
)JIT"},
  };
  for (const auto& [name, body] : near_misses) {
    SCOPED_TRACE(name);
    auto graph = preparedGraph(layerNormSource(body));
    auto rewritten = expectPassPreservesResults(passes::fuseLayerNorm, graph, inputSets(),
                                                /*expect_changed=*/false);
    EXPECT_EQ(countKind(*rewritten, "aten::layer_norm"), 0u) << *rewritten;
  }
  // An intermediate the caller also receives must stay computed.
  auto graph = preparedGraph(layerNormSource(kMeanOfSquares, "y, centered"));
  auto rewritten = expectPassPreservesResults(passes::fuseLayerNorm, graph, inputSets(),
                                              /*expect_changed=*/false);
  EXPECT_EQ(countKind(*rewritten, "aten::layer_norm"), 0u) << *rewritten;
}

} // namespace
} // namespace srt::testing
