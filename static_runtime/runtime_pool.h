// RuntimePool: a bounded set of runtimes of one module that concurrent callers borrow.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <ATen/core/ivalue.h>

#include "static_runtime/argument_binding.h"
#include "static_runtime/runtime_options.h"

namespace srt {

class StaticModule;
class StaticRuntime;
struct ModuleStats;

// Runs a task on some thread; at::launch (ATen's inter-op pool) by default.
using Launcher = std::function<void(std::function<void()>)>;

// Creates up to `num_runtimes` runtimes lazily, each with `options`, and lends each to one caller
// at a time. Thread-safe. `module` must outlive the pool, and the pool must outlive its leases.
class RuntimePool {
public:
  // A borrowed runtime; returns it to the pool when destroyed, also when the run threw.
  class Lease {
  public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    StaticRuntime& runtime() { return *runtime_; }
    StaticRuntime* operator->() { return runtime_.get(); }

  private:
    friend class RuntimePool;
    Lease(RuntimePool& pool, std::unique_ptr<StaticRuntime> runtime);
    RuntimePool* pool_;
    std::unique_ptr<StaticRuntime> runtime_;
  };

  RuntimePool(const StaticModule& module, size_t num_runtimes, RuntimeOptions options = {});
  ~RuntimePool();
  RuntimePool(const RuntimePool&) = delete;
  RuntimePool& operator=(const RuntimePool&) = delete;

  // A free runtime, creating one if fewer than num_runtimes exist; otherwise blocks until one is
  // returned. With a timeout, throws c10::Error once it expires.
  [[nodiscard]] Lease acquire(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Runs forward on a borrowed runtime. With manage_output_tensors the outputs are copied out of
  // the runtime's output arena before it goes back to the pool.
  [[nodiscard]] c10::IValue run(std::vector<c10::IValue> args, const Kwargs& kwargs = {});

  // Runs forward via `launcher` (at::launch when empty); the future completes with the outputs,
  // or with the error the run threw.
  [[nodiscard]] c10::intrusive_ptr<c10::ivalue::Future>
  runAsync(std::vector<c10::IValue> args, Kwargs kwargs = {}, Launcher launcher = {});

  size_t numRuntimes() const { return num_runtimes_; }
  // Runtimes created so far (lazily, up to numRuntimes()).
  size_t numCreated() const;
  const RuntimeOptions& options() const { return options_; }
  // Applies to every runtime of the pool from its next run (runtimes in use: once returned).
  void setOptions(RuntimeOptions options);

  // Raises `stats`' memory figures to those of the idle runtimes.
  void addMemoryStats(ModuleStats& stats) const;

private:
  void giveBack(std::unique_ptr<StaticRuntime> runtime) noexcept;

  const StaticModule& module_;
  const size_t num_runtimes_;
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  RuntimeOptions options_;
  size_t created_ = 0;
  std::vector<std::unique_ptr<StaticRuntime>> idle_;
};

} // namespace srt
