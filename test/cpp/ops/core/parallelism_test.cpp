// The threads cost model: small work stays on the caller's thread, large work is split, and
// splitIfWorthIt covers [0, n) exactly once either way.
#include <atomic>
#include <vector>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "ops/core/parallelism.h"

namespace srt::testing {
namespace {

// at::set_num_threads for the scope, restored after (other tests share the process).
class IntraOpThreads {
public:
  explicit IntraOpThreads(int threads) : saved_(at::get_num_threads()) {
    at::set_num_threads(threads);
  }
  ~IntraOpThreads() { at::set_num_threads(saved_); }

private:
  int saved_;
};

TEST(Parallelism, OneThreadNeverSplits) {
  const IntraOpThreads one(1);
  EXPECT_EQ(ops::threadsFor(1e12), 1);
  EXPECT_FALSE(ops::worthSplitting(1e12));
}

TEST(Parallelism, WorkCheaperThanWakingThreadsStaysOnTheCaller) {
  const IntraOpThreads two(2);
  EXPECT_EQ(ops::threadsFor(ops::parallelRegionCost()), 1);
  EXPECT_EQ(ops::threadsFor(0.0), 1);
}

TEST(Parallelism, WorkFarAboveTheRegionCostUsesEveryThread) {
  const IntraOpThreads two(2);
  EXPECT_EQ(ops::threadsFor(100.0 * ops::parallelRegionCost()), 2);
  EXPECT_TRUE(ops::worthSplitting(100.0 * ops::parallelRegionCost()));
}

TEST(Parallelism, RegionCostIsOneOfTheMeasuredPolicies) {
  const double cost = ops::parallelRegionCost();
  EXPECT_TRUE(cost == 2'000 || cost == 50'000) << cost;
}

// Every index visited once, whether the work is split or not.
void expectEachIndexOnce(int64_t n, int64_t grain, double single_thread_ns) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  ops::splitIfWorthIt(n, grain, single_thread_ns, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      visits[static_cast<size_t>(i)].fetch_add(1);
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  }
}

TEST(Parallelism, SplitIfWorthItCoversTheRangeOnce) {
  const IntraOpThreads two(2);
  expectEachIndexOnce(1000, 10, 1.0);                                  // too small: one call
  expectEachIndexOnce(100000, 10, 1000.0 * ops::parallelRegionCost()); // split
  expectEachIndexOnce(5, 10, 1000.0 * ops::parallelRegionCost());      // fewer than one grain
  expectEachIndexOnce(0, 10, 1e12);                                    // nothing
}

TEST(Parallelism, SmallWorkRunsOnTheCallingThread) {
  const IntraOpThreads two(2);
  int calls = 0;
  ops::splitIfWorthIt(100000, 10, 1.0, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100000);
    EXPECT_FALSE(at::in_parallel_region());
  });
  EXPECT_EQ(calls, 1);
}

} // namespace
} // namespace srt::testing
