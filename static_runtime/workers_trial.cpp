#include "static_runtime/workers_trial.h"

#include <algorithm>

namespace srt {

namespace {

double median(std::vector<double> samples) {
  const auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

} // namespace

WorkersTrial::Choice WorkersTrial::next(uint64_t shape_key) {
  current_ = nullptr;
  auto found = shapes_.find(shape_key);
  if (found == shapes_.end()) {
    if (shapes_.size() >= kMostShapes) {
      return {};
    }
    found = shapes_.emplace(shape_key, Shape()).first;
  }
  Shape& shape = found->second;
  if (shape.block >= kBlocks) {
    return {shape.own_chosen, false};
  }
  current_ = &shape;
  return {shape.warm_runs >= kWarmRuns && blockIsOwn(shape.block), true};
}

void WorkersTrial::recordRun(double ms) {
  if (current_ == nullptr) {
    return;
  }
  Shape& shape = *current_;
  current_ = nullptr;
  if (shape.warm_runs < kWarmRuns) {
    ++shape.warm_runs;
    return;
  }
  if (shape.block_ms >= kSettleMs) {
    (blockIsOwn(shape.block) ? shape.own_ms : shape.openmp_ms).push_back(ms);
    ++shape.block_counted;
  }
  shape.block_ms += ms;
  if (shape.block_counted < kRunsPerBlock) {
    return;
  }
  shape.block_ms = 0;
  shape.block_counted = 0;
  if (++shape.block == kBlocks) {
    shape.own_chosen = median(shape.own_ms) < kOwnMargin * median(shape.openmp_ms);
    shape.own_ms = {};
    shape.openmp_ms = {};
  }
}

} // namespace srt
