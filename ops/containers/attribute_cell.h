// Module attributes the forward mutates and reads across runs (torchvision's detection models
// warn once: `if not self._has_warned: warn(...); self._has_warned = True`): held as eager holds
// them on the module, one value per StaticModule that every runtime reads and writes, through
// srt::attribute_get / srt::attribute_set on a graph constant (passes/attribute_writes.cpp makes
// them). Numbers, strings, None, tensors and lists, tuples or records of them: a value is copied
// deeply when written (and when the cell is made), so a tensor kept across runs never aliases
// memory the planner reuses, nor the caller's module.
#pragma once

#include <mutex>

#include <ATen/core/ivalue.h>
#include <torch/custom_class.h>

namespace srt::ops {

// The graph constant: torch.classes.srt.AttributeCell.
class AttributeCell : public torch::CustomClassHolder {
public:
  explicit AttributeCell(c10::IValue initial);
  c10::IValue get() const;
  void set(c10::IValue value);

private:
  mutable std::mutex mutex_; // runtimes of one module run on several threads
  c10::IValue value_;
};

// Whether a cell can hold `value`: a bool, int, float, string, None, tensor, or a list, tuple or
// TorchScript class instance (not a module) of those: torchvision's MultiScaleRoIAlign keeps a
// LevelMapper record it builds on its first call (ops/containers/objects.h).
bool fitsAttributeCell(const c10::IValue& value);

extern const char* const kAttributeGetSchema;
extern const char* const kAttributeSetSchema;

} // namespace srt::ops
