// Whether a node's work runs on the caller's intra-op threads or on one: the one cost model every
// kernel that splits work asks (ARCHITECTURE.md, "Threads"). Splitting pays when it saves more
// than waking the other threads costs, and that cost depends on the OpenMP wait policy the
// process runs with: threads that spin between parallel regions (libgomp's default) join one in
// about 2 us; threads that sleep (OMP_WAIT_POLICY=PASSIVE, common in servers that share cores)
// take about 50 us to wake (measured on this project's 2-core machines). Under the passive policy
// a small model is faster on one thread than waking a second one for every node.
#pragma once

#include <algorithm>
#include <cstdint>

#include <ATen/Parallel.h>

#include "ops/core/worker_pool.h"

namespace srt::ops {

// Rough single-core costs, in nanoseconds, of the work kernels describe themselves by.
constexpr double kNanosecondsPerMultiplyAdd = 0.02; // float32 GEMM / convolution at ~100 GFLOP/s
constexpr double kNanosecondsPerElement = 0.25;     // a vectorized element-wise pass
// A copy between layouts of a tensor the node before left in cache (shufflenet_v2_x1_0's
// srt::from_blocked of 116 x 28 x 28 floats: 2.9 us on one thread, AMD EPYC, Zen 5).
constexpr double kNanosecondsPerCopiedElement = 0.04;

// The caller's at::get_num_threads() when work taking about `single_thread_ns` on one core is
// worth splitting over them, else 1.
int threadsFor(double single_thread_ns);

// threadsFor(...) > 1.
bool worthSplitting(double single_thread_ns);

// What waking the other threads for one parallel region costs here, in nanoseconds (read from
// OMP_WAIT_POLICY / GOMP_SPINCOUNT once; never changed).
double parallelRegionCost();

// Whether OpenMP's threads sleep as soon as a parallel region ends (same source).
bool openMpThreadsSleep();

// Whether they never sleep between regions (OMP_WAIT_POLICY=ACTIVE, GOMP_SPINCOUNT=infinite):
// threads of a process's earlier regions then keep spinning on their cores (same source).
bool openMpThreadsNeverSleep();

// Whether work taking about `single_thread_ns` on one core is worth splitting over `workers`
// (ops/core/worker_pool.h), which are awake during a run.
bool worthSplittingOver(const WorkerPool& workers, double single_thread_ns);

// threadsFor over the runtime's own `workers` where it has them (ProcessedNode::workers), else
// over OpenMP's.
int threadsFor(const WorkerPool* workers, double single_thread_ns);

// body(begin, end) over [0, n): split over the intra-op threads in tasks of at least `grain`
// when the whole takes long enough (`single_thread_ns`) for splitting to pay, else one call.
template <typename Body>
void splitIfWorthIt(int64_t n, int64_t grain, double single_thread_ns, const Body& body) {
  if (n <= 0) {
    return;
  }
  if (n <= grain || !worthSplitting(single_thread_ns)) {
    body(int64_t{0}, n);
  } else {
    at::parallel_for(0, n, grain, body);
  }
}

// splitIfWorthIt on the runtime's own `workers` where it has them (ProcessedNode::workers): one
// contiguous range per thread, each of at least `grain`; else on OpenMP's threads.
template <typename Body>
void splitIfWorthIt(WorkerPool* workers, int64_t n, int64_t grain, double single_thread_ns,
                    const Body& body);

// body(part, begin, end) for each of `parts` contiguous ranges [begin, end) of [0, n), on the
// runtime's own `workers` where it has them, else on OpenMP's threads. Kernels ask for one part
// per thread: at batch 8 on 2 threads the worker's half of a node takes 10-15% longer than the
// caller's, yet 2, 4 or 8 parts a thread, taken by whichever thread is free and with scratch per
// thread, measured level (the small CNN's stride-2 Winograd and stem loops: 463, 466, 466, 452 us
// a run against 463 for one part a thread, medians of 6 alternating processes, AMD EPYC, Zen 5).
template <typename Body>
void forEachPart(WorkerPool* workers, int64_t n, int64_t parts, const Body& body) {
  const auto run_part = [&](int64_t k) { body(k, n * k / parts, n * (k + 1) / parts); };
  if (parts <= 1) {
    body(int64_t{0}, int64_t{0}, n);
  } else if (workers != nullptr) {
    workers->run(parts, run_part);
  } else {
    at::parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        run_part(k);
      }
    });
  }
}

// forEachPart over a batch's rows: the `images` x `rows` units split into `parts` contiguous
// ranges, each walked image by image as body(part, image, first_row, last_row), so a part that
// crosses an image boundary sees one call per image it touches.
template <typename Body>
void forEachPartOfImageRows(WorkerPool* workers, int64_t images, int64_t rows, int64_t parts,
                            const Body& body) {
  forEachPart(workers, images * rows, parts, [&](int64_t part, int64_t first, int64_t last) {
    for (int64_t unit = first; unit < last;) {
      const int64_t image = unit / rows;
      const int64_t end = std::min(last, (image + 1) * rows);
      body(part, image, unit - image * rows, end - image * rows);
      unit = end;
    }
  });
}

template <typename Body>
void splitIfWorthIt(WorkerPool* workers, int64_t n, int64_t grain, double single_thread_ns,
                    const Body& body) {
  if (workers == nullptr) {
    splitIfWorthIt(n, grain, single_thread_ns, body);
    return;
  }
  if (n <= 0) {
    return;
  }
  const int64_t parts =
      std::min<int64_t>(workers->threads(), (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (parts <= 1 || !worthSplittingOver(*workers, single_thread_ns)) {
    body(int64_t{0}, n);
    return;
  }
  forEachPart(workers, n, parts, [&](int64_t, int64_t begin, int64_t end) { body(begin, end); });
}

} // namespace srt::ops
