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

bool threadsSleepBetweenRegions() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::string value = policy == nullptr ? "" : policy;
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  return value == "passive" || (spin != nullptr && std::string(spin) == "0");
}

} // namespace

double parallelRegionCost() {
  static const double cost = threadsSleepBetweenRegions() ? kSleepingRegionNs : kSpinningRegionNs;
  return cost;
}

int threadsFor(double single_thread_ns) {
  const int threads = at::get_num_threads();
  if (threads <= 1) {
    return 1;
  }
  // What splitting saves must pay for the region twice over: the estimate is rough.
  const double saved = single_thread_ns * (1.0 - 1.0 / threads);
  return saved > 2.0 * parallelRegionCost() ? threads : 1;
}

bool worthSplitting(double single_thread_ns) {
  return threadsFor(single_thread_ns) > 1;
}

} // namespace srt::ops
