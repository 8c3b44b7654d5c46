#include "memory/arena.h"

#include <exception>
#include <string>
#include <utility>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

namespace srt::memory {

void Arena::reserve(size_t bytes) {
  if (bytes <= capacity_) {
    return;
  }
  c10::DataPtr grown;
  std::string reason;
  try {
    grown = c10::GetCPUAllocator()->allocate(bytes);
  } catch (const c10::Error& e) {
    reason = e.what_without_backtrace();
  } catch (const std::exception& e) {
    reason = e.what();
  }
  // An allocator may also report failure by returning no memory.
  TORCH_CHECK(reason.empty() && grown.get() != nullptr,
              "static_runtime: could not grow the arena to ", bytes, " bytes (from ", capacity_,
              "): ", reason.empty() ? "the allocator returned no memory" : reason);
  // Nothing points into the old block between runs (the planner detaches every storage first),
  // so it is freed here, after the new one exists.
  block_ = std::move(grown);
  capacity_ = bytes;
  ++reallocations_;
}

void Arena::release() noexcept {
  block_ = c10::DataPtr();
  capacity_ = 0;
}

} // namespace srt::memory
