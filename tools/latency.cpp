#include "tools/latency.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace srt::cli {
namespace {

double timeOnceUs(const std::function<void()>& call) {
  auto start = std::chrono::steady_clock::now();
  call();
  auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(stop - start).count();
}

// `samples_us` is not empty: --runs is at least 1.
LatencySummary summarize(std::vector<double> samples_us) {
  std::sort(samples_us.begin(), samples_us.end());
  size_t n = samples_us.size();
  double median = n % 2 == 1 ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2;
  // Nearest-rank percentile: the smallest sample at or above 90% of all samples.
  size_t p90_rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  return {median, samples_us[p90_rank - 1]};
}

} // namespace

std::vector<LatencySummary> measureAlternating(const std::vector<std::function<void()>>& contenders,
                                               int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) {
    for (const auto& call : contenders) {
      call();
    }
  }
  std::vector<std::vector<double>> samples(contenders.size());
  for (std::vector<double>& contender_samples : samples) {
    contender_samples.reserve(runs);
  }
  for (int round = 0; round < runs; ++round) {
    for (size_t k = 0; k < contenders.size(); ++k) {
      size_t which = (round + k) % contenders.size();
      samples[which].push_back(timeOnceUs(contenders[which]));
    }
  }
  std::vector<LatencySummary> summaries;
  summaries.reserve(samples.size());
  for (std::vector<double>& contender_samples : samples) {
    summaries.push_back(summarize(std::move(contender_samples)));
  }
  return summaries;
}

} // namespace srt::cli
