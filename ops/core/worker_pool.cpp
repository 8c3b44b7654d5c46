#include "ops/core/worker_pool.h"

#include <chrono>
#include <utility>

#include <immintrin.h>
#include <omp.h>

namespace srt::ops {
namespace {

// How long a worker waits for the next task awake before it sleeps: longer than the gaps between
// the parallel nodes of one run (a few unsplit nodes), short enough that an idle runtime stops
// using the core almost at once.
constexpr auto kSpinTime = std::chrono::microseconds(200);
// While spinning, a worker lets another thread of its core run (e.g. an OpenMP thread of a
// library region) this often.
constexpr int kSpinsPerYield = 64;

} // namespace

WorkerPool::~WorkerPool() {
  resize(1);
}

void WorkerPool::resize(int threads) {
  const size_t workers = threads > 1 ? static_cast<size_t>(threads - 1) : 0;
  if (workers == workers_.size()) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) {
    worker.join();
  }
  workers_.clear();
  stopping_.store(false);
  for (size_t i = 0; i < workers; ++i) {
    workers_.emplace_back([this, start = generation_.load()] { work(start); });
  }
}

void WorkerPool::run(int64_t tasks, c10::function_ref<void(int64_t)> task) {
  if (workers_.empty() || tasks <= 1) {
    for (int64_t i = 0; i < tasks; ++i) {
      task(i);
    }
    return;
  }
  tasks_ = tasks;
  task_ = &task;
  error_ = nullptr;
  next_task_.store(0, std::memory_order_relaxed);
  workers_busy_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1); // publishes the fields above
  if (sleeping_.load() > 0) {
    // Taking the lock orders this after a worker's check of generation_ on its way to sleep.
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  runTasks();
  while (workers_busy_.load(std::memory_order_acquire) > 0) {
    _mm_pause();
  }
  task_ = nullptr;
  if (error_) {
    std::rethrow_exception(std::exchange(error_, nullptr));
  }
}

void WorkerPool::runTasks() {
  for (int64_t i = next_task_.fetch_add(1); i < tasks_; i = next_task_.fetch_add(1)) {
    try {
      (*task_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) {
        error_ = std::current_exception();
      }
    }
  }
}

void WorkerPool::work(uint64_t seen) {
  // What a task calls (oneDNN, ATen's loops) runs on this thread alone.
  omp_set_num_threads(1);
  for (;;) {
    auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (int spins = 1; generation_.load(std::memory_order_acquire) == seen; ++spins) {
      if (stopping_.load(std::memory_order_relaxed)) {
        return;
      }
      _mm_pause();
      if (spins % kSpinsPerYield != 0) {
        continue;
      }
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() < deadline) {
        continue;
      }
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
      sleeping_.fetch_sub(1);
      deadline = std::chrono::steady_clock::now() + kSpinTime;
    }
    seen = generation_.load(std::memory_order_acquire);
    runTasks();
    workers_busy_.fetch_sub(1, std::memory_order_release);
  }
}

} // namespace srt::ops
