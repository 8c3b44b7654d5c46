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

void addStandardContext(int threads) {
  at::set_num_threads(threads);
  benchmark::AddCustomContext("intra_op_threads", std::to_string(at::get_num_threads()));
  benchmark::AddCustomContext("OPENBLAS_CORETYPE", environment("OPENBLAS_CORETYPE"));
  benchmark::AddCustomContext("OPENBLAS_L2_SIZE", environment("OPENBLAS_L2_SIZE"));
}

} // namespace srt::bench
