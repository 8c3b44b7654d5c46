// Cost per node on a 200-node chain of tiny ops:
//  - BM_Interpreter_IdentityChain: a native kernel that only passes its input on, so the time is
//    the runtime's own cost between kernels (loop, kernel call, value-table traffic, reset);
//  - BM_AddChain/*: 200 `x + 1.0` on a 1-element tensor as out-variant kernels, as JIT-operator
//    fallbacks (enable_out_variant=false), and as plain at::add calls from C++ (eager).
// Each reports per_node, the time per node.
#include <sstream>

#include <benchmark/benchmark.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/library.h>
#include <torch/script.h>

#include "common/context.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "static_runtime/static_runtime.h"

namespace {

constexpr int kChainLength = 200;

at::Tensor identity(const at::Tensor& x) {
  return x;
}

TORCH_LIBRARY(srt_bench, library) {
  library.def("identity(Tensor(a) x) -> Tensor(a)", identity);
}

SRT_REGISTER_KERNEL("srt_bench::identity", kNative,
                    [](const torch::jit::Node*, const srt::ops::KernelOptions&) {
                      return std::optional<srt::ops::KernelFunction>(
                          [](srt::ops::ProcessedNode& p) { p.output(0) = p.input(0); });
                    });

std::string chainSource(const std::string& step) {
  std::ostringstream source;
  source << "def forward(self, x):\n";
  for (int i = 0; i < kChainLength; ++i) {
    source << "    x = " << step << "\n";
  }
  source << "    return x\n";
  return source.str();
}

torch::jit::Module chainModule(const std::string& step) {
  torch::jit::Module module("Chain");
  module.define(chainSource(step));
  return module;
}

// TorchScript compiled from C++ cannot call torch.ops.<namespace>, so this chain is IR.
std::shared_ptr<torch::jit::Graph> identityChainGraph() {
  std::ostringstream ir;
  ir << "graph(%x0 : Tensor):\n";
  for (int i = 0; i < kChainLength; ++i) {
    ir << "  %x" << i + 1 << " : Tensor = srt_bench::identity(%x" << i << ")\n";
  }
  ir << "  return (%x" << kChainLength << ")\n";
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir.str(), graph.get());
  return graph;
}

// Seconds per node, printed with an SI prefix (e.g. "per_node=41.2n" is 41.2 ns).
void reportPerNode(benchmark::State& state) {
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChainLength,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void runChain(benchmark::State& state, const srt::StaticModule& module,
              size_t expected_nodes_of_kind, size_t srt::ModuleStats::*kind_count) {
  const srt::ModuleStats stats = module.stats();
  if (stats.*kind_count < expected_nodes_of_kind) {
    state.SkipWithError("the chain did not get the intended kernel kind");
    return;
  }
  srt::StaticRuntime runtime(module);
  std::vector<c10::IValue> args{at::ones({1})};
  for (int i = 0; i < 3; ++i) {
    benchmark::DoNotOptimize(runtime(args));
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(runtime(args));
  }
  reportPerNode(state);
}

void BM_Interpreter_IdentityChain(benchmark::State& state) {
  runChain(state, srt::StaticModule(identityChainGraph()), kChainLength,
           &srt::ModuleStats::native_nodes);
}

// Options that keep the 200 adds 200 nodes: element-wise fusion would make the chain one node.
srt::StaticModuleOptions unfusedChain() {
  srt::StaticModuleOptions options;
  options.disabled_passes = {"elementwise_fusion"};
  return options;
}

void BM_AddChain_OutVariant(benchmark::State& state) {
  runChain(state, srt::StaticModule(chainModule("x + 1.0"), unfusedChain()), kChainLength,
           &srt::ModuleStats::out_variant_nodes);
}

void BM_AddChain_Fallback(benchmark::State& state) {
  srt::StaticModuleOptions options = unfusedChain();
  options.enable_out_variant = false;
  options.optimize_memory = false;
  runChain(state, srt::StaticModule(chainModule("x + 1.0"), options), kChainLength,
           &srt::ModuleStats::fallback_nodes);
}

void BM_AddChain_EagerAten(benchmark::State& state) {
  torch::NoGradGuard no_grad; // as the runtime runs
  at::Tensor input = at::ones({1});
  for (auto _ : state) {
    at::Tensor x = input;
    for (int i = 0; i < kChainLength; ++i) {
      x = at::add(x, 1.0);
    }
    benchmark::DoNotOptimize(x);
  }
  reportPerNode(state);
}

BENCHMARK(BM_Interpreter_IdentityChain);
BENCHMARK(BM_AddChain_OutVariant);
BENCHMARK(BM_AddChain_Fallback);
BENCHMARK(BM_AddChain_EagerAten);

} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // Per-node overhead is a one-thread figure: no intra-op parallelism at these sizes.
  srt::bench::addStandardContext(/*threads=*/1);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
