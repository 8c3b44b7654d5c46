#include "static_runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/util/hash.h>

#include "memory/memory_planner.h"
#include "ops/core/parallelism.h"
#include "ops/core/scratch.h"
#include "ops/core/worker_pool.h"
#include "static_runtime/batch_split.h"
#include "static_runtime/block_runner.h"
#include "static_runtime/internal_options.h"
#include "static_runtime/intra_op_threads.h"
#include "static_runtime/profiler_events.h"
#include "static_runtime/program.h"
#include "static_runtime/static_module.h"
#include "static_runtime/workers_trial.h"

namespace srt {

struct StaticRuntime::State {
  std::vector<c10::IValue> values;
  ops::Scratch scratch;
  // Sized at each run: the run's intra-op threads when they are the runtime's own, else 1.
  ops::WorkerPool workers;
  // Whose threads kAuto picks where OpenMP's spin between regions, by input shape.
  WorkersTrial workers_trial;
  bool last_run_own_workers = false;
  int last_run_batch_slices = 0;
  std::optional<memory::MemoryPlanner> planner;
  // The plan generation the nodes' scratch blocks were lent from.
  size_t lent_plan_generation = 0;
  std::optional<memory::MemoryPlanner> output_planner;
  bool outputs_outstanding = false;
  // Whether the current run's nodes record profiler events; decided at the start of each run.
  bool node_events = false;
  std::unique_ptr<BlockRunner> top_block;
  // Every node of every block, by node id (StaticNodeInfo::id); owned by top_block.
  std::vector<ops::ProcessedNode*> nodes;
  // One per slice of a batch that runs as slices (RuntimeOptions::split_batch), created on the
  // first such run.
  std::vector<std::unique_ptr<StaticRuntime>> slice_runtimes;
};

StaticRuntime::StaticRuntime(const StaticModule& module, RuntimeOptions options)
    : module_(module), options_(options), state_(std::make_unique<State>()) {
  options_.validate();
  const Program& program = module.program();
  state_->values.resize(program.num_values);
  // Constants are shared with the module: copying an IValue only bumps a reference count.
  std::copy(program.constants.begin(), program.constants.end(),
            state_->values.begin() + program.num_inputs);
  state_->nodes.resize(program.num_nodes);
  state_->top_block =
      std::make_unique<BlockRunner>(program, 0, state_->values.data(), &state_->scratch,
                                    &state_->workers, state_->node_events, &state_->nodes);
  if (module.options().optimize_memory) {
    state_->planner.emplace(program.managed_tensors,
                            plannerAlgorithm(module.options().memory_planner),
                            program.scratch_blocks);
  }
  if (module.options().manage_output_tensors) {
    state_->output_planner.emplace(program.managed_output_tensors,
                                   plannerAlgorithm(module.options().memory_planner));
  }
}

StaticRuntime::~StaticRuntime() = default;

void StaticRuntime::setOptions(RuntimeOptions options) {
  options.validate();
  options_ = options;
}

namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds from `start` to now; moves `start` to now, so consecutive phases need one read.
double lap(Clock::time_point& start) {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - start).count();
  start = now;
  return ms;
}

// The sizes of a run's tensor inputs and its thread count, hashed: what the workers trial keys
// its decisions by.
uint64_t inputShapeKey(const c10::IValue* inputs, size_t count, int threads) {
  size_t key = c10::get_hash(threads, count);
  for (size_t i = 0; i < count; ++i) {
    if (inputs[i].isTensor()) {
      const at::Tensor& tensor = inputs[i].toTensor();
      key = c10::hash_combine(key, static_cast<size_t>(tensor.dim()));
      for (const int64_t size : tensor.sizes()) {
        key = c10::hash_combine(key, static_cast<size_t>(size));
      }
    }
  }
  return key;
}

// Whose threads the run about to start on `inputs` splits its nodes over (see IntraOpWorkers),
// and whether the workers trial wants its time.
WorkersTrial::Choice chooseWorkers(IntraOpWorkers workers, WorkersTrial& trial,
                                   const c10::IValue* inputs, size_t count) {
  switch (workers) {
  case IntraOpWorkers::kOwn:
    if (ops::openMpThreadsNeverSleep() && at::get_num_threads() > 1) {
      TORCH_WARN_ONCE(
          "static_runtime: workers=\"own\" with OpenMP's threads set never to sleep "
          "(OMP_WAIT_POLICY=ACTIVE or GOMP_SPINCOUNT=infinite): the threads of OpenMP's earlier "
          "parallel regions keep spinning on the cores the runtime's own workers need (a "
          "resnet18 stage ran 10x slower on 2 cores). Use workers=\"auto\" (OpenMP's threads "
          "under this policy) or OMP_WAIT_POLICY=PASSIVE.");
    }
    return {true, false};
  case IntraOpWorkers::kOpenMp:
    return {};
  case IntraOpWorkers::kAuto:
    break;
  }
  if (at::get_num_threads() <= 1 || ops::openMpThreadsNeverSleep()) {
    return {};
  }
  if (ops::openMpThreadsSleep()) {
    return {true, false};
  }
  return trial.next(inputShapeKey(inputs, count, at::get_num_threads()));
}

} // namespace

c10::IValue StaticRuntime::operator()(std::vector<c10::IValue> args, const Kwargs& kwargs) {
  return run(std::move(args), kwargs, nullptr);
}

c10::IValue StaticRuntime::timedRun(std::vector<c10::IValue> args, const Kwargs& kwargs,
                                    RunTimes& times) {
  times.nodes.resize(state_->top_block->numNodes(), 0.0);
  return run(std::move(args), kwargs, &times);
}

// `times` is null except for timedRun: the normal path pays one untaken branch per phase.
c10::IValue StaticRuntime::run(std::vector<c10::IValue> args, const Kwargs& kwargs,
                               RunTimes* times) {
  Clock::time_point phase_start = times != nullptr ? Clock::now() : Clock::time_point();
  TORCH_CHECK(!state_->outputs_outstanding,
              "StaticRuntime: the tensors the previous run returned still live in this runtime's "
              "output arena (manage_output_tensors=true); call deallocateOutputTensors() before "
              "running again");
  // Spans the whole run, reset included; declared before anything that must end inside it.
  std::optional<RunEvent> run_event;
  state_->node_events = false;
  if (options_.profiling) {
    run_event.emplace(args);
    state_->node_events = nodeEventsWanted();
  }
  bindArguments(module_.schema(), args, kwargs);
  module_.appendUnboundConstants(args);
  TORCH_INTERNAL_ASSERT(args.size() == module_.program().num_inputs);
  state_->last_run_batch_slices = 0;
  if (times == nullptr) {
    if (std::optional<c10::IValue> joined = runBatchSlices(args)) {
      return std::move(*joined);
    }
  }
  return runBound(std::move(args), times, phase_start);
}

std::optional<c10::IValue> StaticRuntime::runBatchSlices(const std::vector<c10::IValue>& args) {
  const int threads =
      options_.intra_op_threads > 0 ? options_.intra_op_threads : at::get_num_threads();
  // Under a profiler, the batch runs whole: slices would record no per-node events.
  if (!options_.split_batch || threads < 2 || state_->output_planner || state_->node_events) {
    return std::nullopt;
  }
  const passes::BatchIndependence& independence = module_.batchIndependence();
  const std::optional<int64_t> batch = splittableBatch(independence, args);
  if (!batch || *batch < 2) {
    return std::nullopt;
  }
  const int64_t slices = std::min<int64_t>(threads, *batch);
  RuntimeOptions slice_options = options_;
  slice_options.intra_op_threads = 1;
  slice_options.workers = IntraOpWorkers::kOpenMp;
  slice_options.split_batch = false;
  while (static_cast<int64_t>(state_->slice_runtimes.size()) < slices) {
    state_->slice_runtimes.push_back(std::make_unique<StaticRuntime>(module_, slice_options));
  }
  std::vector<c10::IValue> parts(slices);
  state_->workers.resize(static_cast<int>(slices));
  state_->last_run_own_workers = false;
  try {
    state_->workers.run(slices, [&](int64_t slice) {
      const auto [begin, length] = sliceBounds(*batch, slices, slice);
      StaticRuntime& runtime = *state_->slice_runtimes[slice];
      runtime.setOptions(slice_options);
      parts[slice] = runtime.runBound(sliceInputs(independence, args, begin, length), nullptr,
                                      Clock::time_point());
    });
  } catch (const std::exception&) {
    // The whole batch runs again as one and reports the error in terms of the caller's sizes.
    return std::nullopt;
  }
  state_->last_run_batch_slices = static_cast<int>(slices);
  return joinSlices(parts);
}

c10::IValue StaticRuntime::runBound(std::vector<c10::IValue> args, RunTimes* times,
                                    Clock::time_point phase_start) {
  const Program& program = module_.program();
  struct ResetOnExit {
    StaticRuntime& runtime;
    RunTimes* times;
    bool succeeded = false;
    ~ResetOnExit() {
      Clock::time_point start = times != nullptr ? Clock::now() : Clock::time_point();
      if (runtime.state_->planner) {
        runtime.reportScratch();
        runtime.state_->planner->deallocate(runtime.state_->values.data());
        // A failed run may have taught the planner sizes this machine cannot hold (an input far
        // larger than any before, whose arena could not grow): forget them, as releaseMemory()
        // does, rather than fail every later run on them.
        if (!succeeded && !runtime.state_->planner->verify().empty()) {
          runtime.releaseMemory();
        }
      }
      if (runtime.state_->output_planner) {
        // Returned outputs stay until handed back; after a failure nobody holds them.
        runtime.state_->outputs_outstanding =
            succeeded && runtime.state_->output_planner->numManaged() > 0;
        if (!succeeded) {
          runtime.state_->output_planner->deallocate(runtime.state_->values.data());
        }
      }
      runtime.resetValues();
      if (times != nullptr) {
        times->memory_dealloc += lap(start);
      }
    }
  } reset_on_exit{*this, times};
  std::move(args.begin(), args.end(), state_->values.begin());
  if (times != nullptr) {
    times->setup += lap(phase_start);
  }
  if (state_->planner) {
    state_->planner->allocate(state_->values.data());
    lendScratch();
  }
  if (state_->output_planner) {
    state_->output_planner->allocate(state_->values.data());
  }
  if (times != nullptr) {
    times->memory_alloc += lap(phase_start);
  }

  // Inference only: recording autograd history would cost time and keep activations alive.
  c10::AutoGradMode no_grad(false);
  ScopedIntraOpThreads threads(options_.intra_op_threads);
  const WorkersTrial::Choice workers = chooseWorkers(options_.workers, state_->workers_trial,
                                                     state_->values.data(), program.num_inputs);
  state_->workers.resize(workers.own ? at::get_num_threads() : 1);
  state_->last_run_own_workers = workers.own && at::get_num_threads() > 1;
  const Clock::time_point nodes_start = workers.timed ? Clock::now() : Clock::time_point();
  if (times != nullptr) {
    state_->top_block->runTimed(times->nodes.data());
  } else if (state_->planner && state_->planner->learning()) {
    // The top-level node index is the planner's step.
    memory::MemoryPlanner& planner = *state_->planner;
    c10::IValue* values = state_->values.data();
    state_->top_block->runThen(
        [&planner, values](size_t step) { planner.releaseDeadAfter(step, values); });
  } else {
    state_->top_block->run();
  }
  if (workers.timed) {
    state_->workers_trial.recordRun(
        std::chrono::duration<double, std::milli>(Clock::now() - nodes_start).count());
  }
  c10::IValue outputs = takeOutputs();
  reset_on_exit.succeeded = true;
  return outputs;
}

bool StaticRuntime::lastRunUsedOwnWorkers() const {
  return state_->last_run_own_workers;
}

int StaticRuntime::lastRunBatchSlices() const {
  return state_->last_run_batch_slices;
}

void StaticRuntime::lendScratch() {
  if (state_->planner->planGeneration() == state_->lent_plan_generation) {
    return;
  }
  for (size_t i = 0; i < state_->nodes.size(); ++i) {
    state_->nodes[i]->setPlannedScratch(state_->planner->scratchData(i),
                                        state_->planner->scratchBytes(i));
  }
  state_->lent_plan_generation = state_->planner->planGeneration();
  // The new plan holds every request the fallback buffer served (nodes inside sub-blocks grow
  // it again once, if they need it).
  state_->scratch.release();
}

void StaticRuntime::reportScratch() noexcept {
  for (size_t i = 0; i < state_->nodes.size(); ++i) {
    state_->planner->requestScratch(i, state_->nodes[i]->scratchRequested());
  }
}

void StaticRuntime::deallocateOutputTensors() {
  if (state_->output_planner && state_->outputs_outstanding) {
    state_->output_planner->deallocate(state_->values.data());
    state_->outputs_outstanding = false;
  }
}

c10::IValue StaticRuntime::takeOutputs() {
  const std::vector<OutputSlot>& outputs = module_.program().outputs;
  auto take = [this](const OutputSlot& slot) {
    return slot.movable ? std::move(state_->values[slot.index]) : state_->values[slot.index];
  };
  if (outputs.size() == 1) {
    return take(outputs.front());
  }
  std::vector<c10::IValue> elements;
  elements.reserve(outputs.size());
  for (const OutputSlot& slot : outputs) {
    elements.push_back(take(slot));
  }
  return c10::ivalue::Tuple::create(std::move(elements));
}

ModuleStats StaticRuntime::stats() const {
  ModuleStats stats = countKernels(module_.program());
  addMemoryStats(stats);
  return stats;
}

void StaticRuntime::addMemoryStats(ModuleStats& stats) const {
  for (const std::unique_ptr<StaticRuntime>& slice_runtime : state_->slice_runtimes) {
    slice_runtime->addMemoryStats(stats);
  }
  stats.unplanned_scratch_requests =
      std::max(stats.unplanned_scratch_requests, state_->scratch.requests());
  stats.unplanned_scratch_bytes =
      std::max(stats.unplanned_scratch_bytes, state_->scratch.capacity());
  if (!state_->planner) {
    return;
  }
  stats.memory_planner = memory::toString(state_->planner->algorithm());
  stats.managed_bytes = std::max(stats.managed_bytes, state_->planner->arenaBytes());
  stats.managed_lower_bound_bytes =
      std::max(stats.managed_lower_bound_bytes, state_->planner->lowerBoundBytes());
  stats.arena_reallocations =
      std::max(stats.arena_reallocations, state_->planner->arenaReallocations());
  stats.planned_scratch_blocks =
      std::max(stats.planned_scratch_blocks, state_->planner->numPlannedScratch());
  stats.planned_scratch_bytes =
      std::max(stats.planned_scratch_bytes, state_->planner->plannedScratchBytes());
}

std::string StaticRuntime::memoryPlan() const {
  return state_->planner ? state_->planner->dump() : "";
}

std::vector<MemoryPlanEntry> StaticRuntime::memoryPlanEntries() const {
  std::vector<MemoryPlanEntry> entries;
  if (!state_->planner || state_->planner->plan().offsets.empty()) {
    return entries;
  }
  // One entry per slot: tensors that take over another's slot share its entry.
  const memory::MemoryPlanner& planner = *state_->planner;
  const std::vector<memory::Lifetime> slots = planner.slotLifetimes();
  const size_t num_managed = planner.numManaged();
  std::vector<std::string> names(slots.size());
  std::vector<bool> scratch(slots.size(), false);
  for (size_t i = 0; i < num_managed + planner.numScratch(); ++i) {
    const size_t slot = planner.slotOf(i);
    scratch[slot] = i >= num_managed;
    names[slot] +=
        (names[slot].empty() ? "" : " > ") +
        (scratch[slot] ? planner.scratch()[i - num_managed].name : planner.managed()[i].name);
  }
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    // Most nodes ask for no scratch; like memoryPlan(), list only slots that hold memory.
    if (slots[slot].bytes == 0) {
      continue;
    }
    entries.push_back(
        {names[slot],
         scratch[slot] ? MemoryPlanEntry::Kind::kScratch : MemoryPlanEntry::Kind::kTensor,
         slots[slot].first, slots[slot].last, planner.slotPlan().offsets[slot], slots[slot].bytes});
  }
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const MemoryPlanEntry& a, const MemoryPlanEntry& b) { return a.offset < b.offset; });
  return entries;
}

bool StaticRuntime::arenaContains(const void* address) const {
  return state_->planner && state_->planner->arenaContains(address);
}

std::string StaticRuntime::verifyMemoryPlan() const {
  return state_->planner ? state_->planner->verify() : "";
}

void StaticRuntime::releaseMemory() {
  for (const std::unique_ptr<StaticRuntime>& slice_runtime : state_->slice_runtimes) {
    slice_runtime->releaseMemory();
  }
  if (state_->planner) {
    state_->planner->releaseMemory();
    // The next runs learn scratch sizes again, like tensor sizes; no node keeps a freed block.
    for (ops::ProcessedNode* node : state_->nodes) {
      node->resetScratchRequested();
      node->setPlannedScratch(nullptr, 0);
    }
    state_->lent_plan_generation = state_->planner->planGeneration();
  }
}

void StaticRuntime::resetValues() noexcept {
  for (ops::ValueIndex i : module_.program().reset_after_run) {
    state_->values[i] = c10::IValue();
  }
}

} // namespace srt
