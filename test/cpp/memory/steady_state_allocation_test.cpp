// After the first runs, a runtime at fixed shapes allocates nothing for intermediates: the
// planner's arena holds them. Counted with a wrapper around the CPU allocator.
#include <atomic>

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include "harness/zoo.h"

namespace srt::testing {
namespace {

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

// Installs the counter for the test's duration and puts the original back.
class AllocationCounter {
public:
  AllocationCounter() : original_(c10::GetCPUAllocator()), counting_(original_) {
    c10::SetCPUAllocator(&counting_, /*priority=*/std::numeric_limits<uint8_t>::max());
  }
  ~AllocationCounter() { c10::SetCPUAllocator(original_, std::numeric_limits<uint8_t>::max()); }
  size_t allocations() const { return counting_.allocations(); }

private:
  c10::Allocator* original_;
  CountingAllocator counting_;
};

size_t countTensors(const c10::IValue& value) {
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

class SteadyState : public ::testing::TestWithParam<std::string> {};

// Runs 3..100 allocate nothing but the outputs the caller receives.
TEST_P(SteadyState, AllocatesOnlyOutputsAfterWarmUp) {
  const std::string& name = GetParam();
  StaticModule module(loadZooModel(name));
  StaticRuntime runtime(module);
  const InputSet inputs = loadZooInputs(name).front();
  const size_t outputs_per_run = countTensors(runtime(inputs.args, inputs.kwargs));
  (void)runtime(inputs.args, inputs.kwargs);

  AllocationCounter counter;
  for (int run = 3; run <= 100; ++run) {
    (void)runtime(inputs.args, inputs.kwargs);
  }
  EXPECT_EQ(counter.allocations(), 98 * outputs_per_run)
      << name << ": " << module.stats().fallback_nodes << " fallback nodes";
}

// With manage_output_tensors even the outputs come from the runtime's arena.
TEST_P(SteadyState, AllocatesNothingWithManagedOutputs) {
  const std::string& name = GetParam();
  StaticModuleOptions options;
  options.manage_output_tensors = true;
  StaticModule module(loadZooModel(name), options);
  StaticRuntime runtime(module);
  const InputSet inputs = loadZooInputs(name).front();
  for (int run = 1; run <= 2; ++run) {
    (void)runtime(inputs.args, inputs.kwargs);
    runtime.deallocateOutputTensors();
  }
  AllocationCounter counter;
  for (int run = 3; run <= 100; ++run) {
    (void)runtime(inputs.args, inputs.kwargs);
    runtime.deallocateOutputTensors();
  }
  EXPECT_EQ(counter.allocations(), 0u) << name;
}

// transformer_block joins when copy variants land: its merge-heads reshape after a permute
// cannot be a view, and the native reshape copies into a new tensor every run.
INSTANTIATE_TEST_SUITE_P(Models, SteadyState, ::testing::Values("mlp", "deep_and_wide"));

} // namespace
} // namespace srt::testing
