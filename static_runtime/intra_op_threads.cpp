#include "static_runtime/intra_op_threads.h"

#include <ATen/Parallel.h>
#include <omp.h>

namespace srt {

ScopedIntraOpThreads::ScopedIntraOpThreads(int threads) {
  if (threads <= 0) {
    return;
  }
  // at::get_num_threads() first: on a thread's first call ATen initializes the ICV from its
  // process-wide default, which would otherwise overwrite ours in the middle of the run.
  const int current = at::get_num_threads();
  if (current != threads) {
    previous_ = current;
    omp_set_num_threads(threads);
  }
}

ScopedIntraOpThreads::~ScopedIntraOpThreads() {
  if (previous_ > 0) {
    omp_set_num_threads(previous_);
  }
}

} // namespace srt
