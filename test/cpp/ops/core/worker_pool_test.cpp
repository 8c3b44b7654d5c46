// The runtime's own worker threads (ops/core/worker_pool.h): every task runs exactly once per
// run, on more than one thread, whether the workers were spinning or asleep; a task's exception
// reaches the caller and the pool keeps working; resizing between runs; a nested node sees the
// pool as its parent does.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ops/core/processed_node.h"
#include "ops/core/worker_pool.h"

namespace srt::testing {
namespace {

// Runs `tasks` tasks on `pool` and checks each ran once; returns the threads that ran them.
std::set<std::thread::id> expectEachTaskOnce(ops::WorkerPool& pool, int64_t tasks) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.run(tasks, [&](int64_t i) {
    runs[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  for (int64_t i = 0; i < tasks; ++i) {
    EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << "task " << i << " of " << tasks;
  }
  return threads;
}

TEST(WorkerPool, EveryTaskOnceWhetherWorkersSpinOrSleep) {
  ops::WorkerPool pool;
  pool.resize(3);
  EXPECT_EQ(pool.threads(), 3);
  for (int round = 0; round < 200; ++round) {
    expectEachTaskOnce(pool, round % 7);
    if (round % 50 == 0) {
      // Long enough for the workers to stop spinning and sleep.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

TEST(WorkerPool, WorkersTakeTasks) {
  ops::WorkerPool pool;
  pool.resize(2);
  // Tasks that wait until two threads are inside: the caller alone would never get out.
  std::atomic<int> inside{0};
  pool.run(2, [&](int64_t) {
    inside.fetch_add(1);
    while (inside.load() < 2) {
      std::this_thread::yield();
    }
  });
  EXPECT_EQ(inside.load(), 2);
}

TEST(WorkerPool, ATaskErrorReachesTheCallerAndThePoolKeepsWorking) {
  ops::WorkerPool pool;
  pool.resize(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(8,
                        [&](int64_t i) {
                          ran.fetch_add(1);
                          if (i == 5) {
                            throw std::runtime_error("task 5");
                          }
                        }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8); // the other tasks still ran
  expectEachTaskOnce(pool, 5);
}

TEST(WorkerPool, ResizeBetweenRuns) {
  ops::WorkerPool pool;
  EXPECT_EQ(pool.threads(), 1);
  EXPECT_EQ(expectEachTaskOnce(pool, 4).size(), 1u); // the caller alone
  pool.resize(4);
  expectEachTaskOnce(pool, 9);
  pool.resize(2);
  EXPECT_EQ(pool.threads(), 2);
  expectEachTaskOnce(pool, 3);
  pool.resize(0);
  EXPECT_EQ(pool.threads(), 1);
  expectEachTaskOnce(pool, 2);
}

// A part built while the runtime ran on one thread (no workers) splits over them once later runs
// have them: ProcessedNode::nested shares the pool, not what workers() said at building.
TEST(WorkerPool, NestedNodeSharesItsParentsPoolAsItIsSized) {
  ops::WorkerPool pool;
  ops::Scratch scratch;
  ops::StaticNodeInfo info;
  ops::ProcessedNode parent(info, nullptr, &scratch, &pool);
  const ops::ProcessedNode part = parent.nested(info, nullptr, &scratch);
  EXPECT_EQ(part.workers(), nullptr);
  pool.resize(2);
  EXPECT_EQ(parent.workers(), &pool);
  EXPECT_EQ(part.workers(), &pool);
  pool.resize(1);
  EXPECT_EQ(part.workers(), nullptr);
}

} // namespace
} // namespace srt::testing
