// benchmark / benchmarkIndividualOps (static_runtime/benchmark.h) and StaticRuntime::timedRun.
#include <numeric>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "scripts.h"
#include "static_runtime/benchmark.h"
#include "static_runtime/program.h"

namespace srt::testing {
namespace {

constexpr const char* kMlp = R"JIT(
def forward(self, x, w1, w2):
    h = torch.relu(torch.mm(x, w1))
    y = torch.mm(h, w2)
    return y.sum(1) + y.mean(1)
)JIT";

ArgsList mlpInputs() {
  return {{torch::randn({4, 16}), torch::randn({16, 32}), torch::randn({32, 8})},
          {torch::randn({9, 16}), torch::randn({16, 32}), torch::randn({32, 8})}};
}

const std::vector<ops::StaticNodeInfo>& topLevelNodes(const StaticModule& module) {
  return module.program().blocks.front().nodes;
}

TEST(Benchmark, ReturnsMillisecondsPerRunAndLeavesTheRuntimeUsable) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  const ArgsList inputs = mlpInputs();
  const float ms = benchmark(runtime, inputs, {}, 1, 5);
  EXPECT_GT(ms, 0.0f);
  // A run takes well under a second here; a mix-up of units or of the divisor would not.
  EXPECT_LT(ms, 1000.0f);
  torch::jit::Module jit = scriptModule(kMlp);
  torch::NoGradGuard no_grad;
  EXPECT_EQ(compareIValues(jit.forward(inputs[0]), runtime(inputs[0])), "");
}

TEST(Benchmark, PassesKeywordArgumentsPerInputSet) {
  StaticModule module(scriptModule(scripts::kKwargsWithDefaults));
  StaticRuntime runtime(module);
  const ArgsList args = {{torch::randn({3})}, {torch::randn({2, 3})}};
  const KwargsList kwargs = {{{"scale", 3.0}}, {{"bias", torch::randn({3})}}};
  EXPECT_GT(benchmark(runtime, args, kwargs, 0, 2), 0.0f);
  const IndividualMetrics metrics = benchmarkIndividualOps(runtime, args, kwargs, 0, 2);
  EXPECT_EQ(metrics.total_nodes_count, static_cast<int>(topLevelNodes(module).size()));
}

TEST(Benchmark, RejectsBadArgumentsByName) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  const ArgsList inputs = mlpInputs();
  EXPECT_THAT([&] { (void)benchmark(runtime, {}, {}, 1, 1); },
              ::testing::ThrowsMessage<c10::Error>(
                  ::testing::HasSubstr("args_list must hold at least one input set")));
  EXPECT_THAT([&] { (void)benchmark(runtime, inputs, {Kwargs{}}, 1, 1); },
              ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr(
                  "kwargs_list must be empty or hold one entry per input set (2), got 1")));
  EXPECT_THAT(
      [&] { (void)benchmarkIndividualOps(runtime, inputs, {}, 1, 0); },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("main_runs must be >= 1, got 0")));
  EXPECT_THAT([&] { (void)benchmarkIndividualOps(runtime, inputs, {}, -1, 1); },
              ::testing::ThrowsMessage<c10::Error>(
                  ::testing::HasSubstr("warmup_runs must be >= 0, got -1")));
}

TEST(Benchmark, WrongInputFailsAndTheRuntimeStillWorks) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  // Inner dimensions disagree: the first mm fails.
  const ArgsList bad = {{torch::randn({4, 5}), torch::randn({16, 32}), torch::randn({32, 8})}};
  EXPECT_THROW((void)benchmarkIndividualOps(runtime, bad, {}, 0, 1), c10::Error);
  const ArgsList good = mlpInputs();
  const IndividualMetrics metrics = benchmarkIndividualOps(runtime, good, {}, 0, 2);
  EXPECT_GT(metrics.total_time, 0.0f);
}

TEST(BenchmarkIndividualOps, TimesEveryTopLevelNodeAndCountsMatchTheProgram) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  const IndividualMetrics metrics = benchmarkIndividualOps(runtime, mlpInputs(), {}, 1, 10);
  const std::vector<ops::StaticNodeInfo>& nodes = topLevelNodes(module);
  ASSERT_EQ(metrics.time_per_node.size(), nodes.size());
  EXPECT_EQ(metrics.total_nodes_count, static_cast<int>(nodes.size()));

  const float sum =
      std::accumulate(metrics.time_per_node.begin(), metrics.time_per_node.end(), 0.0f);
  EXPECT_NEAR(metrics.total_time, sum, 1e-4f * std::max(1.0f, sum));
  float by_kind = 0;
  float percent = 0;
  int instances = 0;
  for (const auto& [kind, ms] : metrics.time_per_node_type) {
    by_kind += ms;
    percent += metrics.percent_per_node_type.at(kind);
    instances += metrics.instances_per_node_type.at(kind);
  }
  EXPECT_NEAR(by_kind, metrics.total_time, 1e-4f * std::max(1.0f, sum));
  EXPECT_NEAR(percent, 100.0f, 0.01f);
  EXPECT_EQ(instances, metrics.total_nodes_count);

  // Kinds and kernel kinds node by node, as the program selected them.
  std::map<std::string, int> expected_instances;
  int out = 0, native = 0, fallback = 0;
  for (const ops::StaticNodeInfo& node : nodes) {
    const std::string kind = node.node->kind().toQualString();
    ++expected_instances[kind];
    EXPECT_GE(metrics.time_per_node_type.at(kind), 0.0f);
    switch (node.kernel.kind) {
    case ops::KernelKind::kOutVariant:
      ++out;
      EXPECT_TRUE(metrics.out_nodes.count(kind)) << kind;
      break;
    case ops::KernelKind::kNative:
      ++native;
      EXPECT_TRUE(metrics.native_nodes.count(kind)) << kind;
      break;
    case ops::KernelKind::kFallback:
      ++fallback;
      EXPECT_TRUE(metrics.fallback_nodes.count(kind)) << kind;
      break;
    }
  }
  for (const auto& [kind, count] : expected_instances) {
    EXPECT_EQ(metrics.instances_per_node_type.at(kind), count) << kind;
  }
  EXPECT_EQ(metrics.out_nodes_count, out);
  EXPECT_EQ(metrics.native_nodes_count, native);
  EXPECT_EQ(metrics.fallback_nodes_count, fallback);
  // No control flow: the module's counts over every block are the top-level ones.
  const ModuleStats stats = module.stats();
  EXPECT_EQ(static_cast<size_t>(metrics.total_nodes_count), stats.nodes);
  EXPECT_EQ(static_cast<size_t>(metrics.out_nodes_count), stats.out_variant_nodes);
  EXPECT_EQ(static_cast<size_t>(metrics.native_nodes_count), stats.native_nodes);
  EXPECT_EQ(static_cast<size_t>(metrics.fallback_nodes_count), stats.fallback_nodes);

  EXPECT_GT(metrics.total_time, 0.0f);
  EXPECT_GT(metrics.first_iter_time, 0.0f);
  EXPECT_GE(metrics.setup_time, 0.0f);
  EXPECT_GE(metrics.memory_alloc_time, 0.0f);
  EXPECT_GE(metrics.memory_dealloc_time, 0.0f);
  EXPECT_GE(metrics.output_dealloc_time, 0.0f);
}

TEST(BenchmarkIndividualOps, AControlFlowNodeIncludesItsBlocks) {
  StaticModule module(scriptModule(scripts::kLoopOnValue));
  StaticRuntime runtime(module);
  // 400 iterations of the for loop: its node dominates the run.
  const IndividualMetrics metrics =
      benchmarkIndividualOps(runtime, {{torch::randn({64}), 400}}, {}, 1, 3);
  const std::vector<ops::StaticNodeInfo>& nodes = topLevelNodes(module);
  ASSERT_EQ(metrics.time_per_node.size(), nodes.size());
  EXPECT_LT(static_cast<size_t>(metrics.total_nodes_count), module.stats().nodes)
      << "sub-block nodes are timed within their If / Loop node, not listed";
  ASSERT_TRUE(metrics.instances_per_node_type.count("prim::Loop"));
  EXPECT_GT(metrics.percent_per_node_type.at("prim::Loop"), 50.0f);
}

TEST(BenchmarkIndividualOps, ManagedOutputTensorsAreHandedBackBetweenRuns) {
  StaticModuleOptions options;
  options.manage_output_tensors = true;
  StaticModule module(scriptModule(kMlp), options);
  StaticRuntime runtime(module);
  EXPECT_GT(benchmark(runtime, mlpInputs(), {}, 1, 3), 0.0f);
  const IndividualMetrics metrics = benchmarkIndividualOps(runtime, mlpInputs(), {}, 1, 3);
  EXPECT_GT(metrics.total_time, 0.0f);
  // The runtime is free to run again: nothing is left outstanding.
  (void)runtime(mlpInputs()[0]);
}

TEST(TimedRun, RunsTheSameKernelsAsARun) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime timed(module);
  StaticRuntime plain(module);
  RunTimes times;
  for (const std::vector<c10::IValue>& args : mlpInputs()) {
    EXPECT_EQ(compareIValues(plain(args), timed.timedRun(args, {}, times), 0.0), "");
  }
  EXPECT_EQ(times.nodes.size(), topLevelNodes(module).size());
  for (double ms : times.nodes) {
    EXPECT_GE(ms, 0.0);
  }
  EXPECT_EQ(timed.stats().managed_bytes, plain.stats().managed_bytes);
}

TEST(BenchmarkIndividualOps, ReportListsKindsSlowestFirst) {
  IndividualMetrics metrics;
  metrics.time_per_node_type = {{"aten::mm", 2.0f}, {"aten::relu", 0.5f}};
  metrics.percent_per_node_type = {{"aten::mm", 80.0f}, {"aten::relu", 20.0f}};
  metrics.instances_per_node_type = {{"aten::mm", 2}, {"aten::relu", 1}};
  metrics.out_nodes = {"aten::mm"};
  metrics.native_nodes = {"aten::relu"};
  metrics.total_time = 2.5f;
  metrics.total_nodes_count = 3;
  const std::string report = toString(metrics);
  const size_t mm = report.find("aten::mm (2 nodes, out variant)");
  const size_t relu = report.find("aten::relu (1 nodes, native)");
  ASSERT_NE(mm, std::string::npos) << report;
  ASSERT_NE(relu, std::string::npos) << report;
  EXPECT_LT(mm, relu) << report;
  EXPECT_NE(report.find("2.5000 ms. in Total"), std::string::npos) << report;
}

} // namespace
} // namespace srt::testing
