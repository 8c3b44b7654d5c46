#include "static_runtime/profiler_events.h"

#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"

namespace srt {

bool nodeEventsWanted() {
  // The thread-local fast path RecordFunction itself uses: no lock, no allocation when empty.
  return at::getStepCallbacksUnlessEmpty(at::RecordScope::STATIC_RUNTIME_OP).has_value();
}

void runWithEvent(ops::ProcessedNode& node) {
  // Asked again per node: a sampling observer may take some nodes and skip others.
  auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::STATIC_RUNTIME_OP);
  if (!callbacks) {
    node.run();
    return;
  }
  at::RecordFunction event(std::move(*callbacks));
  // Before the start callbacks run, so that they see it too (PyTorch sets it after: end only).
  if (node.kind() == ops::KernelKind::kOutVariant) {
    event._setStaticRuntimeOutVariant();
  }
  // Interned: the string lives as long as the process.
  const char* name = node.node()->kind().toQualString();
  if (event.needsInputs()) {
    // Copies of IValues only bump reference counts; built only for observers that want them.
    std::vector<c10::IValue> inputs;
    inputs.reserve(node.numInputs());
    for (size_t i = 0; i < node.numInputs(); ++i) {
      inputs.push_back(node.input(i));
    }
    event.before(name, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()));
  } else {
    event.before(name);
  }
  node.run();
}

RunEvent::RunEvent(c10::ArrayRef<c10::IValue> inputs) {
  auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::STATIC_RUNTIME_MODEL);
  if (!callbacks) {
    return;
  }
  event_.emplace(std::move(*callbacks));
  if (event_->needsInputs()) {
    event_->before("forward", c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()));
  } else {
    event_->before("forward");
  }
}

} // namespace srt
