// The one block of memory a runtime's planned buffers live in: grows on demand, never shrinks
// until released, and says how large it could not get when the allocator fails.
#pragma once

#include <cstddef>
#include <cstdint>

#include <c10/core/Allocator.h>

namespace srt::memory {

// Not thread-safe: owned by one MemoryPlanner. Memory comes from c10's CPU allocator as it is
// when the arena grows (tests install a failing one with c10::SetCPUAllocator).
class Arena {
public:
  // Ensures capacity() >= bytes. On failure throws c10::Error "could not grow the arena to
  // <bytes> bytes" with the allocator's reason, and keeps the old block (and its contents).
  void reserve(size_t bytes);
  // Frees the block.
  void release() noexcept;

  uint8_t* data() const { return static_cast<uint8_t*>(block_.get()); }
  size_t capacity() const { return capacity_; }
  // Whether `address` points into the block: how a caller tells planned memory from its own.
  bool contains(const void* address) const {
    const auto* byte = static_cast<const uint8_t*>(address);
    return byte != nullptr && capacity_ > 0 && byte >= data() && byte < data() + capacity_;
  }
  // Blocks allocated so far (each growth is one).
  size_t reallocations() const { return reallocations_; }

private:
  c10::DataPtr block_;
  size_t capacity_ = 0;
  size_t reallocations_ = 0;
};

} // namespace srt::memory
