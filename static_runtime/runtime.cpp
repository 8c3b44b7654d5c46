#include "static_runtime/runtime.h"

#include <c10/core/GradMode.h>

#include "static_runtime/block_runner.h"
#include "static_runtime/static_module.h"

namespace srt {

StaticRuntime::StaticRuntime(const StaticModule& module) : module_(module) {
  const Program& program = module.program();
  values_.resize(program.num_values);
  // Constants are shared with the module: copying an IValue only bumps a reference count.
  std::copy(program.constants.begin(), program.constants.end(),
            values_.begin() + program.num_inputs);
  top_block_ = std::make_unique<BlockRunner>(program, 0, values_.data(), &scratch_);
}

StaticRuntime::~StaticRuntime() = default;

c10::IValue StaticRuntime::operator()(std::vector<c10::IValue> args, const Kwargs& kwargs) {
  const Program& program = module_.program();
  bindArguments(module_.schema(), args, kwargs);
  TORCH_INTERNAL_ASSERT(args.size() == program.num_inputs);

  struct ResetOnExit {
    StaticRuntime& runtime;
    ~ResetOnExit() { runtime.resetValues(); }
  } reset_on_exit{*this};

  // Inference only: recording autograd history would cost time and keep activations alive.
  c10::AutoGradMode no_grad(false);
  std::move(args.begin(), args.end(), values_.begin());
  top_block_->run();
  return takeOutputs();
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

void StaticRuntime::resetValues() noexcept {
  for (ops::ValueIndex i : module_.program().reset_after_run) {
    values_[i] = c10::IValue();
  }
}

} // namespace srt
