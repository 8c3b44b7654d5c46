// Scoped intra-op thread count of the calling thread.
#pragma once

namespace srt {

// Sets the calling thread's intra-op thread count for its lifetime and restores the previous one.
// ATen's OpenMP backend (Debian's libtorch) keeps at::get_num_threads() in OpenMP's per-thread
// nthreads ICV, which oneDNN reads too, so this changes nothing for other threads, unlike
// at::set_num_threads, which also stores a process-wide default. `threads` <= 0: no change.
class ScopedIntraOpThreads {
public:
  explicit ScopedIntraOpThreads(int threads);
  ~ScopedIntraOpThreads();
  ScopedIntraOpThreads(const ScopedIntraOpThreads&) = delete;
  ScopedIntraOpThreads& operator=(const ScopedIntraOpThreads&) = delete;

private:
  int previous_ = 0;
};

} // namespace srt
