// passes/linear_activation.cpp: linear + activation -> srt::fused_linear, and what stays unfused.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "harness/zoo.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

torch::jit::Module moduleWith(const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                              const std::string& source) {
  torch::jit::Module module("LinearActivationModule");
  for (const auto& [name, value] : parameters) {
    module.register_parameter(name, value, /*is_buffer=*/false);
  }
  module.define(source);
  module.eval();
  return module;
}

std::shared_ptr<torch::jit::Graph> prepared(const torch::jit::Module& module) {
  return passes::prepareModule(module).graph;
}

// Weights [16, 8]: inputs [.., 8].
torch::jit::Module withWeights(const std::string& source) {
  return moduleWith({{"w", torch::randn({16, 8})}, {"b", torch::randn({16})}}, source);
}

const std::vector<GraphInputs> kInputSets = {{torch::randn({4, 8})}, {torch::randn({2, 3, 8})}};

constexpr const char* kEveryActivation = R"JIT(
def forward(self, x):
    a = torch.relu(torch.linear(x, self.w, self.b))
    b = torch.gelu(torch.linear(x * 2.0, self.w, self.b))
    c = torch.gelu(torch.linear(x * 3.0, self.w, self.b), approximate='tanh')
    d = torch.sigmoid(torch.linear(x * 4.0, self.w, self.b))
    e = torch.tanh(torch.linear(x * 5.0, self.w))
    f = torch.silu(torch.linear(x * 6.0, self.w, self.b))
    return a, b, c, d, e, f
)JIT";

TEST(LinearActivation, FusesEveryActivation) {
  auto graph = prepared(withWeights(kEveryActivation));
  auto fused = expectPassPreservesResults(passes::fuseLinearActivation, graph, kInputSets,
                                          /*expect_changed=*/true);
  EXPECT_EQ(countKind(*fused, "srt::fused_linear"), 6u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::linear"), 0u) << *fused;
  for (const char* activation :
       {"aten::relu", "aten::gelu", "aten::sigmoid", "aten::tanh", "aten::silu"}) {
    EXPECT_EQ(countKind(*fused, activation), 0u) << activation << "\n" << *fused;
  }
}

TEST(LinearActivation, LeavesNearMissesAlone) {
  // The pre-activation value is used elsewhere; an activation the kernel does not have; an
  // activation of a matmul of two inputs, not of a linear; a gelu whose mode is not a constant.
  auto graph = prepared(withWeights(R"JIT(
def forward(self, x, mode: str):
    y = torch.linear(x, self.w, self.b)
    a = torch.relu(y)
    b = torch.leaky_relu(torch.linear(x * 2.0, self.w, self.b), 0.1)
    c = torch.relu(torch.matmul(x, x.transpose(-2, -1)))
    d = torch.gelu(torch.linear(x * 3.0, self.w, self.b), approximate=mode)
    return a, y, b, c, d
)JIT"));
  std::vector<GraphInputs> inputs;
  for (const GraphInputs& set : kInputSets) {
    inputs.push_back({set[0], std::string("tanh")});
  }
  auto rewritten = expectPassPreservesResults(passes::fuseLinearActivation, graph, inputs, false);
  EXPECT_EQ(countKind(*rewritten, "srt::fused_linear"), 0u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::linear"), 3u) << *rewritten;
}

TEST(LinearActivation, FusedModuleMatchesJitOnEveryBackend) {
  const torch::jit::Module module = withWeights(kEveryActivation);
  const std::vector<InputSet> inputs = {
      {{torch::randn({4, 8})}, {}}, {{torch::randn({2, 3, 8})}, {}}, {{torch::randn({1, 8})}, {}}};
  for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten}) {
    SCOPED_TRACE(toString(backend));
    StaticModuleOptions options;
    options.gemm_backend = backend;
    const ModuleStats stats = StaticModule(module, options).stats();
    EXPECT_EQ(stats.fallback_ops.count("srt::fused_linear"), 0u);
    expectMatchesJit(module, inputs, options);
  }
}

// The same linears spelled as matmul (+ bias) and addmm with constant weights.
constexpr const char* kMatmulSpellings = R"JIT(
def forward(self, x):
    wt = self.w.t()
    a = torch.relu(torch.matmul(x, wt) + self.b)
    b = torch.tanh(self.b + torch.matmul(x * 2.0, wt))
    c = torch.sigmoid(torch.matmul(x * 3.0, wt))
    d = torch.silu(torch.addmm(self.b, x.reshape([-1, 8]), wt))
    return a, b, c, d
)JIT";

TEST(LinearActivation, FusesMatmulAndAddmmSpellings) {
  const torch::jit::Module module = withWeights(kMatmulSpellings);
  auto graph = prepared(module);
  auto fused = expectPassPreservesResults(passes::fuseLinearActivation, graph, kInputSets,
                                          /*expect_changed=*/true);
  EXPECT_EQ(countKind(*fused, "srt::fused_linear"), 4u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::matmul"), 0u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::addmm"), 0u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::add"), 0u) << *fused;
  const std::vector<InputSet> inputs = {{{torch::randn({4, 8})}, {}},
                                        {{torch::randn({2, 3, 8})}, {}}};
  expectMatchesJit(module, inputs);
}

TEST(LinearActivation, MatmulWithInputWeightOrBiasAlphaStays) {
  auto graph = prepared(withWeights(R"JIT(
def forward(self, x, w):
    a = torch.relu(torch.matmul(x, w))
    b = torch.relu(torch.add(torch.matmul(x, self.w.t()), self.b, alpha=2))
    return a, b
)JIT"));
  std::vector<GraphInputs> inputs;
  for (const GraphInputs& set : kInputSets) {
    inputs.push_back({set[0], torch::randn({8, 16})});
  }
  auto rewritten = expectPassPreservesResults(passes::fuseLinearActivation, graph, inputs, true);
  // The constant-weight matmul is a linear now, but its alpha-2 add is not a bias.
  EXPECT_EQ(countKind(*rewritten, "aten::matmul"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::add"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::fused_linear"), 0u) << *rewritten;
}

TEST(LinearActivation, ZooMlpHasOneNodePerLinearAndRelu) {
  auto graph = prepared(loadZooModel("mlp"));
  // Before weight packing, which makes every linear an srt::fused_linear.
  passes::optimize(graph, {"linear_weight_packing"});
  // fc1 + relu and fc2 + relu fused; fc3 has no activation.
  EXPECT_EQ(countKind(*graph, "srt::fused_linear"), 2u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::relu"), 0u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::linear"), 1u) << *graph;
}

} // namespace
} // namespace srt::testing
