// One runtime's arena: managed tensors' storages point into it during a run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Allocator.h>

#include "memory/planner.h"

namespace c10 {
struct IValue;
} // namespace c10

namespace srt::memory {

// A tensor the planner owns the memory of: where it sits in the runtime's value table and when
// it is live.
struct ManagedTensor {
  uint32_t value_index;
  size_t first;
  size_t last;
};

// Sizes are learned on the first run (kernels allocate as usual); from then on every managed
// tensor's storage is pointed at its slot before a run and detached after it. A tensor that
// outgrew its slot is reallocated by its kernel; the planner notices after the run and plans
// again with the larger size, never a smaller one, so shapes that alternate settle quickly.
// Not thread-safe: one per runtime. The value table passed in must be the runtime's.
class MemoryPlanner {
public:
  MemoryPlanner(std::vector<ManagedTensor> managed, PlannerAlgorithm algorithm);

  // Before a run: point every managed tensor that exists into the arena.
  void allocate(c10::IValue* values);
  // After a run (and after a failed one): learn sizes, detach storages, re-plan when needed.
  void deallocate(c10::IValue* values) noexcept;
  // Frees the arena of an idle runtime; the next runs learn and plan again.
  void releaseMemory();

  size_t numManaged() const { return managed_.size(); }
  size_t arenaBytes() const { return plan_.arena_bytes; }
  size_t lowerBoundBytes() const;
  size_t arenaReallocations() const { return reallocations_; }
  PlannerAlgorithm algorithm() const { return algorithm_; }
  std::string dump() const;

private:
  void replan();
  std::vector<Lifetime> lifetimes() const;

  std::vector<ManagedTensor> managed_;
  PlannerAlgorithm algorithm_;
  std::vector<size_t> slot_bytes_; // largest storage seen per managed tensor
  MemoryPlan plan_;
  c10::DataPtr arena_;
  size_t arena_capacity_ = 0;
  bool needs_plan_ = false;
  size_t reallocations_ = 0;
};

} // namespace srt::memory
