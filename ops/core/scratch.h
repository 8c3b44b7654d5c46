// Fallback kernel scratch memory: owned by the runtime, lent to one kernel call at a time.
#pragma once

#include <cstddef>
#include <memory>

#include <c10/core/alignment.h>
#include <c10/core/impl/alloc_cpu.h>

namespace srt::ops {

// Grow-only, 64-byte aligned. Nodes of one runtime run one at a time, so they share it; what a
// kernel writes there is garbage once the kernel returns. It serves a node's first request of a
// new size (and runtimes without a memory planner); after that run the planner places the node's
// scratch in its arena (see ProcessedNode::scratch).
class Scratch {
public:
  static constexpr size_t kAlignment = 64;

  // At least `bytes` bytes, valid until the next call.
  void* get(size_t bytes) {
    ++requests_;
    if (bytes > capacity_) {
      const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
      // c10's allocator: a request the machine cannot serve (a huge shape) is a c10::Error naming
      // the bytes, as for any tensor, not a std::bad_alloc.
      buffer_.reset(static_cast<std::byte*>(c10::alloc_cpu(rounded)));
      capacity_ = rounded;
    }
    return buffer_.get();
  }

  // Frees the buffer (the next get() allocates again): once a plan serves the requests it
  // served, it would otherwise stay resident, unused, for the runtime's life.
  void release() {
    buffer_.reset();
    capacity_ = 0;
  }

  size_t capacity() const { return capacity_; }
  // Calls to get() so far: with a memory planner, the requests its plan did not cover yet.
  size_t requests() const { return requests_; }

private:
  static_assert(c10::gAlignment >= kAlignment, "c10::alloc_cpu must align scratch to 64 bytes");
  struct AlignedDelete {
    void operator()(std::byte* p) const { c10::free_cpu(p); }
  };
  std::unique_ptr<std::byte[], AlignedDelete> buffer_;
  size_t capacity_ = 0;
  size_t requests_ = 0;
};

} // namespace srt::ops
