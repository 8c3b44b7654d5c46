// aten::linear on the model zoo's shapes through a StaticRuntime with each GEMM backend, and
// at::linear called directly as the baseline, in one process. Prints the usual Google Benchmark
// lines, then a table of medians (or of single runs without --benchmark_repetitions) with each
// backend's ratio to at::linear.
//
//   gemm_backends [--threads=N] [benchmark flags]
//   e.g. gemm_backends --threads=1 --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/context.h"
#include <cblas.h>
#include <torch/torch.h>

#include "static_runtime/static_runtime.h"

namespace {

using srt::GemmBackend;

struct Shape {
  const char* model;
  int64_t m, k, n;
};

// The linear layers of the zoo: the MLPs (64 -> 128 -> 128 -> 10) at batch 1 and 64, a d=64
// transformer block (16 tokens: QKV 64->192, MLP 64->256->64) and a d=256 one (8 x 128 tokens).
const Shape kShapes[] = {
    {"mlp", 1, 64, 128},         {"mlp", 1, 128, 128},         {"mlp", 1, 128, 10},
    {"mlp", 64, 64, 128},        {"mlp", 64, 128, 128},        {"mlp", 64, 128, 10},
    {"tf-d64", 16, 64, 192},     {"tf-d64", 16, 64, 256},      {"tf-d64", 16, 256, 64},
    {"tf-d256", 1024, 256, 768}, {"tf-d256", 1024, 256, 1024}, {"tf-d256", 1024, 1024, 256},
};

const GemmBackend kBackends[] = {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten};
constexpr const char* kBaseline = "at::linear";

std::string shapeLabel(const Shape& s) {
  return std::string(s.model) + " M=" + std::to_string(s.m) + " " + std::to_string(s.k) + "->" +
         std::to_string(s.n);
}

// Benchmark name -> (shape, column) for the summary table.
std::map<std::string, std::pair<std::string, std::string>>& labels() {
  static std::map<std::string, std::pair<std::string, std::string>> map;
  return map;
}

torch::jit::Module linearModule(const at::Tensor& weight, const at::Tensor& bias) {
  torch::jit::Module module("Linear");
  module.register_parameter("weight", weight, false);
  module.register_parameter("bias", bias, false);
  module.define(R"JIT(
def forward(self, x):
    return torch.linear(x, self.weight, self.bias)
)JIT");
  module.eval();
  return module;
}

void registerShape(const Shape& shape) {
  const at::Tensor weight = torch::randn({shape.n, shape.k});
  const at::Tensor bias = torch::randn({shape.n});
  const at::Tensor input = torch::randn({shape.m, shape.k});
  const std::string label = shapeLabel(shape);
  for (GemmBackend backend : kBackends) {
    const std::string name = "linear/" + label + "/" + srt::toString(backend);
    labels()[name] = {label, srt::toString(backend)};
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
      srt::StaticModuleOptions options;
      options.gemm_backend = backend;
      srt::StaticModule module(linearModule(weight, bias), options);
      srt::StaticRuntime runtime(module);
      for (auto _ : state) {
        benchmark::DoNotOptimize(runtime({input}));
      }
    });
  }
  const std::string name = "linear/" + label + "/" + kBaseline;
  labels()[name] = {label, kBaseline};
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    torch::NoGradGuard no_grad;
    for (auto _ : state) {
      benchmark::DoNotOptimize(at::linear(input, weight, bias));
    }
  });
}

double microsecondsPer(benchmark::TimeUnit unit) {
  switch (unit) {
  case benchmark::kNanosecond:
    return 1e-3;
  case benchmark::kMicrosecond:
    return 1.0;
  case benchmark::kMillisecond:
    return 1e3;
  case benchmark::kSecond:
    return 1e6;
  }
  return 1.0;
}

// The console output, then one table: a row per shape, a column per backend, medians in µs.
// At one thread the table shows CPU time: the process is single-threaded then, and CPU time leaves
// out the time a shared machine gives to other processes, which wall time includes.
class MedianTable : public benchmark::ConsoleReporter {
public:
  explicit MedianTable(bool cpu_time) : cpu_time_(cpu_time) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const bool single = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      auto label = labels().find(run.run_name.function_name);
      if ((median || single) && label != labels().end()) {
        const double time = cpu_time_ ? run.GetAdjustedCPUTime() : run.GetAdjustedRealTime();
        const double us = time * microsecondsPer(run.time_unit);
        table_[label->second.first][label->second.second] = us;
        if (std::find(rows_.begin(), rows_.end(), label->second.first) == rows_.end()) {
          rows_.push_back(label->second.first);
        }
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::vector<std::string> columns;
    for (GemmBackend backend : kBackends) {
      columns.push_back(srt::toString(backend));
    }
    columns.push_back(kBaseline);
    std::ostream& out = GetOutputStream();
    out << "\nmedian " << (cpu_time_ ? "CPU" : "wall") << " µs (ratio to " << kBaseline << ")\n"
        << std::left << std::setw(28) << "shape";
    for (const auto& column : columns) {
      out << std::setw(18) << column;
    }
    out << "\n";
    for (const auto& row : rows_) {
      out << std::setw(28) << row;
      const auto& cells = table_[row];
      const auto baseline = cells.find(kBaseline);
      for (const auto& column : columns) {
        auto cell = cells.find(column);
        std::ostringstream text;
        if (cell != cells.end()) {
          text << std::fixed << std::setprecision(2) << cell->second;
          if (baseline != cells.end() && column != kBaseline) {
            text << " (" << std::setprecision(2) << cell->second / baseline->second << ")";
          }
        }
        out << std::setw(18) << text.str();
      }
      out << "\n";
    }
  }

private:
  bool cpu_time_;
  std::vector<std::string> rows_;
  std::map<std::string, std::map<std::string, double>> table_;
};

} // namespace

int main(int argc, char** argv) {
  // Our flag first: Google Benchmark rejects flags it does not know.
  int threads = 1;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      args.push_back(argv[i]);
    }
  }
  int args_count = static_cast<int>(args.size());
  // at::linear reaches OpenBLAS without ATen passing its thread count on; our kernels set it per
  // call (ops/gemm/threads.cpp), so the baseline gets the same count here.
  openblas_set_num_threads(threads);

  benchmark::Initialize(&args_count, args.data());
  srt::bench::addStandardContext(threads);
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("default_gemm_backend",
                              srt::toString(srt::StaticModuleOptions{}.gemm_backend));
  for (const Shape& shape : kShapes) {
    registerShape(shape);
  }
  MedianTable reporter(/*cpu_time=*/threads == 1);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
