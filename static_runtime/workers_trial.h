// WorkersTrial: whose threads carry a runtime's splits under IntraOpWorkers::kAuto where
// OpenMP's threads spin for a while after each parallel region before they sleep (libgomp's
// default, OMP_WAIT_POLICY unset). There neither answer is right for every model: the runtime's
// own workers hand out small nodes' pieces faster, but where some node still runs a library's
// region on OpenMP's threads (a oneDNN primitive that does not split into pieces), those threads
// spin on the cores the workers need. Measured in one process, 2 threads, batch 1, own against
// OpenMP's: small CNN 0.90, mobilenet_v3_small 0.74, efficientnet_b0 0.92, mobilenet_v2 1.06,
// resnet18 1.60 (AMD EPYC, Zen 5, 2026-12-03). So the runtime tries both on its first runs of
// each input shape and thread count, and keeps the faster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace srt {

class WorkersTrial {
public:
  // What the next run of inputs with `shape_key` (a hash of their sizes and the thread count)
  // uses: the runtime's own workers or OpenMP's threads, and whether its time is wanted
  // (recordRun) to decide that.
  struct Choice {
    bool own = false;
    bool timed = false;
  };
  Choice next(uint64_t shape_key);

  // The run next() last answered for finished in `ms` (failed runs are not recorded: the trial
  // then asks for the same run again).
  void recordRun(double ms);

  // The trial's schedule: kWarmRuns runs on OpenMP's threads (the first runs of a shape learn
  // memory sizes and time kernels), then kBlocks blocks alternating OpenMP's threads and own,
  // first OpenMP's. A block's runs count only once kSettleMs of its runs have passed: the other
  // choice's threads may still spin that long (libgomp's spin 300,000 rounds after each region,
  // several ms here; a 0.1 ms small CNN ran 25% slower on its own workers in blocks of three runs
  // than after them). A block ends after kRunsPerBlock counted runs. Own is kept where its median
  // counted run is below kOwnMargin of OpenMP's.
  static constexpr int kWarmRuns = 2;
  static constexpr int kBlocks = 6;
  static constexpr int kRunsPerBlock = 3;
  static constexpr double kSettleMs = 30.0;
  static constexpr double kOwnMargin = 0.95;
  // Input shapes tried at most; later ones run on OpenMP's threads untried.
  static constexpr size_t kMostShapes = 16;

private:
  struct Shape {
    int warm_runs = 0;
    int block = 0;       // kBlocks once decided
    double block_ms = 0; // time of the block's runs so far
    int block_counted = 0;
    std::vector<double> own_ms;
    std::vector<double> openmp_ms;
    bool own_chosen = false;
  };

  static bool blockIsOwn(int block) { return block % 2 == 1; }

  std::unordered_map<uint64_t, Shape> shapes_;
  Shape* current_ = nullptr;
};

} // namespace srt
