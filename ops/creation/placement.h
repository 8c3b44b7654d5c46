// A factory op's trailing (dtype, layout, device, pin_memory) arguments read at run time, as
// `torch.zeros(n, device=x.device, dtype=x.dtype)` passes them: what the creation kernels need to
// know whether the result can be written into the node's reused CPU output.
#pragma once

#include <ATen/core/TensorBody.h>

#include "ops/core/processed_node.h"

namespace srt::ops {

struct Placement {
  at::TensorOptions options;
  // A strided, unpinned CPU tensor: the only kind an out-variant output is.
  bool plain_cpu = true;
};

// Inputs `first` .. `first + 3` of the node: dtype, layout, device, pin_memory, each possibly
// None (then `dtype` and `device` are what the op defaults to).
inline Placement readPlacement(const ProcessedNode& p, size_t first, at::ScalarType dtype,
                               c10::Device device) {
  const c10::IValue& dtype_arg = p.input(first);
  const c10::IValue& layout_arg = p.input(first + 1);
  const c10::IValue& device_arg = p.input(first + 2);
  const c10::IValue& pin_arg = p.input(first + 3);
  Placement placement;
  placement.options = at::TensorOptions()
                          .dtype(dtype_arg.isNone() ? dtype : dtype_arg.toScalarType())
                          .device(device_arg.isNone() ? device : device_arg.toDevice());
  if (!layout_arg.isNone()) {
    placement.options = placement.options.layout(layout_arg.toLayout());
  }
  if (!pin_arg.isNone()) {
    placement.options = placement.options.pinned_memory(pin_arg.toBool());
  }
  placement.plain_cpu = placement.options.device().is_cpu() &&
                        placement.options.layout() == at::kStrided &&
                        !placement.options.pinned_memory();
  return placement;
}

} // namespace srt::ops
