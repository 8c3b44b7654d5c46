#include "static_runtime/benchmark.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>
#include <utility>

#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/ir.h>

#include "static_runtime/program.h"
#include "static_runtime/runtime.h"
#include "static_runtime/static_module.h"

namespace srt {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void checkArguments(const char* what, const ArgsList& args_list, const KwargsList& kwargs_list,
                    int warmup_runs, int main_runs) {
  TORCH_CHECK(!args_list.empty(), what, ": args_list must hold at least one input set");
  TORCH_CHECK(kwargs_list.empty() || kwargs_list.size() == args_list.size(), what,
              ": kwargs_list must be empty or hold one entry per input set (", args_list.size(),
              "), got ", kwargs_list.size());
  TORCH_CHECK(warmup_runs >= 0, what, ": warmup_runs must be >= 0, got ", warmup_runs);
  TORCH_CHECK(main_runs >= 1, what, ": main_runs must be >= 1, got ", main_runs);
}

const Kwargs& kwargsOf(const KwargsList& kwargs_list, size_t i) {
  static const Kwargs kNone;
  return kwargs_list.empty() ? kNone : kwargs_list[i];
}

// Drops a run's outputs as a caller would, handing managed output tensors back.
void dropOutputs(StaticRuntime& runtime, c10::IValue& outputs) {
  outputs = c10::IValue();
  if (runtime.module().options().manage_output_tensors) {
    runtime.deallocateOutputTensors();
  }
}

void runOnce(StaticRuntime& runtime, const ArgsList& args_list, const KwargsList& kwargs_list,
             size_t i) {
  c10::IValue outputs = runtime(args_list[i], kwargsOf(kwargs_list, i));
  dropOutputs(runtime, outputs);
}

void runPasses(StaticRuntime& runtime, const ArgsList& args_list, const KwargsList& kwargs_list,
               int passes) {
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < args_list.size(); ++i) {
      runOnce(runtime, args_list, kwargs_list, i);
    }
  }
}

} // namespace

float benchmark(StaticRuntime& runtime, const ArgsList& args_list, const KwargsList& kwargs_list,
                int warmup_runs, int main_runs) {
  checkArguments("benchmark", args_list, kwargs_list, warmup_runs, main_runs);
  runPasses(runtime, args_list, kwargs_list, warmup_runs);
  const Clock::time_point start = Clock::now();
  runPasses(runtime, args_list, kwargs_list, main_runs);
  return static_cast<float>(msSince(start) / (static_cast<double>(main_runs) * args_list.size()));
}

IndividualMetrics benchmarkIndividualOps(StaticRuntime& runtime, const ArgsList& args_list,
                                         const KwargsList& kwargs_list, int warmup_runs,
                                         int main_runs) {
  checkArguments("benchmarkIndividualOps", args_list, kwargs_list, warmup_runs, main_runs);
  IndividualMetrics metrics;
  const Clock::time_point first_start = Clock::now();
  runOnce(runtime, args_list, kwargs_list, 0);
  metrics.first_iter_time = static_cast<float>(msSince(first_start));
  runPasses(runtime, args_list, kwargs_list, warmup_runs);

  RunTimes times;
  double output_dealloc_ms = 0;
  for (int pass = 0; pass < main_runs; ++pass) {
    for (size_t i = 0; i < args_list.size(); ++i) {
      c10::IValue outputs = runtime.timedRun(args_list[i], kwargsOf(kwargs_list, i), times);
      const Clock::time_point drop_start = Clock::now();
      dropOutputs(runtime, outputs);
      output_dealloc_ms += msSince(drop_start);
    }
  }

  const double runs = static_cast<double>(main_runs) * args_list.size();
  metrics.setup_time = static_cast<float>(times.setup / runs);
  metrics.memory_alloc_time = static_cast<float>(times.memory_alloc / runs);
  metrics.memory_dealloc_time = static_cast<float>(times.memory_dealloc / runs);
  metrics.output_dealloc_time = static_cast<float>(output_dealloc_ms / runs);

  const std::vector<ops::StaticNodeInfo>& nodes = runtime.module().program().blocks.front().nodes;
  TORCH_INTERNAL_ASSERT(times.nodes.size() == nodes.size());
  metrics.time_per_node.resize(nodes.size());
  double total_ms = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string kind = nodes[i].node->kind().toQualString();
    const double node_ms = times.nodes[i] / runs;
    total_ms += node_ms;
    metrics.time_per_node[i] = static_cast<float>(node_ms);
    metrics.time_per_node_type[kind] += static_cast<float>(node_ms);
    ++metrics.instances_per_node_type[kind];
    switch (nodes[i].kernel.kind) {
    case ops::KernelKind::kOutVariant:
      metrics.out_nodes.insert(kind);
      ++metrics.out_nodes_count;
      break;
    case ops::KernelKind::kNative:
      metrics.native_nodes.insert(kind);
      ++metrics.native_nodes_count;
      break;
    case ops::KernelKind::kFallback:
      metrics.fallback_nodes.insert(kind);
      ++metrics.fallback_nodes_count;
      break;
    }
  }
  metrics.total_time = static_cast<float>(total_ms);
  metrics.total_nodes_count = static_cast<int>(nodes.size());
  for (const auto& [kind, ms] : metrics.time_per_node_type) {
    metrics.percent_per_node_type[kind] =
        total_ms > 0 ? static_cast<float>(ms / total_ms * 100.0) : 0.0f;
  }
  return metrics;
}

std::string toString(const IndividualMetrics& metrics) {
  std::vector<std::pair<std::string, float>> by_time(metrics.time_per_node_type.begin(),
                                                     metrics.time_per_node_type.end());
  std::sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::ostringstream out;
  out << std::fixed << std::setprecision(4) << "Time per node type:\n";
  for (const auto& [kind, ms] : by_time) {
    const char* kernel = metrics.out_nodes.count(kind)      ? "out variant"
                         : metrics.native_nodes.count(kind) ? "native"
                                                            : "fallback";
    out << std::setw(12) << ms << " ms. " << std::setw(8) << std::setprecision(2)
        << metrics.percent_per_node_type.at(kind) << "%. " << std::setprecision(4) << kind << " ("
        << metrics.instances_per_node_type.at(kind) << " nodes, " << kernel << ")\n";
  }
  out << std::setw(12) << metrics.total_time << " ms. in Total\n"
      << "Setup time: " << metrics.setup_time << " ms\n"
      << "Memory allocation time: " << metrics.memory_alloc_time << " ms\n"
      << "Memory deallocation time: " << metrics.memory_dealloc_time << " ms\n"
      << "Outputs deallocation time: " << metrics.output_dealloc_time << " ms\n"
      << "First iter time: " << metrics.first_iter_time << " ms\n"
      << "Nodes: " << metrics.total_nodes_count << " (" << metrics.out_nodes_count
      << " out variant, " << metrics.native_nodes_count << " native, "
      << metrics.fallback_nodes_count << " fallback)\n";
  return out.str();
}

} // namespace srt
