// Copies into the node's own tensor: dtype conversions (to, type_as), clone and contiguous.
//
// The JIT returns the input itself when nothing changes (same dtype, copy=False; an already
// contiguous input). We copy: the output is then ours to reuse across runs, and a graph output
// never aliases a caller's input. Except where the result is written in place: the write must then
// reach the input as it does in the JIT, so the node keeps the JIT's aliasing operator.
#include <ATen/NativeFunctions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// True when a reader writes `value` in place, directly or through views of it (readers whose
// result may alias their input, per their schema).
bool writtenInPlace(const torch::jit::Value* value) {
  for (const torch::jit::Use& use : value->uses()) {
    const c10::FunctionSchema* schema = use.user->maybeSchema();
    if (schema == nullptr || use.offset >= schema->arguments().size()) {
      continue; // prim nodes (lists, If/Loop, return) do not write
    }
    const c10::AliasInfo* alias = schema->arguments()[use.offset].alias_info();
    if (alias == nullptr) {
      continue;
    }
    if (alias->isWrite()) {
      return true;
    }
    for (const torch::jit::Value* view : use.user->outputs()) {
      if (writtenInPlace(view)) {
        return true;
      }
    }
  }
  return false;
}

// Copies `self` into the node's output with `dtype`, laid out as `format` asks: contiguous,
// channels last (a 4-D input only, as ATen requires), or preserve (the JIT's strides).
void copyInto(ProcessedNode& p, const at::Tensor& self, at::ScalarType dtype,
              at::MemoryFormat format) {
  TORCH_CHECK(self.device().is_cpu(), "static_runtime: ", p.node()->kind().toQualString(),
              " expects a CPU tensor, got one on ", self.device());
  at::Tensor& out = outputTensor(p, 0, self.options().dtype(dtype));
  if (format == at::MemoryFormat::Preserve) {
    resizePreservingLayout(out, self);
  } else {
    at::native::resize_(out, self.sizes(), format);
  }
  at::native::copy_(out, self, /*non_blocking=*/false);
}

// The memory_format argument at `index`, None or a constant: the layout it asks for, or
// std::nullopt for one we leave to the JIT (channels_last_3d, not a constant).
std::optional<at::MemoryFormat> formatRequest(const Node* node, size_t index,
                                              at::MemoryFormat if_none) {
  const torch::jit::Value* value = node->input(index);
  if (value->type()->kind() == c10::TypeKind::NoneType) {
    return if_none;
  }
  auto format = torch::jit::toIValue(value);
  if (!format.has_value()) {
    return std::nullopt;
  }
  if (format->isNone()) {
    return if_none;
  }
  switch (static_cast<at::MemoryFormat>(format->toInt())) {
  case at::MemoryFormat::Contiguous:
  case at::MemoryFormat::ChannelsLast:
  case at::MemoryFormat::Preserve:
    return static_cast<at::MemoryFormat>(format->toInt());
  default:
    return std::nullopt;
  }
}

// to.dtype(self, dtype, non_blocking, copy, memory_format?)
std::optional<KernelFunction> toDtype(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  if (!node->matches("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
                     "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")) {
    return std::nullopt;
  }
  auto format = formatRequest(node, 4, at::MemoryFormat::Preserve);
  if (!format) {
    return std::nullopt;
  }
  return KernelFunction([format = *format](ProcessedNode& p) {
    copyInto(p, p.input(0).toTensor(), p.input(1).toScalarType(), format);
  });
}

// to.prim_dtype(self, int? dtype, non_blocking, copy): a None dtype keeps the input's.
std::optional<KernelFunction> toPrimDtype(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  if (!node->matches(
          "aten::to.prim_dtype(Tensor(a) self, int? dtype=None, bool non_blocking=False, "
          "bool copy=False) -> Tensor(b|a)")) {
    return std::nullopt;
  }
  return KernelFunction([](ProcessedNode& p) {
    const at::Tensor& self = p.input(0).toTensor();
    const c10::IValue& dtype = p.input(1);
    copyInto(p, self, dtype.isNone() ? self.scalar_type() : dtype.toScalarType(),
             at::MemoryFormat::Preserve);
  });
}

// to.device(self, device, dtype, non_blocking, copy, memory_format?) and
// to.prim_Device(self, device?, dtype?, non_blocking, copy), as `torch.empty(0).to(dtype=x.dtype,
// device=x.device)` calls them: a CPU device is a dtype conversion; another device is ATen's copy.
std::optional<KernelFunction> toDevice(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  const bool prim = node->matches("aten::to.prim_Device(Tensor(a) self, Device? device, int? "
                                  "dtype=None, bool non_blocking=False, bool copy=False) -> "
                                  "Tensor(a|b)");
  if (!prim && !node->matches("aten::to.device(Tensor(a) self, Device device, ScalarType dtype, "
                              "bool non_blocking=False, bool copy=False, MemoryFormat? "
                              "memory_format=None) -> Tensor(a)")) {
    return std::nullopt;
  }
  auto format = prim ? std::optional<at::MemoryFormat>(at::MemoryFormat::Preserve)
                     : formatRequest(node, 5, at::MemoryFormat::Preserve);
  if (!format) {
    return std::nullopt;
  }
  return KernelFunction([format = *format](ProcessedNode& p) {
    const at::Tensor& self = p.input(0).toTensor();
    const c10::IValue& device = p.input(1);
    const c10::IValue& dtype = p.input(2);
    const at::ScalarType type = dtype.isNone() ? self.scalar_type() : dtype.toScalarType();
    if (!device.isNone() && !device.toDevice().is_cpu()) {
      p.output(0) =
          self.to(device.toDevice(), type, p.input(3).toBool(), p.input(4).toBool(), format);
      return;
    }
    copyInto(p, self, type, format);
  });
}

// to.other(self, other, non_blocking, copy, memory_format?) and type_as(self, other): the
// other tensor's dtype (both must be on the CPU).
std::optional<KernelFunction> toOther(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  if (!node->matches("aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, "
                     "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")) {
    return std::nullopt;
  }
  auto format = formatRequest(node, 4, at::MemoryFormat::Preserve);
  if (!format) {
    return std::nullopt;
  }
  return KernelFunction([format = *format](ProcessedNode& p) {
    const at::Tensor& other = p.input(1).toTensor();
    TORCH_CHECK(other.device().is_cpu(),
                "static_runtime: aten::to expects `other` on the CPU, got ", other.device());
    copyInto(p, p.input(0).toTensor(), other.scalar_type(), format);
  });
}

std::optional<KernelFunction> typeAs(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  return KernelFunction([](ProcessedNode& p) {
    const at::Tensor& other = p.input(1).toTensor();
    TORCH_CHECK(other.device().is_cpu(),
                "static_runtime: aten::type_as expects `other` on the CPU, got ", other.device());
    copyInto(p, p.input(0).toTensor(), other.scalar_type(), at::MemoryFormat::Preserve);
  });
}

// clone(self, memory_format=None): None preserves the input's layout.
std::optional<KernelFunction> clone(const Node* node, const KernelOptions&) {
  auto format = formatRequest(node, 1, at::MemoryFormat::Preserve);
  if (!format) {
    return std::nullopt;
  }
  return KernelFunction([format = *format](ProcessedNode& p) {
    const at::Tensor& self = p.input(0).toTensor();
    copyInto(p, self, self.scalar_type(), format);
  });
}

// contiguous(self, memory_format=contiguous_format): contiguous or channels last.
std::optional<KernelFunction> contiguous(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  auto format = formatRequest(node, 1, at::MemoryFormat::Contiguous);
  if (!format || *format == at::MemoryFormat::Preserve) {
    return std::nullopt;
  }
  return KernelFunction([format = *format](ProcessedNode& p) {
    const at::Tensor& self = p.input(0).toTensor();
    copyInto(p, self, self.scalar_type(), format);
  });
}

} // namespace

SRT_REGISTER_KERNEL("aten::to", kOutVariant, toDtype);
SRT_REGISTER_KERNEL("aten::to", kOutVariant, toPrimDtype);
SRT_REGISTER_KERNEL("aten::to", kOutVariant, toOther);
SRT_REGISTER_KERNEL("aten::to", kOutVariant, toDevice);
SRT_REGISTER_KERNEL("aten::type_as", kOutVariant, typeAs);
SRT_REGISTER_KERNEL("aten::clone", kOutVariant, clone);
SRT_REGISTER_KERNEL("aten::contiguous", kOutVariant, contiguous);

} // namespace srt::ops
