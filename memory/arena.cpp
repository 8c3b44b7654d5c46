#include "memory/arena.h"

#include <exception>
#include <string>
#include <utility>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace srt::memory {
namespace {

// The arena grows after a run whose kernels allocated their outputs themselves (the first run,
// or one whose shapes outgrew the plan). Freed, most of that memory stays in glibc's heap (its
// mmap threshold rises with every large block freed, so later blocks of that size come from the
// heap), resident but only reusable by later heap allocations: hand it back before the arena is
// allocated next to it, or the process keeps both (efficientnet_b0 at 224x224: a 5.7 MB arena on
// top of 20 MB of freed first-run tensors).
void returnFreedHeapMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

} // namespace

void Arena::reserve(size_t bytes) {
  if (bytes <= capacity_) {
    return;
  }
  returnFreedHeapMemory();
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
