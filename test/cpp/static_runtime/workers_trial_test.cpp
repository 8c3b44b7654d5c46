// IntraOpWorkers::kAuto where OpenMP's threads spin between regions: the workers trial
// (static_runtime/workers_trial.h) on made-up run times, and a runtime under kAuto against the JIT
// while its trial runs and after it has decided.
#include <algorithm>
#include <chrono>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "ops/core/parallelism.h"
#include "static_runtime/workers_trial.h"

namespace srt::testing {
namespace {

constexpr uint64_t kShape = 42;
// More runs than any trial here takes (a block settles within kSettleMs / 0.5 ms runs).
constexpr int kMostTrialRuns = 2000;

// Runs a shape's whole trial, each run taking `run_ms(own, runs of this choice in a row so far)`;
// returns the choices in order.
template <typename RunMs>
std::vector<bool> runTrial(WorkersTrial& trial, uint64_t shape, const RunMs& run_ms) {
  std::vector<bool> own;
  int in_a_row = 0;
  for (int run = 0; run < kMostTrialRuns; ++run) {
    const WorkersTrial::Choice choice = trial.next(shape);
    if (!choice.timed) {
      return own;
    }
    in_a_row = !own.empty() && own.back() == choice.own ? in_a_row + 1 : 0;
    own.push_back(choice.own);
    trial.recordRun(run_ms(choice.own, in_a_row));
  }
  ADD_FAILURE() << "the trial did not end within " << kMostTrialRuns << " runs";
  return own;
}

std::vector<bool> runTrial(WorkersTrial& trial, uint64_t shape, double own_ms, double openmp_ms) {
  return runTrial(trial, shape, [&](bool own, int) { return own ? own_ms : openmp_ms; });
}

TEST(WorkersTrial, WarmsUpOnOpenMpThenAlternatesSettledBlocks) {
  WorkersTrial trial;
  const std::vector<bool> own = runTrial(trial, kShape, 1.0, 1.0);
  ASSERT_GT(own.size(), static_cast<size_t>(WorkersTrial::kWarmRuns));
  // Blocks of runs of one choice: warm-up and the first block on OpenMP's threads, then
  // alternating, each long enough to settle and count its runs.
  std::vector<int> blocks{0};
  for (size_t run = 1; run < own.size(); ++run) {
    if (own[run] != own[run - 1]) {
      blocks.push_back(0);
    }
    ++blocks.back();
  }
  ++blocks.front();
  EXPECT_FALSE(own.front());
  ASSERT_EQ(blocks.size(), static_cast<size_t>(WorkersTrial::kBlocks));
  const int settled = static_cast<int>(WorkersTrial::kSettleMs) + WorkersTrial::kRunsPerBlock;
  EXPECT_EQ(blocks.front(), WorkersTrial::kWarmRuns + settled);
  for (size_t block = 1; block < blocks.size(); ++block) {
    EXPECT_EQ(blocks[block], settled) << "block " << block;
  }
  // Equal times: own is not kept (it must win by the margin).
  EXPECT_FALSE(trial.next(kShape).own);
}

TEST(WorkersTrial, KeepsOwnOnlyWhereClearlyFaster) {
  WorkersTrial faster;
  runTrial(faster, kShape, 0.9, 1.0);
  WorkersTrial within_margin;
  runTrial(within_margin, kShape, 0.97, 1.0);
  WorkersTrial slower;
  runTrial(slower, kShape, 2.0, 1.0);
  for (int run = 0; run < 3; ++run) {
    const WorkersTrial::Choice choice = faster.next(kShape);
    EXPECT_TRUE(choice.own);
    EXPECT_FALSE(choice.timed);
    EXPECT_FALSE(within_margin.next(kShape).own);
    EXPECT_FALSE(slower.next(kShape).own);
  }
}

TEST(WorkersTrial, LeavesOutEachBlocksSettlingRuns) {
  // Own is faster once OpenMP's threads have stopped spinning, far slower before (its first five
  // runs of each block): counted, those runs would swing the medians.
  WorkersTrial trial;
  runTrial(trial, kShape,
           [](bool own, int in_a_row) { return own ? (in_a_row < 5 ? 5.0 : 0.5) : 1.0; });
  EXPECT_TRUE(trial.next(kShape).own);
}

TEST(WorkersTrial, DecidesEachShapeApart) {
  WorkersTrial trial;
  runTrial(trial, 1, 0.5, 1.0);
  runTrial(trial, 2, 2.0, 1.0);
  EXPECT_TRUE(trial.next(1).own);
  EXPECT_FALSE(trial.next(2).own);
  // A new shape starts its own trial on OpenMP's threads.
  const WorkersTrial::Choice fresh = trial.next(3);
  EXPECT_FALSE(fresh.own);
  EXPECT_TRUE(fresh.timed);
}

TEST(WorkersTrial, AFailedRunIsAskedForAgain) {
  WorkersTrial trial;
  // Through the warm-up and the first block, to the first own run.
  WorkersTrial::Choice choice = trial.next(kShape);
  for (int run = 0; !choice.own && run < kMostTrialRuns; ++run) {
    trial.recordRun(1.0);
    choice = trial.next(kShape);
  }
  ASSERT_TRUE(choice.own);
  // It fails (no recordRun): the trial still stands at that run.
  const WorkersTrial::Choice retried = trial.next(kShape);
  EXPECT_TRUE(retried.own);
  EXPECT_TRUE(retried.timed);
}

TEST(WorkersTrial, TriesAtMostSoManyShapes) {
  WorkersTrial trial;
  for (uint64_t shape = 0; shape < WorkersTrial::kMostShapes; ++shape) {
    EXPECT_TRUE(trial.next(shape).timed) << "shape " << shape;
  }
  const WorkersTrial::Choice untried = trial.next(WorkersTrial::kMostShapes);
  EXPECT_FALSE(untried.own);
  EXPECT_FALSE(untried.timed);
  trial.recordRun(0.001); // nothing to record: no effect
  EXPECT_FALSE(trial.next(WorkersTrial::kMostShapes).timed);
}

// A runtime under kAuto at two threads agrees with the JIT on every run while its trial runs and
// after, on two shapes; which threads it uses follows the wait policy this process was started
// with, and under the default (spin, then sleep) it tries both on each shape, then keeps one.
TEST(WorkersTrial, AutoRuntimeMatchesJitThroughItsTrial) {
  torch::jit::Module module("SmallCnn");
  module.register_parameter("w1", torch::randn({16, 3, 3, 3}) * 0.3, false);
  module.register_parameter("w2", torch::randn({32, 16, 3, 3}) * 0.1, false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, None, [1, 1], [1, 1]))
    y = torch.relu(torch.conv2d(y, self.w2, None, [2, 2], [1, 1]))
    return torch.adaptive_avg_pool2d(y, [1, 1]).flatten(1)
)JIT");
  module.eval();
  StaticModule prepared(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kAuto;
  options.split_batch = false; // the batch of 2 runs whole, its nodes on the trial's threads
  StaticRuntime runtime(prepared, options);
  const bool spin_then_sleep = !ops::openMpThreadsSleep() && !ops::openMpThreadsNeverSleep();
  // The trial ends once its blocks' runs have taken kBlocks x kSettleMs of node time, whatever
  // a run takes on this host (20 us on a fast one: a count of runs did not always reach it).
  // Calls run for 8 times that long, so the trial has ended unless its nodes took under an
  // eighth of each call; then 50 more calls show which threads it kept.
  const auto trial_wall_time = std::chrono::duration<double, std::milli>(8 * WorkersTrial::kBlocks *
                                                                         WorkersTrial::kSettleMs);
  constexpr int kRunsAfterTrial = 50;
  for (const at::Tensor& x : {torch::randn({1, 3, 32, 32}), torch::randn({2, 3, 24, 40})}) {
    const at::Tensor expected = module.forward({x}).toTensor();
    std::vector<bool> own;
    const auto start = std::chrono::steady_clock::now();
    int trial_runs = 0;
    for (int run = 0; trial_runs == 0 || run < trial_runs + kRunsAfterTrial; ++run) {
      const at::Tensor actual = runtime({x}).toTensor();
      if (run % 16 == 0 || trial_runs > 0) {
        EXPECT_TRUE(torch::allclose(actual, expected, 1e-4, 1e-4))
            << "input " << x.sizes() << ", run " << run;
      }
      own.push_back(runtime.lastRunUsedOwnWorkers());
      if (trial_runs == 0 && std::chrono::steady_clock::now() - start >= trial_wall_time) {
        trial_runs = run + 1;
      }
    }
    if (spin_then_sleep) {
      EXPECT_NE(std::count(own.begin(), own.end(), true), 0) << x.sizes();
      EXPECT_NE(std::count(own.begin(), own.end(), false), 0) << x.sizes();
      // Decided: the last runs all on one kind.
      EXPECT_TRUE(std::all_of(own.end() - kRunsAfterTrial, own.end(), [&](bool o) {
        return o == own.back();
      })) << x.sizes();
    } else {
      // Own where OpenMP's threads sleep at once, OpenMP's where they never sleep: no trial.
      EXPECT_TRUE(std::all_of(own.begin(), own.end(),
                              [](bool o) { return o == ops::openMpThreadsSleep(); }));
    }
  }
}

} // namespace
} // namespace srt::testing
