// aten::zeros, ones and full with a run-time size (`torch.zeros(x.size(0), 8)`): out-variant
// kernels filling the node's reused output. Sizes known when the module is built are folded to
// constants before this; these are the ones that depend on the inputs.
#include <ATen/EmptyTensor.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// The dtype ATen gives an unspecified `full`: the fill value's kind decides.
at::ScalarType fullDtype(const c10::Scalar& fill_value) {
  if (fill_value.isBoolean()) {
    return at::kBool;
  }
  if (fill_value.isIntegral(/*includeBool=*/false)) {
    return at::kLong;
  }
  if (fill_value.isComplex()) {
    return defaultDtype() == at::kDouble ? at::kComplexDouble : at::kComplexFloat;
  }
  return defaultDtype();
}

void fillOutput(ProcessedNode& p, at::ScalarType dtype, const c10::Scalar& value) {
  const at::DimVector sizes = p.input(0).toDimVector();
  at::detail::check_size_nonnegative(sizes);
  contiguousOutput(p, 0, sizes, at::TensorOptions().dtype(dtype)).fill_(value);
}

at::ScalarType dtypeOrDefault(const c10::IValue& dtype) {
  return dtype.isNone() ? defaultDtype() : dtype.toScalarType();
}

void zeros(ProcessedNode& p) {
  fillOutput(p, dtypeOrDefault(p.input(1)), 0);
}

void ones(ProcessedNode& p) {
  fillOutput(p, dtypeOrDefault(p.input(1)), 1);
}

void full(ProcessedNode& p) {
  const c10::Scalar value = p.input(1).toScalar();
  const c10::IValue& dtype = p.input(2);
  fillOutput(p, dtype.isNone() ? fullDtype(value) : dtype.toScalarType(), value);
}

// (size, [fill_value,] *, dtype, layout, device, pin_memory): declines a layout, device or
// pin_memory, as zeros_like does.
template <void (*Kernel)(ProcessedNode&)>
std::optional<KernelFunction> filled(const Node* node, size_t first_placement_input) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema == nullptr || !schema->overload_name().empty() ||
      node->inputs().size() != first_placement_input + 3 ||
      !noneFrom(node, first_placement_input)) {
    return std::nullopt; // zeros.names, full.out, a device ...
  }
  return KernelFunction(Kernel);
}

} // namespace

SRT_REGISTER_KERNEL("aten::zeros", kOutVariant,
                    [](const Node* node, const KernelOptions&) { return filled<zeros>(node, 2); });
SRT_REGISTER_KERNEL("aten::ones", kOutVariant,
                    [](const Node* node, const KernelOptions&) { return filled<ones>(node, 2); });
SRT_REGISTER_KERNEL("aten::full", kOutVariant,
                    [](const Node* node, const KernelOptions&) { return filled<full>(node, 3); });

} // namespace srt::ops
