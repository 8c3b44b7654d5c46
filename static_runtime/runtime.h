// StaticRuntime: one thread's executor of a StaticModule. Owns all mutable per-run state.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "static_runtime/argument_binding.h"
#include "static_runtime/memory_plan_entry.h"
#include "static_runtime/runtime_options.h"
#include "static_runtime/stats.h"

namespace srt {

class StaticModule;

// Where runs spent their time, in milliseconds, summed over the runs timedRun was given it for
// (see benchmark.h, which reports them like PyTorch's IndividualMetrics).
struct RunTimes {
  // Binding arguments and moving them into the value table.
  double setup = 0;
  // Pointing managed tensors and kernel scratch into the arena (also output tensors when managed).
  double memory_alloc = 0;
  // One entry per top-level node; a prim::If / prim::Loop node's time includes its blocks'.
  std::vector<double> nodes;
  // Detaching managed tensors, dropping inputs and intermediates.
  double memory_dealloc = 0;
};

// Not thread-safe: one thread uses a runtime at a time (StaticModule::operator() hands each caller
// its own). Creating one does no graph work: it sizes the value table and builds node wrappers.
class StaticRuntime {
public:
  // `module` must outlive the runtime.
  explicit StaticRuntime(const StaticModule& module, RuntimeOptions options = {});
  ~StaticRuntime();
  StaticRuntime(const StaticRuntime&) = delete;
  StaticRuntime& operator=(const StaticRuntime&) = delete;

  // Runs forward. Arguments bind like a TorchScript method call: positionally, then by keyword,
  // then defaults. Returns what forward returns; the result is the caller's and stays valid
  // across later runs. On error, throws c10::Error and the runtime stays usable.
  [[nodiscard]] c10::IValue operator()(std::vector<c10::IValue> args, const Kwargs& kwargs = {});
  // operator(), adding the time of each phase and of each top-level node to `times` (sizing
  // times.nodes on first use). Runs exactly the same kernels; only clock reads are added.
  [[nodiscard]] c10::IValue timedRun(std::vector<c10::IValue> args, const Kwargs& kwargs,
                                     RunTimes& times);

  const StaticModule& module() const { return module_; }
  const RuntimeOptions& options() const { return options_; }
  // Takes effect from the next run.
  void setOptions(RuntimeOptions options);

  // The module's kernel counts with this runtime's memory figures.
  [[nodiscard]] ModuleStats stats() const;
  // Raises `stats`' memory figures to this runtime's where they are larger.
  void addMemoryStats(ModuleStats& stats) const;
  // The current arena layout, one line per managed tensor and kernel scratch block that holds
  // memory ("" without a planner).
  [[nodiscard]] std::string memoryPlan() const;
  // The same plan as data, one entry per buffer that holds memory, sorted by offset ({} before the
  // first run or without a planner).
  [[nodiscard]] std::vector<MemoryPlanEntry> memoryPlanEntries() const;
  // "" when the current plan is valid: no two buffers live at once share bytes, all fit the
  // arena. Otherwise the first violation.
  [[nodiscard]] std::string verifyMemoryPlan() const;
  // Whether `address` points into this runtime's arena of intermediates (not the output arena
  // of manage_output_tensors): what a caller receives must never do so.
  [[nodiscard]] bool arenaContains(const void* address) const;
  // Frees the arena of an idle runtime; the next run learns sizes and plans again.
  void releaseMemory();

  // Whether the last run split its nodes over the runtime's own workers rather than OpenMP's
  // threads (RuntimeOptions::workers; under kAuto it may change over a shape's first runs).
  [[nodiscard]] bool lastRunUsedOwnWorkers() const;

  // How many dim-0 slices of its batch the last run ran as (RuntimeOptions::split_batch); 0 when
  // it ran the batch whole.
  [[nodiscard]] int lastRunBatchSlices() const;

  // With manage_output_tensors: the tensors the last run returned live in this runtime's output
  // arena until this is called (after which they read as empty); running again before is an
  // error. A no-op otherwise.
  void deallocateOutputTensors();

private:
  using Clock = std::chrono::steady_clock;

  c10::IValue run(std::vector<c10::IValue> args, const Kwargs& kwargs, RunTimes* times);
  // The run of bound inputs (forward's arguments, then unbound constants), from `phase_start`
  // (read only with `times`).
  c10::IValue runBound(std::vector<c10::IValue> args, RunTimes* times,
                       Clock::time_point phase_start);
  // The run as one batch slice per intra-op thread (RuntimeOptions::split_batch), or std::nullopt
  // where it does not run so: the options, the module or the inputs do not allow it, or a slice
  // failed (the whole batch then runs, and reports the error in the caller's terms).
  std::optional<c10::IValue> runBatchSlices(const std::vector<c10::IValue>& args);
  c10::IValue takeOutputs();
  // Before a run: lends every node its planned scratch block when the plan has changed.
  void lendScratch();
  // After a run: tells the planner how much scratch every node asked for.
  void reportScratch() noexcept;
  // Drops inputs and every intermediate but reusable out-variant outputs, so nothing of the
  // caller's is kept alive between runs.
  void resetValues() noexcept;

  const StaticModule& module_;
  RuntimeOptions options_;
  // The value table, the nodes and the memory planners (runtime.cpp).
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace srt
