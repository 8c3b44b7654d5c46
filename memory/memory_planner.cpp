#include "memory/memory_planner.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/CPUAllocator.h>

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

MemoryPlanner::MemoryPlanner(std::vector<ManagedTensor> managed, PlannerAlgorithm algorithm)
    : managed_(std::move(managed)), algorithm_(algorithm), slot_bytes_(managed_.size(), 0) {}

std::vector<Lifetime> MemoryPlanner::lifetimes() const {
  std::vector<Lifetime> result;
  result.reserve(managed_.size());
  for (size_t i = 0; i < managed_.size(); ++i) {
    result.push_back({managed_[i].first, managed_[i].last, slot_bytes_[i]});
  }
  return result;
}

size_t MemoryPlanner::lowerBoundBytes() const {
  return lowerBound(lifetimes());
}

void MemoryPlanner::allocate(c10::IValue* values) {
  if (plan_.offsets.empty()) {
    return; // sizes not learned yet
  }
  auto* base = static_cast<uint8_t*>(arena_.get());
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
  auto* begin = static_cast<uint8_t*>(arena_.get());
  auto* end = begin + arena_capacity_;
  for (size_t i = 0; i < managed_.size(); ++i) {
    at::Tensor* tensor = managedTensor(values[managed_[i].value_index]);
    if (tensor == nullptr) {
      continue;
    }
    c10::StorageImpl* storage = tensor->storage().unsafeGetStorageImpl();
    auto* data = static_cast<uint8_t*>(storage->data_ptr().get());
    const bool in_arena = data != nullptr && data >= begin && data < end;
    if (!in_arena && storage->nbytes() > 0) {
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
  if (needs_plan_) {
    replan();
  }
}

void MemoryPlanner::replan() {
  needs_plan_ = false;
  plan_ = planMemory(lifetimes(), algorithm_);
  if (plan_.arena_bytes > arena_capacity_) {
    // Runs after every run, from a noexcept path: if the arena cannot grow, run unplanned (the
    // kernels allocate as before) and try again after the next run.
    try {
      arena_ = c10::GetCPUAllocator()->allocate(plan_.arena_bytes);
      arena_capacity_ = plan_.arena_bytes;
      ++reallocations_;
    } catch (...) {
      arena_ = c10::DataPtr();
      arena_capacity_ = 0;
      plan_ = MemoryPlan{};
      needs_plan_ = true;
    }
  }
}

void MemoryPlanner::releaseMemory() {
  arena_ = c10::DataPtr();
  arena_capacity_ = 0;
  plan_ = MemoryPlan{};
  std::fill(slot_bytes_.begin(), slot_bytes_.end(), 0);
}

std::string MemoryPlanner::dump() const {
  return dumpPlan(lifetimes(), plan_);
}

} // namespace srt::memory
