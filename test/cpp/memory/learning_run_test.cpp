// The first run, which teaches the planner its sizes, frees each intermediate after its last
// use, as the planned runs reuse its slot: its peak is the live set, not the sum of every
// intermediate. Measured with an allocator that tracks the bytes alive.
#include <algorithm>
#include <atomic>
#include <limits>

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"

namespace srt::testing {
namespace {

class PeakTrackingAllocator final : public c10::Allocator {
public:
  explicit PeakTrackingAllocator(c10::Allocator* wrapped) : wrapped_(wrapped) {}

  c10::DataPtr allocate(size_t bytes) const override {
    c10::DataPtr inner = wrapped_->allocate(bytes);
    void* data = inner.get();
    const size_t live = live_.fetch_add(bytes) + bytes;
    size_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
    auto* block = new Block{std::move(inner), bytes, this};
    return {data, block, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void resetPeak() { peak_.store(live_.load()); }
  size_t peak() const { return peak_.load(); }
  size_t live() const { return live_.load(); }

private:
  struct Block {
    c10::DataPtr inner;
    size_t bytes;
    const PeakTrackingAllocator* owner;
  };
  static void release(void* context) {
    auto* block = static_cast<Block*>(context);
    block->owner->live_.fetch_sub(block->bytes);
    delete block;
  }

  c10::Allocator* wrapped_;
  mutable std::atomic<size_t> live_{0};
  mutable std::atomic<size_t> peak_{0};
};

class TrackPeak {
public:
  TrackPeak() : original_(c10::GetCPUAllocator()), tracking_(original_) {
    c10::SetCPUAllocator(&tracking_, std::numeric_limits<uint8_t>::max());
  }
  ~TrackPeak() { c10::SetCPUAllocator(original_, std::numeric_limits<uint8_t>::max()); }
  PeakTrackingAllocator& allocator() { return tracking_; }

private:
  c10::Allocator* original_;
  PeakTrackingAllocator tracking_;
};

// Eight 1 MiB intermediates in a chain: each dies when the next is made.
constexpr const char* kChain = R"JIT(
def forward(self, x, w):
    y = torch.mm(x, w)
    y = torch.mm(y, w)
    y = torch.mm(y, w)
    y = torch.mm(y, w)
    y = torch.mm(y, w)
    y = torch.mm(y, w)
    y = torch.mm(y, w)
    y = torch.mm(y, w)
    return y.sum()
)JIT";

TEST(LearningRun, PeakIsTheLiveSetNotEveryIntermediate) {
  StaticModule module(scriptModule(kChain));
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({512, 512}) * 0.05;
  const at::Tensor w = torch::randn({512, 512}) * 0.05;
  constexpr size_t kIntermediate = 512 * 512 * sizeof(float);
  size_t learning_peak = 0;
  {
    TrackPeak tracking;
    tracking.allocator().resetPeak();
    const size_t before = tracking.allocator().live();
    const at::Tensor result = runtime({x, w}).toTensor();
    learning_peak = tracking.allocator().peak() - before;
    EXPECT_TRUE(result.allclose(
        torch::mm(
            torch::mm(
                torch::mm(torch::mm(torch::mm(torch::mm(torch::mm(torch::mm(x, w), w), w), w), w),
                          w),
                w),
            w)
            .sum(),
        1e-3, 1e-4));
  }
  // Two intermediates alive at once (a product and its operand), plus what mm keeps aside.
  EXPECT_LE(learning_peak, 3 * kIntermediate) << "learning run peak " << learning_peak;
  // Planned runs agree with the learning run.
  for (int run = 0; run < 2; ++run) {
    const at::Tensor result = runtime({x, w}).toTensor();
    EXPECT_TRUE(result.allclose(runtime({x, w}).toTensor()));
  }
}

} // namespace
} // namespace srt::testing
