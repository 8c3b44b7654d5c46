// passes/aten_decompositions.cpp: 1-D pooling runs as 2-D pooling over a height of one, selu as
// elu, eval rrelu and one-slope prelu as leaky_relu and pairwise_distance as norm, with the JIT's
// values for every argument form; run-time arguments stay as they are. cosine_similarity runs as
// ATen's composite.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// Audio classifiers' pooling after 1-D convolutions, and each argument of each op.
constexpr const char* kPoolingForms = R"JIT(
def forward(self, x):
    a = torch.max_pool1d(x, [3])
    b = torch.max_pool1d(x, [3], [2], [1], [2], True)
    c = torch.avg_pool1d(x, [4], [2], [1], True, False)
    d = torch.avg_pool1d(torch.relu(x), [2])
    e = torch.adaptive_avg_pool1d(x, [3])
    f, g = torch.adaptive_max_pool1d(x, [4])
    return a, b, c, d, e, f, g
)JIT";

TEST(AtenDecompositions, OneDimensionalPoolingMatchesJit) {
  expectMatchesJit(kPoolingForms, {{{torch::randn({2, 6, 17})}},
                                   {{torch::randn({1, 6, 24})}},
                                   {{torch::randn({5, 11})}}, // unbatched [C, L]
                                   {{torch::randn({3, 20, 6}).transpose(1, 2)}}});
  StaticModule module(scriptModule(kPoolingForms));
  const auto kinds = kernelKinds(module);
  for (const char* op : {"aten::max_pool1d", "aten::avg_pool1d", "aten::adaptive_avg_pool1d",
                         "aten::adaptive_max_pool1d"}) {
    EXPECT_EQ(kinds.count(op), 0u) << op << " left in\n" << module.graph();
  }
  for (const char* op : {"aten::max_pool2d", "aten::avg_pool2d", "aten::adaptive_avg_pool2d",
                         "aten::adaptive_max_pool2d"}) {
    ASSERT_TRUE(kinds.count(op)) << op << " not in\n" << module.graph();
    EXPECT_EQ(kinds.at(op), std::set<KernelKind>{KernelKind::kOutVariant}) << op;
  }
  EXPECT_EQ(module.stats().fallback_nodes, 0u) << module.graph();
}

// Pooling after a 1-D convolution (conv1d_lowering makes it 2-D too), as audio models write it.
TEST(AtenDecompositions, PoolingAfterConvolutionMatchesJit) {
  torch::jit::Module module("ConvPool");
  module.register_parameter("w", torch::randn({16, 4, 5}) * 0.3, false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv1d(x, self.w, None, 1, 2))
    return torch.max_pool1d(y, [2]), torch.adaptive_avg_pool1d(y, [1])
)JIT");
  module.eval();
  expectMatchesJit(module, {{{torch::randn({2, 4, 32})}, {}}, {{torch::randn({1, 4, 19})}, {}}}, {},
                   1e-5);
}

TEST(AtenDecompositions, SeluIsAtensEluBitForBit) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return torch.selu(x)
)JIT"));
  EXPECT_EQ(kernelKinds(module).count("aten::selu"), 0u) << module.graph();
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{3, 70}, {1, 5}, {2, 3, 17}}) {
    const torch::Tensor x = torch::randn(sizes) * 3.0;
    for (int call = 0; call < 2; ++call) {
      EXPECT_TRUE(torch::equal(module({x}).toTensor(), torch::selu(x)));
    }
  }
}

// nn.RReLU in eval, default and given bounds; in training (random slopes), with bounds the wrong
// way round (ATen's error) or known only at run time it stays ATen's.
TEST(AtenDecompositions, EvalRreluIsAtensLeakyReluBitForBit) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return (torch.rrelu(x), torch.rrelu(x, 0.1, 0.3), torch.rrelu(x, 0.2, 0.2, False),
            torch.rrelu(x, 0, 1))
)JIT"));
  EXPECT_EQ(kernelKinds(module).count("aten::rrelu"), 0u) << module.graph();
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{3, 70}, {2, 3, 17}}) {
    const torch::Tensor x = torch::randn(sizes) * 3.0;
    for (int call = 0; call < 2; ++call) {
      const auto outputs = module({x}).toTupleRef().elements();
      EXPECT_TRUE(torch::equal(outputs[0].toTensor(), torch::rrelu(x)));
      EXPECT_TRUE(torch::equal(outputs[1].toTensor(), torch::rrelu(x, 0.1, 0.3)));
      EXPECT_TRUE(torch::equal(outputs[2].toTensor(), torch::rrelu(x, 0.2, 0.2)));
      EXPECT_TRUE(torch::equal(outputs[3].toTensor(), torch::rrelu(x, 0, 1)));
    }
  }
  auto graph = passes::prepareModule(scriptModule(R"JIT(
def forward(self, x, upper: float):
    return torch.rrelu(x, 0.1, upper), torch.rrelu(x, 0.3, 0.1), torch.rrelu(x, 0.1, 0.3, True)
)JIT"))
                   .graph;
  EXPECT_FALSE(passes::decomposeAtenOps(graph)) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::rrelu"), 3u) << *graph;
}

// nn.PReLU() (one slope) as leaky_relu, the same bits, fused into the convolution before it; one
// slope per channel, or a slope known only at run time, stays prelu.
TEST(AtenDecompositions, SingleSlopePreluIsAtensLeakyReluBitForBit) {
  torch::jit::Module module("PreluModule");
  module.register_parameter("slope", torch::tensor({0.25f}), false);
  module.register_parameter("slopes", torch::rand({8}), false);
  module.register_parameter("w", torch::randn({8, 4, 3}) * 0.3, false);
  module.define(R"JIT(
def forward(self, x, given):
    y = torch.conv1d(x, self.w)
    return torch.prelu(y, self.slope), torch.prelu(x, self.slope), torch.prelu(y, self.slopes), \
           torch.prelu(x, given)
)JIT");
  module.eval();
  StaticModule prepared(module);
  EXPECT_EQ(countKind(prepared.graph(), "aten::prelu"), 2u) << prepared.graph();
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{1, 4, 70}, {3, 4, 17}}) {
    const torch::Tensor x = torch::randn(sizes) * 3.0;
    const torch::Tensor given = torch::rand({1});
    const torch::Tensor y = torch::conv1d(x, module.attr("w").toTensor());
    for (int call = 0; call < 2; ++call) {
      const auto outputs = prepared({x, given}).toTupleRef().elements();
      EXPECT_TRUE(torch::allclose(outputs[0].toTensor(),
                                  torch::prelu(y, module.attr("slope").toTensor()), 1e-5, 1e-5));
      EXPECT_TRUE(
          torch::equal(outputs[1].toTensor(), torch::prelu(x, module.attr("slope").toTensor())));
      EXPECT_TRUE(torch::equal(outputs[3].toTensor(), torch::prelu(x, given)));
    }
  }
  expectMatchesJit(module, {{{torch::randn({2, 4, 33}), torch::rand({1})}, {}}}, {}, 1e-5);
}

// nn.PairwiseDistance: p and eps given or not, keepdim, broadcast ranks, a run-time p; ATen's
// norm over the innermost dim, so the same bits.
TEST(AtenDecompositions, PairwiseDistanceIsAtensNormBitForBit) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, a, b, c, p: float):
    return (torch.pairwise_distance(a, b), torch.pairwise_distance(a, b, 3.0, 1e-3, True),
            torch.pairwise_distance(a, c, 1.0), torch.pairwise_distance(a, b, p))
)JIT"));
  const auto kinds = kernelKinds(module);
  EXPECT_EQ(kinds.count("aten::pairwise_distance"), 0u) << module.graph();
  EXPECT_EQ(kinds.at("aten::norm"), std::set<KernelKind>{KernelKind::kOutVariant});
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{5, 16}, {2, 3, 7}}) {
    const torch::Tensor a = torch::randn(sizes);
    const torch::Tensor b = torch::randn(sizes);
    const torch::Tensor c = torch::randn({sizes.back()});
    for (int call = 0; call < 2; ++call) {
      const auto outputs = module({a, b, c, 0.5}).toTupleRef().elements();
      EXPECT_TRUE(torch::equal(outputs[0].toTensor(), torch::pairwise_distance(a, b)));
      EXPECT_TRUE(
          torch::equal(outputs[1].toTensor(), torch::pairwise_distance(a, b, 3.0, 1e-3, true)));
      EXPECT_TRUE(torch::equal(outputs[2].toTensor(), torch::pairwise_distance(a, c, 1.0)));
      EXPECT_TRUE(torch::equal(outputs[3].toTensor(), torch::pairwise_distance(a, b, 0.5)));
    }
  }
}

// nn.CosineSimilarity: dims counted from either end, broadcast shapes and ranks (a size-1 dim
// broadcast along `dim` counts its repeats, as ATen's expanded inputs do), all-zero rows (the eps
// clamp), a run-time dim and eps; ATen's composite, so the same bits.
TEST(AtenDecompositions, CosineSimilarityIsAtensCompositeBitForBit) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, a, b, c, d, dim: int, eps: float):
    return (torch.cosine_similarity(a, b), torch.cosine_similarity(a, b, -1, 1e-3),
            torch.cosine_similarity(a, c, -1), torch.cosine_similarity(a, d, 1),
            torch.cosine_similarity(a, b, dim, eps))
)JIT"));
  const auto kinds = kernelKinds(module);
  EXPECT_EQ(kinds.count("aten::cosine_similarity"), 0u) << module.graph();
  for (const auto& [name, kind] : kinds) {
    EXPECT_EQ(kind.count(KernelKind::kFallback), 0u) << name << " falls back";
  }
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{5, 16}, {2, 3, 7}}) {
    torch::Tensor a = torch::randn(sizes);
    a[0].zero_();
    const torch::Tensor b = torch::randn(sizes);
    const torch::Tensor c = torch::randn({sizes.back()});
    std::vector<int64_t> single = sizes;
    single[1] = 1;
    const torch::Tensor d = torch::randn(single);
    for (int call = 0; call < 2; ++call) {
      const auto outputs = module({a, b, c, d, int64_t{0}, 0.25}).toTupleRef().elements();
      EXPECT_TRUE(torch::equal(outputs[0].toTensor(), torch::cosine_similarity(a, b)));
      EXPECT_TRUE(torch::equal(outputs[1].toTensor(), torch::cosine_similarity(a, b, -1, 1e-3)));
      EXPECT_TRUE(torch::equal(outputs[2].toTensor(), torch::cosine_similarity(a, c, -1)));
      EXPECT_TRUE(torch::equal(outputs[3].toTensor(), torch::cosine_similarity(a, d, 1)));
      EXPECT_TRUE(torch::equal(outputs[4].toTensor(), torch::cosine_similarity(a, b, 0, 0.25)));
    }
  }
}

// Ops ATen defines as another op with fixed arguments: the JIT's values, and none left behind.
TEST(AtenDecompositions, RenamedOpsMatchJit) {
  const char* source = R"JIT(
def forward(self, x, y, n: int):
    m = x > 0
    k = y > 0
    masks = (m & k, m | k, m ^ k, (x * 9).long() & 6, (x * 9).long() | 3, n & 3, n | 8, n ^ 5, (n > 2) ^ (n > 9))
    return (masks, x // 0.5, n // 2, torch.floor_divide(y, x),
            torch.argsort(x), torch.argsort(x, 0, True), torch.argsort(x, stable=True, dim=-1),
            torch.fliplr(x), torch.flipud(x), x.mT,
            torch.swapaxes(x, 0, -1) + 1, torch.swapdims(x, 1, 0).contiguous(),
            torch.moveaxis(x, 0, -1) * 2, torch.moveaxis(x, [0, 1], [1, 0]).sum(0))
)JIT";
  expectMatchesJit(source, {{{torch::randn({3, 4}), torch::randn({3, 4}), int64_t{7}}},
                            {{torch::randn({2, 5, 3}), torch::randn({5, 3}), int64_t{-5}}}});
  StaticModule module(scriptModule(source));
  for (const auto& [name, kinds] : kernelKinds(module)) {
    EXPECT_EQ(kinds.count(KernelKind::kFallback), 0u) << name << " falls back\n" << module.graph();
  }
  for (const char* op : {"aten::floor_divide", "aten::argsort", "aten::fliplr", "aten::flipud",
                         "aten::mT", "aten::swapaxes", "aten::swapdims", "aten::moveaxis"}) {
    EXPECT_EQ(kernelKinds(module).count(op), 0u) << op << " left in\n" << module.graph();
  }
}

// F.relu6 (TorchScript from C++ cannot spell it): hardtanh(x, 0, 6), bit for bit.
TEST(AtenDecompositions, Relu6IsHardtanh) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::relu6(%x)
  return (%y)
)IR");
  auto lowered = expectPassPreservesResults(passes::decomposeAtenOps, graph,
                                            {{torch::randn({3, 4}) * 4}, {torch::randn({9}) * 8}},
                                            /*expect_changed=*/true, /*tolerance=*/0.0);
  EXPECT_EQ(countKind(*lowered, "aten::relu6"), 0u) << *lowered;
  EXPECT_EQ(countKind(*lowered, "aten::hardtanh"), 1u) << *lowered;
}

TEST(AtenDecompositions, LeavesRunTimeArgumentsAlone) {
  auto graph = passes::prepareModule(scriptModule(R"JIT(
def forward(self, x, k: int):
    return torch.max_pool1d(x, [k]), torch.avg_pool1d(x, [2])
)JIT"))
                   .graph;
  auto lowered = expectPassPreservesResults(
      passes::decomposeAtenOps, graph,
      {{torch::randn({1, 3, 12}), int64_t{3}}, {torch::randn({2, 3, 9}), int64_t{2}}},
      /*expect_changed=*/true);
  EXPECT_EQ(countKind(*lowered, "aten::max_pool1d"), 1u) << *lowered;
  EXPECT_EQ(countKind(*lowered, "aten::avg_pool2d"), 1u) << *lowered;
}

} // namespace
} // namespace srt::testing
