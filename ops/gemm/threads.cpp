#include "ops/gemm/threads.h"

#include <algorithm>

#include <ATen/Parallel.h>
#include <cblas.h>
#include <omp.h>

#include "ops/core/parallelism.h"

namespace srt::ops {

// Debian's libdnnl is built with DNNL_CPU_RUNTIME=OMP (libgomp, the runtime libtorch uses too): a
// primitive runs in `#pragma omp parallel` regions sized by omp_get_max_threads() of the calling
// thread. That value is a per-thread ICV, so setting it changes nothing for runtimes on other
// threads; ATen's OpenMP backend keeps at::get_num_threads() in the same ICV, which is why the
// caller's value is put back afterwards.
OneDnnThreads::OneDnnThreads(int64_t multiply_adds, int most)
    : caller_(at::get_num_threads()),
      count_(std::min(
          most, threadsFor(static_cast<double>(multiply_adds) * kNanosecondsPerMultiplyAdd))) {
  if (omp_get_max_threads() != count_) {
    omp_set_num_threads(count_);
  }
}

OneDnnThreads::~OneDnnThreads() {
  if (omp_get_max_threads() != caller_) {
    omp_set_num_threads(caller_);
  }
}

// Debian's OpenBLAS is the pthread build: one process-wide pool whose size only
// openblas_set_num_threads changes (0.3.21 has no per-call or per-thread count), and ATen
// 1.13 forwards at::set_num_threads to MKL but not to OpenBLAS. So the count is set before each
// GEMM when it differs from the caller's. Runtimes on threads that asked for different counts
// make it flip between them; that changes speed, never results: each GEMM reads the count once
// when it starts, and the pthread build may be called from several threads at once. Runtimes of
// one process normally share one intra-op setting, so it settles after the first call.
void useAtenThreadsForOpenBlas() {
  const int threads = at::get_num_threads();
  if (openblas_get_num_threads() != threads) {
    openblas_set_num_threads(threads);
  }
}

} // namespace srt::ops
