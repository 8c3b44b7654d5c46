#include "memory/memory_planner.h"

#include <algorithm>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

namespace srt::memory {
namespace {

void noDelete(void*) {}

at::Tensor* managedTensor(c10::IValue& value) {
  if (!value.isTensor()) {
    return nullptr;
  }
  at::Tensor& tensor = value.toTensor();
  return tensor.defined() && tensor.has_storage() ? &tensor : nullptr;
}

c10::StorageImpl* storageOf(c10::IValue& value) {
  at::Tensor* tensor = managedTensor(value);
  return tensor ? tensor->storage().unsafeGetStorageImpl() : nullptr;
}

} // namespace

MemoryPlanner::MemoryPlanner(std::vector<ManagedTensor> managed, PlannerAlgorithm algorithm,
                             std::vector<ScratchBlock> scratch)
    : managed_(std::move(managed)), scratch_(std::move(scratch)), algorithm_(algorithm),
      slot_bytes_(managed_.size() + scratch_.size(), 0),
      slot_of_(managed_.size() + scratch_.size(), 0) {
  for (size_t i = 0; i < slot_of_.size(); ++i) {
    const int64_t taken = i < managed_.size() ? managed_[i].takes_slot_of : -1;
    TORCH_CHECK(taken < static_cast<int64_t>(i) &&
                    (taken < 0 || managed_[static_cast<size_t>(taken)].last == managed_[i].first),
                "MemoryPlanner: managed tensor ", i,
                " can only take over the slot of an earlier "
                "one that dies at its first step");
    slot_of_[i] = taken < 0 ? num_slots_++ : slot_of_[static_cast<size_t>(taken)];
  }
  for (size_t i = 0; i < managed_.size(); ++i) {
    if (managed_[i].last >= last_uses_at_.size()) {
      last_uses_at_.resize(managed_[i].last + 1);
    }
    last_uses_at_[managed_[i].last].push_back(i);
  }
}

std::vector<Lifetime> MemoryPlanner::lifetimes() const {
  std::vector<Lifetime> result;
  result.reserve(slot_bytes_.size());
  for (size_t i = 0; i < managed_.size(); ++i) {
    result.push_back({managed_[i].first, managed_[i].last, slot_bytes_[i]});
  }
  for (size_t i = 0; i < scratch_.size(); ++i) {
    result.push_back({scratch_[i].step, scratch_[i].step, slot_bytes_[managed_.size() + i]});
  }
  return result;
}

std::vector<Lifetime> MemoryPlanner::slotLifetimes() const {
  std::vector<Lifetime> slots(num_slots_);
  std::vector<bool> seen(num_slots_, false);
  const std::vector<Lifetime> buffers = lifetimes();
  for (size_t i = 0; i < buffers.size(); ++i) {
    Lifetime& slot = slots[slot_of_[i]];
    if (!seen[slot_of_[i]]) {
      slot = buffers[i];
      seen[slot_of_[i]] = true;
      continue;
    }
    slot.first = std::min(slot.first, buffers[i].first);
    slot.last = std::max(slot.last, buffers[i].last);
    slot.bytes = std::max(slot.bytes, buffers[i].bytes);
  }
  return slots;
}

void* MemoryPlanner::scratchData(size_t i) const {
  const size_t buffer = managed_.size() + i;
  if (plan_.offsets.empty() || slot_bytes_[buffer] == 0 || arena_.capacity() < plan_.arena_bytes) {
    return nullptr; // unplanned, or the arena could not grow to this plan yet
  }
  return arena_.data() + plan_.offsets[buffer];
}

size_t MemoryPlanner::scratchBytes(size_t i) const {
  return scratchData(i) == nullptr ? 0 : slot_bytes_[managed_.size() + i];
}

size_t MemoryPlanner::numPlannedScratch() const {
  size_t count = 0;
  for (size_t i = 0; i < scratch_.size(); ++i) {
    count += scratchBytes(i) > 0 ? 1 : 0;
  }
  return count;
}

size_t MemoryPlanner::plannedScratchBytes() const {
  size_t bytes = 0;
  for (size_t i = 0; i < scratch_.size(); ++i) {
    bytes += scratchBytes(i);
  }
  return bytes;
}

size_t MemoryPlanner::lowerBoundBytes() const {
  return lowerBound(slotLifetimes());
}

void MemoryPlanner::allocate(c10::IValue* values) {
  if (plan_.offsets.empty()) {
    return; // sizes not learned yet
  }
  // Grown right after planning already, unless the allocator failed then: try again, and report
  // a failure now, before any kernel has run.
  arena_.reserve(plan_.arena_bytes);
  uint8_t* base = arena_.data();
  for (size_t i = 0; i < managed_.size(); ++i) {
    c10::StorageImpl* storage = storageOf(values[managed_[i].value_index]);
    if (storage == nullptr || slot_bytes_[i] == 0) {
      continue;
    }
    void* slot = base + plan_.offsets[i];
    storage->set_data_ptr_noswap(c10::DataPtr(slot, slot, noDelete, c10::Device(c10::kCPU)));
    storage->set_nbytes(slot_bytes_[i]);
  }
}

void MemoryPlanner::deallocate(c10::IValue* values) noexcept {
  for (size_t i = 0; i < managed_.size(); ++i) {
    learnAndDetach(i, values);
  }
  if (needs_plan_) {
    replan();
  }
}

void MemoryPlanner::releaseDeadAfter(size_t step, c10::IValue* values) noexcept {
  if (step >= last_uses_at_.size()) {
    return;
  }
  for (size_t i : last_uses_at_[step]) {
    learnAndDetach(i, values);
  }
}

void MemoryPlanner::learnAndDetach(size_t i, c10::IValue* values) noexcept {
  at::Tensor* tensor = managedTensor(values[managed_[i].value_index]);
  if (tensor == nullptr) {
    return;
  }
  c10::StorageImpl* storage = tensor->storage().unsafeGetStorageImpl();
  if (!arena_.contains(storage->data_ptr().get()) && storage->nbytes() > 0) {
    // First run, or the kernel outgrew its slot and allocated on its own: plan for it.
    slot_bytes_[i] = std::max(slot_bytes_[i], storage->nbytes());
    needs_plan_ = true;
  }
  // Detach: frees what a kernel allocated; an arena slot is not freed (no-op deleter).
  storage->set_data_ptr_noswap(c10::DataPtr(nullptr, c10::Device(c10::kCPU)));
  storage->set_nbytes(0);
  // Whoever still holds the tensor (a caller's handed-back output) sees an empty tensor, not
  // sizes that point past a storage that is gone.
  tensor->unsafeGetTensorImpl()->set_sizes_contiguous({0});
}

void MemoryPlanner::replan() {
  needs_plan_ = false;
  ++generation_;
  slot_plan_ = planMemory(slotLifetimes(), algorithm_);
  plan_ = MemoryPlan{slot_plan_.algorithm, {}, slot_plan_.arena_bytes};
  plan_.offsets.reserve(slot_of_.size());
  for (size_t slot : slot_of_) {
    plan_.offsets.push_back(slot_plan_.offsets[slot]);
  }
  // Grows now, while nothing points into the arena. From this noexcept path a failure is only
  // noted (verify() reports the short arena): the next allocate() tries again and reports it.
  try {
    arena_.reserve(plan_.arena_bytes);
  } catch (const c10::Error&) {
  }
}

void MemoryPlanner::releaseMemory() {
  arena_.release();
  plan_ = MemoryPlan{};
  slot_plan_ = MemoryPlan{};
  std::fill(slot_bytes_.begin(), slot_bytes_.end(), 0);
  ++generation_;
}

std::string MemoryPlanner::dump() const {
  if (plan_.offsets.empty()) {
    return "memory plan: none yet (sizes are learned on the first run)\n";
  }
  // Every node has a scratch block, most of them empty: list only slots that hold memory, named
  // by their buffers (tensors that share a slot as "%a > %b", in the order they take it).
  const std::vector<Lifetime> slots = slotLifetimes();
  std::vector<std::string> slot_names(num_slots_);
  std::vector<bool> slot_scratch(num_slots_, false);
  for (size_t i = 0; i < slot_of_.size(); ++i) {
    const bool scratch = i >= managed_.size();
    std::string& name = slot_names[slot_of_[i]];
    name += (name.empty() ? "" : " > ") +
            (scratch ? "scratch " + scratch_[i - managed_.size()].name : "%" + managed_[i].name);
    slot_scratch[slot_of_[i]] = scratch;
  }
  std::vector<Lifetime> shown;
  MemoryPlan shown_plan{plan_.algorithm, {}, plan_.arena_bytes};
  std::vector<std::string> names;
  size_t scratch_shown = 0;
  for (size_t slot = 0; slot < num_slots_; ++slot) {
    if (slots[slot].bytes == 0) {
      continue;
    }
    shown.push_back(slots[slot]);
    shown_plan.offsets.push_back(slot_plan_.offsets[slot]);
    names.push_back(slot_names[slot]);
    scratch_shown += slot_scratch[slot] ? 1 : 0;
  }
  return std::to_string(shown.size() - scratch_shown) + " managed tensors and " +
         std::to_string(scratch_shown) + " scratch blocks hold memory\n" +
         dumpPlan(shown, shown_plan, names);
}

std::string MemoryPlanner::verify() const {
  if (plan_.offsets.empty()) {
    return "";
  }
  std::string problem = verifyPlan(slotLifetimes(), slot_plan_);
  if (problem.empty() && plan_.arena_bytes > arena_.capacity()) {
    problem = "the plan needs " + std::to_string(plan_.arena_bytes) + " bytes but the arena has " +
              std::to_string(arena_.capacity());
  }
  return problem;
}

} // namespace srt::memory
