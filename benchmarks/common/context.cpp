#include "common/context.h"

#include <cstdlib>
#include <string>

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

namespace srt::bench {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "unset";
}

} // namespace

void addStandardContext() {
  const char* threads = std::getenv("SRT_BENCH_THREADS");
  at::set_num_threads(threads ? std::atoi(threads) : 1);
  benchmark::AddCustomContext("intra_op_threads", std::to_string(at::get_num_threads()));
  benchmark::AddCustomContext("OPENBLAS_CORETYPE", environment("OPENBLAS_CORETYPE"));
  benchmark::AddCustomContext("OPENBLAS_L2_SIZE", environment("OPENBLAS_L2_SIZE"));
}

} // namespace srt::bench
