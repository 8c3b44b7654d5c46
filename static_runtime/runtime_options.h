// RuntimeOptions: arguments of one runtime instance, known only where it runs (not when the
// module is built), passed explicitly when a runtime or pool is created and changeable between
// runs. Never global, never thread-local.
#pragma once

namespace srt {

// Which threads the runtime's own kernels split their work over (ARCHITECTURE.md, "Threads").
enum class IntraOpWorkers {
  // The runtime's own when OpenMP's sleep between parallel regions (OMP_WAIT_POLICY=PASSIVE or
  // GOMP_SPINCOUNT=0), where waking them for each node costs more than small nodes take;
  // OpenMP's where they never sleep (OMP_WAIT_POLICY=ACTIVE), whose spinning threads join a
  // region in about 2 us and would compete with a second set of spinning threads for the cores.
  // Where they spin for a while, then sleep (the default), each input shape's first runs try
  // both and keep the faster (static_runtime/workers_trial.h).
  kAuto,
  kOpenMp, // OpenMP's (ATen's and oneDNN's), whatever the wait policy
  // The runtime's own (ops/core/worker_pool.h), whatever the wait policy; warns once where
  // OpenMP's threads never sleep (OMP_WAIT_POLICY=ACTIVE), since they then compete for the cores.
  kOwn,
};

struct RuntimeOptions {
  // Intra-op threads (ATen parallel loops, oneDNN, OpenBLAS) while this runtime runs, set on the
  // calling thread for the duration of the run and restored after. 0 keeps the caller's setting.
  int intra_op_threads = 0;

  // Whose threads carry those intra-op threads in the kernels that split work themselves
  // (convolutions, pooling); libraries' own splits (oneDNN's GEMMs) stay on OpenMP's.
  IntraOpWorkers workers = IntraOpWorkers::kAuto;

  // Batch slices. When true (the default), the module's graph treats every item of a batch on its
  // own (StaticModule::batchIndependence), the run has at least 2 intra-op threads and its batched
  // inputs at least 2 items, the batch runs as one dim-0 slice per thread, each on a runtime of its
  // own with 1 intra-op thread, and the slices' results are joined: no node waits on another
  // thread (a batch-8 small CNN on 2 cores: 499 us split over nodes, ~400 us as two slices). Not
  // with manage_output_tensors, whose outputs must live in this runtime's arena, nor in timedRun
  // or under a profiler, which time this runtime's nodes. False: every node of the batch splits
  // over the threads.
  bool split_batch = true;

  // Profiler events. When true (the default) and a profiler (torch.profiler, the autograd
  // profiler, or any at::RecordFunction observer of the STATIC_RUNTIME_OP / _MODEL scopes) is
  // active on the calling thread, every executed node (sub-block nodes included) runs under an
  // at::RecordFunction named by its kind ("srt::fused_linear", "aten::layer_norm") and the
  // whole run under one named "forward", as in PyTorch's Static Runtime. Whether any observer is
  // active is asked once per run, so without one this costs one thread-local lookup per run and
  // nothing per node. False: no events at all, even under a profiler.
  bool profiling = true;

  // Throws c10::Error naming the bad field.
  void validate() const;

  bool operator==(const RuntimeOptions& other) const {
    return intra_op_threads == other.intra_op_threads && workers == other.workers &&
           split_batch == other.split_batch && profiling == other.profiling;
  }
  bool operator!=(const RuntimeOptions& other) const { return !(*this == other); }
};

} // namespace srt
