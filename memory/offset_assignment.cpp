#include "memory/offset_assignment.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

namespace srt::memory {
namespace {

bool overlapInTime(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

MemoryPlan planNaive(const std::vector<Lifetime>& lifetimes) {
  MemoryPlan plan{PlannerAlgorithm::kNaive, {}, 0};
  for (const Lifetime& lifetime : lifetimes) {
    plan.offsets.push_back(plan.arena_bytes);
    plan.arena_bytes += alignUp(lifetime.bytes);
  }
  return plan;
}

struct Block {
  size_t offset;
  size_t end;
};

// Places buffers in `order`: each into the smallest gap, between the blocks already placed that
// are live at the same time, that holds it; lowest offset breaks ties; with no such gap, above
// the highest of them.
MemoryPlan placeInOrder(const std::vector<Lifetime>& lifetimes, const std::vector<size_t>& order) {
  MemoryPlan plan{PlannerAlgorithm::kGreedyBySize, std::vector<size_t>(lifetimes.size(), 0), 0};
  std::vector<size_t> placed;
  std::vector<Block> conflicts;
  for (size_t index : order) {
    const size_t bytes = alignUp(lifetimes[index].bytes);
    conflicts.clear();
    for (size_t other : placed) {
      if (overlapInTime(lifetimes[index], lifetimes[other])) {
        conflicts.push_back(
            {plan.offsets[other], plan.offsets[other] + alignUp(lifetimes[other].bytes)});
      }
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [](const Block& a, const Block& b) { return a.offset < b.offset; });

    size_t best_offset = 0;
    size_t best_gap = SIZE_MAX;
    size_t cursor = 0; // lowest free offset above the blocks seen so far
    for (const Block& block : conflicts) {
      if (block.offset >= cursor + bytes && block.offset - cursor < best_gap) {
        best_gap = block.offset - cursor;
        best_offset = cursor;
      }
      cursor = std::max(cursor, block.end);
    }
    if (best_gap == SIZE_MAX) {
      best_offset = cursor;
    }
    plan.offsets[index] = best_offset;
    plan.arena_bytes = std::max(plan.arena_bytes, best_offset + bytes);
    placed.push_back(index);
  }
  return plan;
}

// Placement orders tried by greedy_by_size; the smallest arena wins. Planning runs once per new
// shape, not per run, and each order costs O(n^2) for n buffers, so trying several is cheap.
//  - largest first: big buffers are the hardest to fit later;
//  - program order: a slightly larger buffer placed first can fragment a chain of equal ones
//    (DeepAndWide: 1632 bytes before three 1600-byte buffers gave 1.46x the lower bound);
//  - peak first (TFLite's "greedy by breadth"): buffers live at the steps with the most bytes
//    live go first, so the peak, which sets the lower bound, is packed tightly (the fused
//    2-block transformer: 1.17x with the first two orders, see arena_size_test).
std::vector<std::vector<size_t>> placementOrders(const std::vector<Lifetime>& lifetimes) {
  std::vector<size_t> identity(lifetimes.size());
  std::iota(identity.begin(), identity.end(), 0);
  auto length = [&](size_t i) { return lifetimes[i].last - lifetimes[i].first; };

  std::vector<size_t> largest_first = identity;
  std::stable_sort(largest_first.begin(), largest_first.end(), [&](size_t a, size_t b) {
    const size_t a_bytes = alignUp(lifetimes[a].bytes);
    const size_t b_bytes = alignUp(lifetimes[b].bytes);
    return a_bytes != b_bytes ? a_bytes > b_bytes : length(a) > length(b);
  });

  std::vector<size_t> program_order = identity;
  std::stable_sort(program_order.begin(), program_order.end(),
                   [&](size_t a, size_t b) { return lifetimes[a].first < lifetimes[b].first; });

  size_t last_step = 0;
  for (const Lifetime& lifetime : lifetimes) {
    last_step = std::max(last_step, lifetime.last);
  }
  std::vector<size_t> live_bytes(lifetimes.empty() ? 0 : last_step + 1, 0);
  for (const Lifetime& lifetime : lifetimes) {
    for (size_t step = lifetime.first; step <= lifetime.last; ++step) {
      live_bytes[step] += alignUp(lifetime.bytes);
    }
  }
  std::vector<size_t> breadth(lifetimes.size(), 0);
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    for (size_t step = lifetimes[i].first; step <= lifetimes[i].last; ++step) {
      breadth[i] = std::max(breadth[i], live_bytes[step]);
    }
  }
  std::vector<size_t> peak_first = largest_first;
  std::stable_sort(peak_first.begin(), peak_first.end(),
                   [&](size_t a, size_t b) { return breadth[a] > breadth[b]; });

  return {std::move(largest_first), std::move(program_order), std::move(peak_first)};
}

MemoryPlan planGreedyBySize(const std::vector<Lifetime>& lifetimes) {
  std::optional<MemoryPlan> best;
  for (const std::vector<size_t>& order : placementOrders(lifetimes)) {
    MemoryPlan plan = placeInOrder(lifetimes, order);
    if (!best || plan.arena_bytes < best->arena_bytes) {
      best = std::move(plan);
    }
  }
  return std::move(*best);
}

} // namespace

const char* toString(PlannerAlgorithm algorithm) {
  switch (algorithm) {
  case PlannerAlgorithm::kNaive:
    return "naive";
  case PlannerAlgorithm::kGreedyBySize:
    return "greedy_by_size";
  }
  return "unknown";
}

MemoryPlan planMemory(const std::vector<Lifetime>& lifetimes, PlannerAlgorithm algorithm) {
  switch (algorithm) {
  case PlannerAlgorithm::kNaive:
    return planNaive(lifetimes);
  case PlannerAlgorithm::kGreedyBySize:
    return planGreedyBySize(lifetimes);
  }
  return planNaive(lifetimes);
}

size_t lowerBound(const std::vector<Lifetime>& lifetimes) {
  // Sweep over steps: +bytes where a buffer starts, -bytes after it ends.
  std::map<size_t, long long> delta;
  for (const Lifetime& lifetime : lifetimes) {
    const auto bytes = static_cast<long long>(alignUp(lifetime.bytes));
    delta[lifetime.first] += bytes;
    delta[lifetime.last + 1] -= bytes;
  }
  long long live = 0;
  long long peak = 0;
  for (const auto& [step, change] : delta) {
    live += change;
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

std::string verifyPlan(const std::vector<Lifetime>& lifetimes, const MemoryPlan& plan) {
  std::ostringstream problem;
  if (plan.offsets.size() != lifetimes.size()) {
    problem << "plan has " << plan.offsets.size() << " offsets for " << lifetimes.size()
            << " buffers";
    return problem.str();
  }
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    const size_t end = plan.offsets[i] + alignUp(lifetimes[i].bytes);
    if (plan.offsets[i] % kAlignment != 0) {
      problem << "buffer " << i << " at offset " << plan.offsets[i] << " is not " << kAlignment
              << "-byte aligned";
      return problem.str();
    }
    if (end > plan.arena_bytes) {
      problem << "buffer " << i << " ends at " << end << ", past the arena's " << plan.arena_bytes
              << " bytes";
      return problem.str();
    }
    for (size_t j = i + 1; j < lifetimes.size(); ++j) {
      const size_t other_end = plan.offsets[j] + alignUp(lifetimes[j].bytes);
      const bool overlap_in_bytes = plan.offsets[i] < other_end && plan.offsets[j] < end &&
                                    lifetimes[i].bytes > 0 && lifetimes[j].bytes > 0;
      if (overlap_in_bytes && overlapInTime(lifetimes[i], lifetimes[j])) {
        problem << "buffers " << i << " [" << plan.offsets[i] << ", " << end << ") steps "
                << lifetimes[i].first << ".." << lifetimes[i].last << " and " << j << " ["
                << plan.offsets[j] << ", " << other_end << ") steps " << lifetimes[j].first << ".."
                << lifetimes[j].last << " overlap in time and bytes";
        return problem.str();
      }
    }
  }
  return "";
}

std::string dumpPlan(const std::vector<Lifetime>& lifetimes, const MemoryPlan& plan,
                     const std::vector<std::string>& names) {
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
  const size_t lower_bound = lowerBound(lifetimes);
  std::ostringstream out;
  out << "memory plan (" << toString(plan.algorithm) << "): " << lifetimes.size()
      << " buffers, arena " << plan.arena_bytes << " bytes, lower bound " << lower_bound
      << " bytes";
  if (lower_bound > 0) {
    out << " (" << std::fixed << std::setprecision(2)
        << static_cast<double>(plan.arena_bytes) / static_cast<double>(lower_bound) << "x)";
  }
  out << "\n";
  out << "  buffer      offset        bytes  steps" << (names.empty() ? "" : "       name") << "\n";
  for (size_t i : order) {
    std::ostringstream steps;
    steps << lifetimes[i].first << ".." << lifetimes[i].last;
    out << "  " << std::setw(6) << i << "  " << std::setw(10) << plan.offsets[i] << "  "
        << std::setw(11) << lifetimes[i].bytes << "  " << std::left << std::setw(10) << steps.str()
        << std::right;
    if (i < names.size()) {
      out << " " << names[i];
    }
    out << "\n";
  }
  return out.str();
}

} // namespace srt::memory
