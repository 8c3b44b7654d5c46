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

// Every (image, row) of a batch once, in calls that never cross an image, each within one part:
// on one part, and on three parts of the runtime's own workers (two of them crossing images).
TEST(Parallelism, ImageRowsAreEachVisitedOnceWithinTheirImage) {
  constexpr int64_t kImages = 4;
  constexpr int64_t kRows = 5;
  ops::WorkerPool workers;
  workers.resize(3);
  for (const int64_t parts : {int64_t{1}, int64_t{3}}) {
    std::vector<std::atomic<int>> visits(kImages * kRows);
    std::vector<std::atomic<int>> part_calls(parts);
    ops::forEachPartOfImageRows(
        &workers, kImages, kRows, parts,
        [&](int64_t part, int64_t image, int64_t first_row, int64_t last_row) {
          ASSERT_LT(part, parts);
          ASSERT_LT(image, kImages);
          ASSERT_LE(0, first_row);
          ASSERT_LT(first_row, last_row);
          ASSERT_LE(last_row, kRows);
          ++part_calls[part];
          for (int64_t row = first_row; row < last_row; ++row) {
            ++visits[image * kRows + row];
          }
        });
    for (int64_t unit = 0; unit < kImages * kRows; ++unit) {
      EXPECT_EQ(visits[unit], 1) << "image " << unit / kRows << " row " << unit % kRows;
    }
    // 20 rows in three parts of 6, 7, 7: the parts from rows 6 and 13 start mid-image.
    for (int64_t part = 0; part < parts; ++part) {
      EXPECT_EQ(part_calls[part], parts == 1 ? kImages : 2) << "part " << part;
    }
  }
}

} // namespace
} // namespace srt::testing
