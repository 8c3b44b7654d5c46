// passes/gemm_residual_add.cpp: linear (+ activation) + add(residual) -> one srt::fused_linear.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "harness/zoo.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

torch::jit::Module withWeights(const std::string& source) {
  torch::jit::Module module("ResidualModule");
  module.register_parameter("w", torch::randn({8, 8}), false);
  module.register_parameter("b", torch::randn({8}), false);
  module.define(source);
  module.eval();
  return module;
}

// Both operand orders, alpha int and float, a residual that broadcasts as a row, and one after
// an activation (linear_activation first, as in the pipeline).
constexpr const char* kResiduals = R"JIT(
def forward(self, x, r, row):
    a = x + torch.linear(x, self.w, self.b)
    b = torch.add(torch.linear(a, self.w, self.b), r, alpha=2)
    c = torch.add(r, torch.linear(b, self.w), alpha=0.5)
    d = torch.linear(c, self.w, self.b) + row
    e = r + torch.relu(torch.linear(d, self.w, self.b))
    return e
)JIT";

std::vector<GraphInputs> residualInputs() {
  return {{torch::randn({4, 8}), torch::randn({4, 8}), torch::randn({8})},
          {torch::randn({2, 3, 8}), torch::randn({2, 3, 8}), torch::randn({1, 8})}};
}

bool fuseBoth(passes::GraphPtr& graph) {
  const bool activation = passes::fuseLinearActivation(graph);
  return passes::fuseGemmResidualAdd(graph) || activation;
}

TEST(GemmResidualAdd, FusesEitherOrderAndAlpha) {
  auto graph = passes::prepareModule(withWeights(kResiduals)).graph;
  auto fused = expectPassPreservesResults(fuseBoth, graph, residualInputs(), true);
  EXPECT_EQ(countKind(*fused, "srt::fused_linear"), 5u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::linear"), 0u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::add"), 0u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::relu"), 0u) << *fused;
}

TEST(GemmResidualAdd, LeavesNearMissesAlone) {
  // The linear's output used twice; a scalar added (add.Scalar); a subtraction; the activated
  // value used elsewhere.
  auto graph = passes::prepareModule(withWeights(R"JIT(
def forward(self, x, r, row):
    y = torch.linear(x, self.w, self.b)
    a = y + r
    b = torch.linear(a, self.w, self.b) + 1.0
    c = torch.linear(b, self.w, self.b) - r
    h = torch.relu(torch.linear(c, self.w, self.b))
    return a + y, h + r, h
)JIT"))
                   .graph;
  auto rewritten = expectPassPreservesResults(fuseBoth, graph, residualInputs(), true);
  // Only the relu fuses (linear_activation); no residual does.
  EXPECT_EQ(countKind(*rewritten, "srt::fused_linear"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::linear"), 3u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::add"), 4u) << *rewritten;
}

TEST(GemmResidualAdd, FusedModuleMatchesJitOnEveryBackend) {
  // Five chained products with residuals cancel to values near zero for some draws, where float32
  // rounding exceeds the absolute tolerance on any backend: fixed draws, not the test order's.
  torch::manual_seed(3);
  const torch::jit::Module module = withWeights(kResiduals);
  std::vector<InputSet> inputs;
  for (GraphInputs& set : residualInputs()) {
    inputs.push_back({std::move(set), {}});
  }
  // A residual that makes the output larger than the linear's: the add broadcasts both ways.
  inputs.push_back({{torch::randn({3, 8}), torch::randn({2, 3, 8}), torch::randn({8})}, {}});
  for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten}) {
    SCOPED_TRACE(toString(backend));
    StaticModuleOptions options;
    options.gemm_backend = backend;
    expectMatchesJit(module, inputs, options);
  }
}

// fused_linear nodes of `graph` with a constant activation `activation` and a residual or not.
size_t countFused(const torch::jit::Graph& graph, const std::string& activation, bool residual) {
  size_t count = 0;
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() != c10::Symbol::fromQualString("srt::fused_linear")) {
      continue;
    }
    const auto name = torch::jit::constant_as<std::string>(node->input(3));
    const bool has_residual = node->input(4)->type()->kind() != c10::TypeKind::NoneType;
    count += name && *name == activation && has_residual == residual;
  }
  return count;
}

TEST(GemmResidualAdd, ZooTransformerBlockFusesResidualsAndFfn) {
  auto graph = passes::prepareModule(loadZooModel("transformer_block")).graph;
  passes::optimize(graph, {});
  // x + out_proj(context) and x + ffn_out(...); ffn_in + gelu.
  EXPECT_EQ(countFused(*graph, "none", /*residual=*/true), 2u) << *graph;
  EXPECT_EQ(countFused(*graph, "gelu", /*residual=*/false), 1u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::gelu"), 0u) << *graph;
}

} // namespace
} // namespace srt::testing
