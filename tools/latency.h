// Timing several callables alternately in one process, summarized as median and p90.
#pragma once

#include <functional>
#include <vector>

namespace srt::cli {

struct LatencySummary {
  double median_us = 0;
  double p90_us = 0;
};

// Calls every contender `warmup` times untimed, then times `runs` rounds in which each contender
// runs once. Alternating within a round (and rotating who goes first) exposes all contenders to
// the same drift in clock speed, cache state and background load. One summary per contender.
std::vector<LatencySummary> measureAlternating(const std::vector<std::function<void()>>& contenders,
                                               int warmup, int runs);

} // namespace srt::cli
