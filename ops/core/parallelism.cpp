#include "ops/core/parallelism.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include <ATen/Parallel.h>

namespace srt::ops {
namespace {

constexpr double kSpinningRegionNs = 2'000;
constexpr double kSleepingRegionNs = 50'000;

// What handing a task to a spinning worker of a WorkerPool and waiting for it costs.
constexpr double kWorkerTaskNs = 2'000;

bool threadsSleepBetweenRegions() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::string value = policy == nullptr ? "" : policy;
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  return value == "passive" || (spin != nullptr && std::string(spin) == "0");
}

// Whether splitting work of `single_thread_ns` over `threads` saves more than a region costing
// `region_ns` twice over (the estimate is rough).
bool splitPays(int threads, double single_thread_ns, double region_ns) {
  return threads > 1 && single_thread_ns * (1.0 - 1.0 / threads) > 2.0 * region_ns;
}

} // namespace

bool openMpThreadsSleep() {
  static const bool sleep = threadsSleepBetweenRegions();
  return sleep;
}

double parallelRegionCost() {
  return openMpThreadsSleep() ? kSleepingRegionNs : kSpinningRegionNs;
}

int threadsFor(double single_thread_ns) {
  const int threads = at::get_num_threads();
  return splitPays(threads, single_thread_ns, parallelRegionCost()) ? threads : 1;
}

bool worthSplitting(double single_thread_ns) {
  return threadsFor(single_thread_ns) > 1;
}

bool worthSplittingOver(const WorkerPool& workers, double single_thread_ns) {
  return splitPays(workers.threads(), single_thread_ns, kWorkerTaskNs);
}

int threadsFor(const WorkerPool* workers, double single_thread_ns) {
  if (workers == nullptr) {
    return threadsFor(single_thread_ns);
  }
  return worthSplittingOver(*workers, single_thread_ns) ? workers->threads() : 1;
}

} // namespace srt::ops
