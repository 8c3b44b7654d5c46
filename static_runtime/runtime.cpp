#include "static_runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <c10/core/GradMode.h>

#include "static_runtime/block_runner.h"
#include "static_runtime/intra_op_threads.h"
#include "static_runtime/profiler_events.h"
#include "static_runtime/static_module.h"

namespace srt {

StaticRuntime::StaticRuntime(const StaticModule& module, RuntimeOptions options)
    : module_(module), options_(options) {
  options_.validate();
  const Program& program = module.program();
  values_.resize(program.num_values);
  // Constants are shared with the module: copying an IValue only bumps a reference count.
  std::copy(program.constants.begin(), program.constants.end(),
            values_.begin() + program.num_inputs);
  nodes_.resize(program.num_nodes);
  top_block_ =
      std::make_unique<BlockRunner>(program, 0, values_.data(), &scratch_, node_events_, &nodes_);
  if (module.options().optimize_memory) {
    planner_.emplace(program.managed_tensors, module.options().memory_planner,
                     program.scratch_blocks);
  }
  if (module.options().manage_output_tensors) {
    output_planner_.emplace(program.managed_output_tensors, module.options().memory_planner);
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

} // namespace

c10::IValue StaticRuntime::operator()(std::vector<c10::IValue> args, const Kwargs& kwargs) {
  return run(std::move(args), kwargs, nullptr);
}

c10::IValue StaticRuntime::timedRun(std::vector<c10::IValue> args, const Kwargs& kwargs,
                                    RunTimes& times) {
  times.nodes.resize(top_block_->numNodes(), 0.0);
  return run(std::move(args), kwargs, &times);
}

// `times` is null except for timedRun: the normal path pays one untaken branch per phase.
c10::IValue StaticRuntime::run(std::vector<c10::IValue> args, const Kwargs& kwargs,
                               RunTimes* times) {
  Clock::time_point phase_start = times != nullptr ? Clock::now() : Clock::time_point();
  const Program& program = module_.program();
  TORCH_CHECK(!outputs_outstanding_,
              "StaticRuntime: the tensors the previous run returned still live in this runtime's "
              "output arena (manage_output_tensors=true); call deallocateOutputTensors() before "
              "running again");
  // Spans the whole run, reset included; declared before anything that must end inside it.
  std::optional<RunEvent> run_event;
  node_events_ = false;
  if (options_.profiling) {
    run_event.emplace(args);
    node_events_ = nodeEventsWanted();
  }
  bindArguments(module_.schema(), args, kwargs);
  module_.appendUnboundConstants(args);
  TORCH_INTERNAL_ASSERT(args.size() == program.num_inputs);

  struct ResetOnExit {
    StaticRuntime& runtime;
    RunTimes* times;
    bool succeeded = false;
    ~ResetOnExit() {
      Clock::time_point start = times != nullptr ? Clock::now() : Clock::time_point();
      if (runtime.planner_) {
        runtime.reportScratch();
        runtime.planner_->deallocate(runtime.values_.data());
        // A failed run may have taught the planner sizes this machine cannot hold (an input far
        // larger than any before, whose arena could not grow): forget them, as releaseMemory()
        // does, rather than fail every later run on them.
        if (!succeeded && !runtime.planner_->verify().empty()) {
          runtime.releaseMemory();
        }
      }
      if (runtime.output_planner_) {
        // Returned outputs stay until handed back; after a failure nobody holds them.
        runtime.outputs_outstanding_ = succeeded && runtime.output_planner_->numManaged() > 0;
        if (!succeeded) {
          runtime.output_planner_->deallocate(runtime.values_.data());
        }
      }
      runtime.resetValues();
      if (times != nullptr) {
        times->memory_dealloc += lap(start);
      }
    }
  } reset_on_exit{*this, times};
  std::move(args.begin(), args.end(), values_.begin());
  if (times != nullptr) {
    times->setup += lap(phase_start);
  }
  if (planner_) {
    planner_->allocate(values_.data());
    lendScratch();
  }
  if (output_planner_) {
    output_planner_->allocate(values_.data());
  }
  if (times != nullptr) {
    times->memory_alloc += lap(phase_start);
  }

  // Inference only: recording autograd history would cost time and keep activations alive.
  c10::AutoGradMode no_grad(false);
  ScopedIntraOpThreads threads(options_.intra_op_threads);
  if (times != nullptr) {
    top_block_->runTimed(times->nodes.data());
  } else {
    top_block_->run();
  }
  c10::IValue outputs = takeOutputs();
  reset_on_exit.succeeded = true;
  return outputs;
}

void StaticRuntime::lendScratch() {
  if (planner_->planGeneration() == lent_plan_generation_) {
    return;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i]->setPlannedScratch(planner_->scratchData(i), planner_->scratchBytes(i));
  }
  lent_plan_generation_ = planner_->planGeneration();
}

void StaticRuntime::reportScratch() noexcept {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    planner_->requestScratch(i, nodes_[i]->scratchRequested());
  }
}

void StaticRuntime::deallocateOutputTensors() {
  if (output_planner_ && outputs_outstanding_) {
    output_planner_->deallocate(values_.data());
    outputs_outstanding_ = false;
  }
}

c10::IValue StaticRuntime::takeOutputs() {
  const std::vector<OutputSlot>& outputs = module_.program().outputs;
  auto take = [this](const OutputSlot& slot) {
    return slot.movable ? std::move(values_[slot.index]) : values_[slot.index];
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
  stats.unplanned_scratch_requests =
      std::max(stats.unplanned_scratch_requests, scratch_.requests());
  if (!planner_) {
    return;
  }
  stats.memory_planner = memory::toString(planner_->algorithm());
  stats.managed_bytes = std::max(stats.managed_bytes, planner_->arenaBytes());
  stats.managed_lower_bound_bytes =
      std::max(stats.managed_lower_bound_bytes, planner_->lowerBoundBytes());
  stats.arena_reallocations = std::max(stats.arena_reallocations, planner_->arenaReallocations());
  stats.planned_scratch_blocks =
      std::max(stats.planned_scratch_blocks, planner_->numPlannedScratch());
  stats.planned_scratch_bytes =
      std::max(stats.planned_scratch_bytes, planner_->plannedScratchBytes());
}

std::string StaticRuntime::memoryPlan() const {
  return planner_ ? planner_->dump() : "";
}

std::vector<MemoryPlanEntry> StaticRuntime::memoryPlanEntries() const {
  std::vector<MemoryPlanEntry> entries;
  if (!planner_ || planner_->plan().offsets.empty()) {
    return entries;
  }
  const std::vector<memory::Lifetime> lifetimes = planner_->lifetimes();
  const size_t num_managed = planner_->numManaged();
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    // Most nodes ask for no scratch; like memoryPlan(), list only buffers that hold memory.
    if (lifetimes[i].bytes == 0) {
      continue;
    }
    const bool scratch = i >= num_managed;
    entries.push_back(
        {scratch ? planner_->scratch()[i - num_managed].name : planner_->managed()[i].name,
         scratch ? MemoryPlanEntry::Kind::kScratch : MemoryPlanEntry::Kind::kTensor,
         lifetimes[i].first, lifetimes[i].last, planner_->plan().offsets[i], lifetimes[i].bytes});
  }
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const MemoryPlanEntry& a, const MemoryPlanEntry& b) { return a.offset < b.offset; });
  return entries;
}

std::string StaticRuntime::verifyMemoryPlan() const {
  return planner_ ? planner_->verify() : "";
}

void StaticRuntime::releaseMemory() {
  if (planner_) {
    planner_->releaseMemory();
    // The next runs learn scratch sizes again, like tensor sizes; no node keeps a freed block.
    for (ops::ProcessedNode* node : nodes_) {
      node->resetScratchRequested();
      node->setPlannedScratch(nullptr, 0);
    }
    lent_plan_generation_ = planner_->planGeneration();
  }
}

void StaticRuntime::resetValues() noexcept {
  for (ops::ValueIndex i : module_.program().reset_after_run) {
    values_[i] = c10::IValue();
  }
}

} // namespace srt
