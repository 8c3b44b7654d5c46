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

std::string lowercaseEnvironment(const char* name) {
  const char* value = std::getenv(name);
  std::string lowered = value == nullptr ? "" : value;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lowered;
}

bool threadsSleepBetweenRegions() {
  return lowercaseEnvironment("OMP_WAIT_POLICY") == "passive" ||
         lowercaseEnvironment("GOMP_SPINCOUNT") == "0";
}

// libgomp: ACTIVE, or an infinite spin count, keeps them spinning between regions for good.
bool threadsNeverSleep() {
  const std::string spin = lowercaseEnvironment("GOMP_SPINCOUNT");
  return lowercaseEnvironment("OMP_WAIT_POLICY") == "active" || spin == "infinite" ||
         spin == "infinity";
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

bool openMpThreadsNeverSleep() {
  static const bool never = threadsNeverSleep();
  return never;
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
