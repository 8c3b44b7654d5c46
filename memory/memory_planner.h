// One runtime's arena: managed tensors' storages point into it during a run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memory/arena.h"
#include "memory/offset_assignment.h"

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
  std::string name = ""; // for dumps: the value's debug name
  // An earlier managed tensor (its index in the planner's list) whose slot this one takes over:
  // that one dies at this one's first step, where the kernel writes this one over it element by
  // element (the residual a convolution's epilogue adds). -1: a slot of its own.
  int64_t takes_slot_of = -1;
};

// Scratch memory one node's kernel asks for: live only during the step that runs the node, so it
// shares the arena with tensors that are not live then. The planner never sees the node; whoever
// runs it reports the bytes asked for (requestScratch) and lends it the block (scratchData).
struct ScratchBlock {
  size_t step = 0;
  std::string name = ""; // for dumps: the node's kind and output
};

// Sizes are learned on the first run (kernels allocate as usual); from then on every managed
// tensor's storage is pointed at its slot before a run and detached after it. A tensor that
// outgrew its slot is reallocated by its kernel; the planner notices after the run and plans
// again with the larger size, never a smaller one, so shapes that alternate settle quickly.
// Scratch blocks follow the same rule: sizes reported during a run are planned after it.
// Not thread-safe: one per runtime. The value table passed in must be the runtime's.
class MemoryPlanner {
public:
  MemoryPlanner(std::vector<ManagedTensor> managed, PlannerAlgorithm algorithm,
                std::vector<ScratchBlock> scratch = {});

  // Before a run: point every managed tensor that exists into the arena, growing it first when
  // the plan needs more. Throws c10::Error when the arena cannot grow (nothing is pointed then).
  void allocate(c10::IValue* values);
  // After a run (and after a failed one): learn sizes, detach storages, re-plan when needed.
  void deallocate(c10::IValue* values) noexcept;
  // Frees the arena of an idle runtime; the next runs learn and plan again.
  void releaseMemory();

  // Whether runs still allocate on their own (no plan yet: the first run, or the first after
  // releaseMemory()). Such a run should call releaseDeadAfter after each step: kernels allocated
  // its tensors, and keeping every one of them until the run ends would make the learning run's
  // peak the sum of all intermediates, far above what eager PyTorch or the planned runs hold.
  bool learning() const { return plan_.offsets.empty(); }
  // Learns the sizes of the managed tensors whose lifetime ends at `step` and frees them now,
  // exactly as deallocate() would after the run (their memory is free from then on in the plan
  // too).
  void releaseDeadAfter(size_t step, c10::IValue* values) noexcept;

  // Scratch block `i` must hold `bytes` from the next run on; a larger request than planned
  // makes deallocate() plan again. Cheap: call it for every block after every run.
  void requestScratch(size_t i, size_t bytes) {
    size_t& slot = slot_bytes_[managed_.size() + i];
    if (bytes > slot) {
      slot = bytes;
      needs_plan_ = true;
    }
  }
  // Where scratch block `i` sits in the arena, valid until the next deallocate(); nullptr while
  // it is unplanned. scratchBytes is then 0.
  void* scratchData(size_t i) const;
  size_t scratchBytes(size_t i) const;

  size_t numManaged() const { return managed_.size(); }
  size_t numScratch() const { return scratch_.size(); }
  size_t arenaBytes() const { return plan_.arena_bytes; }
  size_t lowerBoundBytes() const;
  size_t arenaReallocations() const { return arena_.reallocations(); }
  // Whether `address` points into the arena (planned tensors and scratch live there).
  bool arenaContains(const void* address) const { return arena_.contains(address); }
  // Changes whenever offsets or the arena may have (a new plan, releaseMemory): scratch lent
  // from an older generation must be lent again.
  size_t planGeneration() const { return generation_; }
  // Scratch blocks that hold memory in the current plan, and their bytes.
  size_t numPlannedScratch() const;
  size_t plannedScratchBytes() const;
  PlannerAlgorithm algorithm() const { return algorithm_; }
  // One line per buffer with memory (tensors as "%name", scratch as "scratch <node>").
  std::string dump() const;
  // "" when the current plan is valid (see verifyPlan), else the first violation.
  std::string verify() const;

  // The plan as data, for structured dumps (StaticRuntime::memoryPlanEntries): every buffer's
  // lifetime and largest size seen, managed tensors first, then scratch blocks (the buffer index
  // of scratch block i is numManaged() + i); the current offsets, one per buffer (none before the
  // first plan); and the buffers' names.
  std::vector<Lifetime> lifetimes() const;
  const MemoryPlan& plan() const { return plan_; }
  // The slots offsets are assigned to: one per buffer, but managed tensors that take over another's
  // slot (ManagedTensor::takes_slot_of) share it. Each slot's lifetime spans its buffers' and its
  // size is their largest; slotPlan() holds one offset per slot (none before the first plan).
  size_t numSlots() const { return num_slots_; }
  size_t slotOf(size_t buffer) const { return slot_of_[buffer]; }
  std::vector<Lifetime> slotLifetimes() const;
  const MemoryPlan& slotPlan() const { return slot_plan_; }
  const std::vector<ManagedTensor>& managed() const { return managed_; }
  const std::vector<ScratchBlock>& scratch() const { return scratch_; }

private:
  void replan();
  // Records managed tensor i's storage size and detaches its storage.
  void learnAndDetach(size_t i, c10::IValue* values) noexcept;

  std::vector<ManagedTensor> managed_;
  std::vector<ScratchBlock> scratch_;
  PlannerAlgorithm algorithm_;
  std::vector<size_t> slot_bytes_; // largest storage (or scratch request) seen per buffer
  std::vector<std::vector<size_t>> last_uses_at_; // managed tensors by the step they die after
  std::vector<size_t> slot_of_;                   // buffer -> slot
  size_t num_slots_ = 0;
  MemoryPlan slot_plan_; // one offset per slot
  MemoryPlan plan_;      // the same, one offset per buffer
  Arena arena_;
  bool needs_plan_ = false;
  size_t generation_ = 0;
};

} // namespace srt::memory
