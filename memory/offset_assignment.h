// Offset assignment: a pure function from tensor lifetimes and sizes to places in one arena.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace srt::memory {

// Offsets and sizes are multiples of this (cache line; also what oneDNN and AVX-512 want).
inline constexpr size_t kAlignment = 64;

inline size_t alignUp(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// A buffer that must exist from the start of step `first` to the end of step `last` (inclusive;
// steps are node indices).
struct Lifetime {
  size_t first = 0;
  size_t last = 0;
  size_t bytes = 0;
};

enum class PlannerAlgorithm {
  kNaive,        // every buffer its own slot: the baseline
  kGreedyBySize, // each buffer into the best-fitting gap among buffers live at once, trying
                 // a few placement orders (largest, program, peak first) and keeping the best
};

const char* toString(PlannerAlgorithm algorithm);

struct MemoryPlan {
  PlannerAlgorithm algorithm = PlannerAlgorithm::kGreedyBySize;
  std::vector<size_t> offsets; // one per lifetime, in input order
  size_t arena_bytes = 0;
};

[[nodiscard]] MemoryPlan planMemory(const std::vector<Lifetime>& lifetimes,
                                    PlannerAlgorithm algorithm);

// The most bytes (aligned) live at any one step: no plan can use a smaller arena.
[[nodiscard]] size_t lowerBound(const std::vector<Lifetime>& lifetimes);

// "" when no two buffers overlap in both time and bytes, every offset is aligned and every buffer
// fits in the arena; else a description of the first violation.
[[nodiscard]] std::string verifyPlan(const std::vector<Lifetime>& lifetimes,
                                     const MemoryPlan& plan);

// One line per buffer (offset, size, lifetime and, when given, its name) sorted by offset, and
// the totals with the arena's ratio to the lower bound.
[[nodiscard]] std::string dumpPlan(const std::vector<Lifetime>& lifetimes, const MemoryPlan& plan,
                                   const std::vector<std::string>& names = {});

} // namespace srt::memory
