// Profiler events (at::RecordFunction) for runs and nodes, so that torch.profiler, its Chrome
// trace and any other RecordFunction observer see a run's nodes by name, as in PyTorch's Static
// Runtime. Nothing here runs per node unless an observer is active (RuntimeOptions::profiling).
#pragma once

#include <optional>

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

namespace srt {
namespace ops {
class ProcessedNode;
} // namespace ops

// True when an observer of node events (scope STATIC_RUNTIME_OP) is active on the calling thread.
// A runtime asks once per run and then runs its nodes through runWithEvent or plainly.
[[nodiscard]] bool nodeEventsWanted();

// Runs `node` under an at::RecordFunction named by its kind ("srt::fused_linear"), with its
// inputs when the observer asks for them; out-variant nodes are marked as such.
void runWithEvent(ops::ProcessedNode& node);

// An event named "forward" (scope STATIC_RUNTIME_MODEL) from construction to destruction when an
// observer of that scope is active; otherwise nothing. `inputs` are read only by the constructor.
class RunEvent {
public:
  explicit RunEvent(c10::ArrayRef<c10::IValue> inputs);

private:
  std::optional<at::RecordFunction> event_;
};

} // namespace srt
