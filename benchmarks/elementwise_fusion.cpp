// A 5-op element-wise chain, sigmoid((x * 0.5 + y) * 1.702) - 0.25, on 64K floats (256 KiB per
// tensor: larger than L2's share per op on most cores, so unfused intermediates go to memory):
//  - BM_Chain/Fused: StaticModule with every pass (one srt::fused_elementwise node);
//  - BM_Chain/Unfused: StaticModule with elementwise_fusion disabled (5 out-variant nodes, each
//    writing a planned intermediate);
//  - BM_Chain/EagerAten: the same ATen calls from C++.
// One intra-op thread, so the ratio is the fusion's, not the thread pool's. Medians of 5
// repetitions; at the end, Unfused/Fused and EagerAten/Fused time ratios (the speed-up).
#include <cstdio>
#include <map>
#include <string>

#include <benchmark/benchmark.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "common/context.h"
#include "static_runtime/static_runtime.h"

namespace {

constexpr int64_t kElements = 64 * 1024;

torch::jit::Module chainModule() {
  torch::jit::Module module("Chain");
  module.define(R"JIT(
def forward(self, x, y):
    return torch.sigmoid((x * 0.5 + y) * 1.702) - 0.25
)JIT");
  return module;
}

void runChain(benchmark::State& state, const srt::StaticModule& module, size_t expected_nodes) {
  if (module.stats().nodes != expected_nodes) {
    state.SkipWithError("the chain did not get the intended number of nodes");
    return;
  }
  srt::StaticRuntime runtime(module);
  const std::vector<c10::IValue> args{torch::randn({kElements}), torch::randn({kElements})};
  for (int i = 0; i < 3; ++i) {
    benchmark::DoNotOptimize(runtime(args));
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(runtime(args));
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}

void BM_Chain_Fused(benchmark::State& state) {
  runChain(state, srt::StaticModule(chainModule()), 1);
}

void BM_Chain_Unfused(benchmark::State& state) {
  srt::StaticModuleOptions options;
  options.disabled_passes = {"elementwise_fusion"};
  runChain(state, srt::StaticModule(chainModule(), options), 5);
}

void BM_Chain_EagerAten(benchmark::State& state) {
  torch::NoGradGuard no_grad; // as the runtime runs
  const at::Tensor x = torch::randn({kElements});
  const at::Tensor y = torch::randn({kElements});
  for (auto _ : state) {
    benchmark::DoNotOptimize(at::sigmoid((x * 0.5 + y) * 1.702) - 0.25);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}

BENCHMARK(BM_Chain_Fused)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_Chain_Unfused)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_Chain_EagerAten)->Repetitions(5)->ReportAggregatesOnly(true);

// The console output, then each baseline's median time over the fused one's.
class RatioReporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.aggregate_name == "median") {
        median_seconds_[run.run_name.function_name] = run.GetAdjustedRealTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    const auto fused = median_seconds_.find("BM_Chain_Fused");
    if (fused == median_seconds_.end() || fused->second <= 0) {
      return;
    }
    for (const char* baseline : {"BM_Chain_Unfused", "BM_Chain_EagerAten"}) {
      const auto found = median_seconds_.find(baseline);
      if (found != median_seconds_.end()) {
        std::printf("speed-up of fusion over %s (median time ratio): %.2fx\n", baseline,
                    found->second / fused->second);
      }
    }
  }

private:
  std::map<std::string, double> median_seconds_;
};

} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  srt::bench::addStandardContext(/*threads=*/1);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
