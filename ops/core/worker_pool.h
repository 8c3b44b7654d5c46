// A runtime's own intra-op threads, for kernels that split their work into independent tasks
// themselves (ARCHITECTURE.md, "Threads").
//
// Why not OpenMP's: Debian's libtorch and oneDNN run their parallel regions on libgomp, whose
// threads sleep as soon as a region ends when the process runs with OMP_WAIT_POLICY=PASSIVE
// (common in servers that share cores), and waking one takes 30-50 us here: more than a small
// convolution takes. These workers spin for a short while after each task, so the nodes of one
// run find them awake, and sleep after that, so an idle runtime costs no CPU. Kernels that use
// them run their libraries on one OpenMP thread per task (the workers' own count is 1), so the
// two kinds of threads do not compete for the cores.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <c10/util/FunctionRef.h>

namespace srt::ops {

class WorkerPool {
public:
  WorkerPool() = default;
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Threads that run tasks: the caller of run() and threads - 1 workers. Not during run().
  void resize(int threads);
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // task(i) once for every i in [0, tasks), spread over the caller and the workers; returns when
  // every worker has left the tasks. The first exception a task throws is rethrown here, after
  // that (the other tasks still run). Called by one thread at a time.
  void run(int64_t tasks, c10::function_ref<void(int64_t)> task);

private:
  void work(uint64_t seen);
  void runTasks();

  std::vector<std::thread> workers_;
  // A new batch of tasks: run() advances it; each worker runs the tasks of every generation once.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_task_{0};
  std::atomic<int> workers_busy_{0};
  int64_t tasks_ = 0;
  c10::function_ref<void(int64_t)>* task_ = nullptr;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  // Where workers sleep once they have spun long enough without work.
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stopping_{false};
};

} // namespace srt::ops
