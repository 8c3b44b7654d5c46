// memory/offset_assignment.h as a pure function: random lifetimes in, verified plans out; greedy
// compared with the brute-force optimum and with the naive baseline.
#include <algorithm>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "memory/offset_assignment.h"

namespace srt::memory {
namespace {

std::vector<Lifetime> randomLifetimes(std::mt19937& rng, size_t count, size_t steps,
                                      size_t max_bytes) {
  std::uniform_int_distribution<size_t> step(0, steps - 1);
  std::uniform_int_distribution<size_t> bytes(0, max_bytes);
  std::vector<Lifetime> lifetimes;
  for (size_t i = 0; i < count; ++i) {
    size_t a = step(rng);
    size_t b = step(rng);
    lifetimes.push_back({std::min(a, b), std::max(a, b), bytes(rng)});
  }
  return lifetimes;
}

bool overlapInTime(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Smallest arena over every placement. Some optimal plan has every buffer at offset 0 or on top
// of a buffer below it that is live at the same time (push each buffer down until it rests on
// one); so trying, in every order, every such resting place covers an optimum.
size_t bruteForceOptimum(const std::vector<Lifetime>& lifetimes) {
  const size_t n = lifetimes.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<size_t> offsets(n);
  size_t best = SIZE_MAX;

  std::function<void(size_t, size_t)> place = [&](size_t depth, size_t arena) {
    if (arena >= best) {
      return;
    }
    if (depth == n) {
      best = arena;
      return;
    }
    const size_t index = order[depth];
    const size_t bytes = alignUp(lifetimes[index].bytes);
    std::vector<size_t> candidates{0};
    for (size_t d = 0; d < depth; ++d) {
      const size_t other = order[d];
      if (overlapInTime(lifetimes[index], lifetimes[other])) {
        candidates.push_back(offsets[other] + alignUp(lifetimes[other].bytes));
      }
    }
    for (size_t offset : candidates) {
      bool fits = true;
      for (size_t d = 0; d < depth && fits; ++d) {
        const size_t other = order[d];
        const size_t other_end = offsets[other] + alignUp(lifetimes[other].bytes);
        fits = !(overlapInTime(lifetimes[index], lifetimes[other]) && offset < other_end &&
                 offsets[other] < offset + bytes);
      }
      if (fits) {
        offsets[index] = offset;
        place(depth + 1, std::max(arena, offset + bytes));
      }
    }
  };
  do {
    place(0, 0);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(Planner, EveryAlgorithmGivesValidPlansOnThousandsOfRandomSets) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t count = 1 + trial % 40;
    auto lifetimes = randomLifetimes(rng, count, 1 + trial % 25, 1 << (trial % 20));
    for (PlannerAlgorithm algorithm : {PlannerAlgorithm::kNaive, PlannerAlgorithm::kGreedyBySize}) {
      MemoryPlan plan = planMemory(lifetimes, algorithm);
      ASSERT_EQ(verifyPlan(lifetimes, plan), "") << "trial " << trial << "\n"
                                                 << dumpPlan(lifetimes, plan);
      ASSERT_GE(plan.arena_bytes, lowerBound(lifetimes));
    }
  }
}

TEST(Planner, GreedyIsNearTheOptimumAndBeatsNaiveOnSmallSets) {
  std::mt19937 rng(42);
  double ratio_sum = 0;
  int trials = 0;
  for (int trial = 0; trial < 300; ++trial) {
    auto lifetimes = randomLifetimes(rng, 2 + trial % 4, 6, 4096);
    const size_t optimum = bruteForceOptimum(lifetimes);
    const MemoryPlan greedy = planMemory(lifetimes, PlannerAlgorithm::kGreedyBySize);
    const MemoryPlan naive = planMemory(lifetimes, PlannerAlgorithm::kNaive);
    ASSERT_GE(greedy.arena_bytes, optimum) << "brute force missed a plan greedy found";
    ASSERT_GE(optimum, lowerBound(lifetimes));
    ASSERT_LE(greedy.arena_bytes, naive.arena_bytes);
    if (optimum > 0) {
      ratio_sum += static_cast<double>(greedy.arena_bytes) / optimum;
      ++trials;
    }
  }
  const double mean_ratio = ratio_sum / trials;
  RecordProperty("greedy_over_optimum_mean", std::to_string(mean_ratio));
  EXPECT_LT(mean_ratio, 1.05) << "greedy_by_size is on average " << mean_ratio
                              << "x the optimum arena";
}

TEST(Planner, ReusesMemoryOfBuffersThatAreNotLiveTogether) {
  // A chain: each buffer dies when the next is born, so two slots suffice.
  std::vector<Lifetime> chain;
  for (size_t i = 0; i < 10; ++i) {
    chain.push_back({i, i + 1, 1000});
  }
  MemoryPlan plan = planMemory(chain, PlannerAlgorithm::kGreedyBySize);
  EXPECT_EQ(verifyPlan(chain, plan), "");
  EXPECT_EQ(plan.arena_bytes, 2 * alignUp(1000));
  EXPECT_EQ(plan.arena_bytes, lowerBound(chain));
  EXPECT_EQ(planMemory(chain, PlannerAlgorithm::kNaive).arena_bytes, 10 * alignUp(1000));
}

TEST(Planner, AlignsOffsetsAndHandlesEmptyAndZeroSizedBuffers) {
  EXPECT_EQ(planMemory({}, PlannerAlgorithm::kGreedyBySize).arena_bytes, 0u);
  std::vector<Lifetime> lifetimes{{0, 3, 1}, {1, 2, 0}, {2, 5, 65}};
  MemoryPlan plan = planMemory(lifetimes, PlannerAlgorithm::kGreedyBySize);
  EXPECT_EQ(verifyPlan(lifetimes, plan), "");
  for (size_t offset : plan.offsets) {
    EXPECT_EQ(offset % kAlignment, 0u);
  }
  EXPECT_EQ(plan.arena_bytes, 64u + 128u);
}

TEST(Planner, VerifierCatchesOverlaps) {
  std::vector<Lifetime> lifetimes{{0, 2, 100}, {1, 3, 100}};
  MemoryPlan bad{PlannerAlgorithm::kNaive, {0, 64}, 256};
  EXPECT_NE(verifyPlan(lifetimes, bad).find("overlap in time and bytes"), std::string::npos);
  MemoryPlan misaligned{PlannerAlgorithm::kNaive, {0, 130}, 512};
  EXPECT_NE(verifyPlan(lifetimes, misaligned).find("aligned"), std::string::npos);
  MemoryPlan too_small{PlannerAlgorithm::kNaive, {0, 128}, 200};
  EXPECT_NE(verifyPlan(lifetimes, too_small).find("past the arena"), std::string::npos);
}

TEST(Planner, DumpIsReadable) {
  std::vector<Lifetime> lifetimes{{0, 1, 4096}, {1, 2, 128}};
  const std::string dump =
      dumpPlan(lifetimes, planMemory(lifetimes, PlannerAlgorithm::kGreedyBySize));
  EXPECT_NE(dump.find("greedy_by_size"), std::string::npos);
  EXPECT_NE(dump.find("lower bound"), std::string::npos);
  EXPECT_NE(dump.find("0..1"), std::string::npos);
}

} // namespace
} // namespace srt::memory
