// Counts what the CPU allocator hands out while a test runs: the memory tests' measure of
// "allocates nothing in steady state".
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include <ATen/core/ivalue.h>
#include <c10/core/CPUAllocator.h>

namespace srt::testing {

class CountingAllocator final : public c10::Allocator {
public:
  explicit CountingAllocator(c10::Allocator* wrapped) : wrapped_(wrapped) {}
  c10::DataPtr allocate(size_t bytes) const override {
    allocations_.fetch_add(1);
    return wrapped_->allocate(bytes);
  }
  c10::DeleterFnPtr raw_deleter() const override { return wrapped_->raw_deleter(); }
  size_t allocations() const { return allocations_.load(); }

private:
  c10::Allocator* wrapped_;
  mutable std::atomic<size_t> allocations_{0};
};

// Installs the counter for its lifetime and puts the original back.
class AllocationCounter {
public:
  AllocationCounter() : original_(c10::GetCPUAllocator()), counting_(original_) {
    c10::SetCPUAllocator(&counting_, /*priority=*/std::numeric_limits<uint8_t>::max());
  }
  ~AllocationCounter() { c10::SetCPUAllocator(original_, std::numeric_limits<uint8_t>::max()); }
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  size_t allocations() const { return counting_.allocations(); }

private:
  c10::Allocator* original_;
  CountingAllocator counting_;
};

// Tensors in a (possibly nested) tuple or list: what a run hands the caller.
inline size_t countTensors(const c10::IValue& value) {
  if (value.isTensor()) {
    return 1;
  }
  size_t count = 0;
  if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) {
      count += countTensors(element);
    }
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toList()) {
      count += countTensors(element);
    }
  }
  return count;
}

} // namespace srt::testing
