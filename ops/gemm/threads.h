// Makes oneDNN and OpenBLAS use the caller's at::get_num_threads() for the next GEMM call.
#pragma once

#include <climits>
#include <cstdint>

namespace srt::ops {

// The OpenMP thread count one oneDNN GEMM or convolution runs with (Debian's oneDNN uses the
// OpenMP runtime and reads the calling thread's count at primitive creation and execution): the
// caller's at::get_num_threads(), or 1 for one too small to split (ops/core/parallelism.h), where
// waking threads costs more than it saves and, on a busy machine, a parallel region can wait a
// whole time slice for a thread.
// Set for the scope's lifetime, which must cover the primitive's creation and execution, and
// restored after: ATen keeps its own thread count in the same per-thread setting. `most` caps it
// (1 for a piece of work the caller splits over threads of its own).
class OneDnnThreads {
public:
  explicit OneDnnThreads(int64_t multiply_adds) : OneDnnThreads(multiply_adds, INT_MAX) {}
  OneDnnThreads(int64_t multiply_adds, int most);
  ~OneDnnThreads();
  OneDnnThreads(const OneDnnThreads&) = delete;
  OneDnnThreads& operator=(const OneDnnThreads&) = delete;
  // Part of a cached primitive's key.
  int count() const { return count_; }

private:
  int caller_;
  int count_;
};

// Sets OpenBLAS's process-wide thread count. Also called before ATen's own GEMMs, which on Debian
// go to OpenBLAS without ATen passing its thread count on.
void useAtenThreadsForOpenBlas();

} // namespace srt::ops
