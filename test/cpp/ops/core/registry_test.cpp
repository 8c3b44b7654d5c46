// Kernel selection: out-variant, then native, then the JIT fallback; declining falls through.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/library.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::testing {
namespace {

// A test-only operator, srt_test::scale(x, factor) = x * factor, gets an out-variant kernel that
// declines nodes whose factor is not a constant, so both selection paths are exercised.
at::Tensor scaleReference(const at::Tensor& x, double factor) {
  return x * factor;
}

TORCH_LIBRARY(srt_test, library) {
  library.def("scale(Tensor x, float factor) -> Tensor", scaleReference);
}

int g_out_variant_runs = 0;

SRT_REGISTER_KERNEL("srt_test::scale", kOutVariant,
                    [](const torch::jit::Node* node,
                       const ops::KernelOptions&) -> std::optional<ops::KernelFunction> {
                      auto factor = torch::jit::constant_as<double>(node->input(1));
                      if (!factor) {
                        return std::nullopt;
                      }
                      return [factor = *factor](ops::ProcessedNode& p) {
                        ++g_out_variant_runs;
                        p.output(0) = p.input(0).toTensor() * factor;
                      };
                    });

std::shared_ptr<torch::jit::Graph> parse(const std::string& ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return graph;
}

std::shared_ptr<torch::jit::Graph> constantFactorGraph() {
  return parse(R"IR(
graph(%x : Tensor):
  %factor : float = prim::Constant[value=2.5]()
  %y : Tensor = srt_test::scale(%x, %factor)
  return (%y))IR");
}

TEST(Registry, PrefersTheOutVariantKernel) {
  StaticModule module(constantFactorGraph());
  EXPECT_EQ(module.stats().out_variant_nodes, 1u);
  g_out_variant_runs = 0;
  auto x = torch::randn({8});
  EXPECT_TRUE(torch::allclose(module({x}).toTensor(), x * 2.5));
  EXPECT_EQ(g_out_variant_runs, 1);
}

TEST(Registry, DeclinedNodesFallBackToTheJitOperator) {
  StaticModule module(parse(R"IR(
graph(%x : Tensor, %factor : float):
  %y : Tensor = srt_test::scale(%x, %factor)
  return (%y))IR"));
  ModuleStats stats = module.stats();
  EXPECT_EQ(stats.out_variant_nodes, 0u);
  EXPECT_EQ(stats.fallback_nodes, 1u);
  EXPECT_EQ(stats.fallback_ops.at("srt_test::scale"), 1u);
  g_out_variant_runs = 0;
  auto x = torch::randn({8});
  EXPECT_TRUE(torch::allclose(module({x, 0.5}).toTensor(), x * 0.5));
  EXPECT_EQ(g_out_variant_runs, 0);
}

TEST(Registry, DisablingOutVariantsSkipsThem) {
  StaticModuleOptions options;
  options.enable_out_variant = false;
  options.optimize_memory = false;
  StaticModule module(constantFactorGraph(), options);
  EXPECT_EQ(module.stats().out_variant_nodes, 0u);
  EXPECT_EQ(module.stats().fallback_nodes, 1u);
}

TEST(Registry, StatsCountEveryNodeOnce) {
  auto module = scriptModule(R"JIT(
def forward(self, x, n: int):
    values = [x, x + 1]
    for i in range(n):
        values.append(x * i)
    return values
)JIT");
  ModuleStats stats = StaticModule(module).stats();
  EXPECT_EQ(stats.nodes, stats.out_variant_nodes + stats.native_nodes + stats.fallback_nodes);
  EXPECT_GE(stats.native_nodes, 2u); // prim::ListConstruct and prim::Loop
  size_t fallback_total = 0;
  for (const auto& [name, count] : stats.fallback_ops) {
    fallback_total += count;
  }
  EXPECT_EQ(fallback_total, stats.fallback_nodes);
}

TEST(Registry, RefusesRegisteringAFallback) {
  EXPECT_THROW(ops::Registry::global().add("aten::relu", ops::KernelKind::kFallback, nullptr),
               c10::Error);
}

} // namespace
} // namespace srt::testing
