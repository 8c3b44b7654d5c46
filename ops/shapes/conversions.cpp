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
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/shapes/interleave.h"
#include "ops/shapes/layout_conversion.h"
#include "ops/shapes/transpose_copy.h"

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

// An NCHW float32 image with few channels (an RGB input entering a CNN) copied channels last
// (ops/shapes/interleave.h): ATen's strided copy took 90 us for 3x224x224 on an AMD EPYC (Zen 4),
// a scalar loop 65, the AVX-512 permutes about 20. False for anything else. Pixels of all the
// images in turn, so that threads can share the images.
void interleaveAll(const float* planes, float* pixels, int64_t channels, int64_t images,
                   int64_t plane, WorkerPool* workers) {
  const int64_t count = images * plane;
  constexpr int64_t kGrainPixels = 16384;
  splitIfWorthIt(workers, count, kGrainPixels,
                 static_cast<double>(count * channels) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   while (begin < end) {
                     const int64_t n = begin / plane;
                     const int64_t first = begin - n * plane;
                     const int64_t last = std::min(plane, first + (end - begin));
                     interleavePlanes(planes + n * channels * plane, pixels + n * channels * plane,
                                      channels, plane, first, last);
                     begin += last - first;
                   }
                 });
}

bool copyFewChannelsToChannelsLast(at::Tensor& out, const at::Tensor& self, WorkerPool* workers) {
  if (self.scalar_type() != at::kFloat || out.scalar_type() != at::kFloat || self.dim() != 4 ||
      !self.is_contiguous() || !out.is_contiguous(at::MemoryFormat::ChannelsLast) ||
      out.sizes() != self.sizes() || self.is_neg() || self.is_conj()) {
    return false;
  }
  const float* planes = static_cast<const float*>(self.data_ptr());
  float* pixels = static_cast<float*>(out.data_ptr());
  const int64_t images = self.size(0);
  const int64_t plane = self.size(2) * self.size(3);
  const int64_t channels = self.size(1);
  if (channels < 2 || channels > 4) {
    return false;
  }
  interleaveAll(planes, pixels, channels, images, plane, workers);
  return true;
}

// float32 channels innermost into contiguous, or contiguous into channels innermost: per image a
// [pixels, channels] <-> [channels, pixels] transpose (ops/shapes/transpose_copy.h), where ATen's
// strided copy strides through one side a page per element (channels-last [1, 512, 1, 2001] to
// contiguous: 7.2 ms). False for anything else.
bool copyTransposingChannels(at::Tensor& out, const at::Tensor& self, WorkerPool* workers) {
  if (self.scalar_type() != at::kFloat || out.scalar_type() != at::kFloat || self.dim() < 3 ||
      out.sizes() != self.sizes() || self.is_neg() || self.is_conj() || self.numel() == 0) {
    return false;
  }
  const int64_t images = self.size(0);
  const int64_t channels = self.size(1);
  const int64_t pixels = self.numel() / (images * channels);
  if (channels == 1 || pixels == 1) {
    return false; // both layouts are the same bytes
  }
  const bool from_channels_last =
      isChannelsInnermost(self, channels, pixels) && out.is_contiguous();
  const bool to_channels_last = self.is_contiguous() && isChannelsInnermost(out, channels, pixels);
  if (!from_channels_last && !to_channels_last) {
    return false;
  }
  transposeMatrices(static_cast<const float*>(self.data_ptr()), static_cast<float*>(out.data_ptr()),
                    images, from_channels_last ? pixels : channels,
                    from_channels_last ? channels : pixels, workers);
  return true;
}

// Copies `self` into the node's output with `dtype`, laid out as `format` asks: contiguous,
// channels last (a 4-D input only, as ATen requires), channels last 3d (5-D only), or preserve
// (the JIT's strides).
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
  if (format == at::MemoryFormat::ChannelsLast &&
      copyFewChannelsToChannelsLast(out, self, p.workers())) {
    return;
  }
  if (copyTransposingChannels(out, self, p.workers())) {
    return;
  }
  at::native::copy_(out, self, /*non_blocking=*/false);
}

// The memory_format argument at `index`, None or a constant: the layout it asks for, or
// std::nullopt for one we leave to the JIT (not a constant).
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
  case at::MemoryFormat::ChannelsLast3d:
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

// Where a to() overload that may name a device keeps its arguments (-1: it has none).
struct ToArguments {
  int device;
  int dtype;
  int layout;
  int pin_memory;
  int non_blocking;
  int copy;
};

// to.device(self, device, dtype, non_blocking, copy, memory_format?),
// to.prim_Device(self, device?, dtype?, non_blocking, copy) and
// to.dtype_layout(self, *, dtype?, layout?, device?, pin_memory?, non_blocking, copy,
// memory_format?), as `torch.empty(0).to(dtype=x.dtype, device=x.device)` calls them: onto a
// strided CPU tensor it is the dtype-conversion copy; anything else is ATen's to.
std::optional<KernelFunction> toDevice(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  ToArguments arguments{};
  std::optional<at::MemoryFormat> format = at::MemoryFormat::Preserve;
  if (node->matches("aten::to.prim_Device(Tensor(a) self, Device? device, int? dtype=None, bool "
                    "non_blocking=False, bool copy=False) -> Tensor(b|a)")) {
    arguments = {1, 2, -1, -1, 3, 4};
  } else if (node->matches("aten::to.device(Tensor(a) self, Device device, ScalarType dtype, "
                           "bool non_blocking=False, bool copy=False, MemoryFormat? "
                           "memory_format=None) -> Tensor(a)")) {
    arguments = {1, 2, -1, -1, 3, 4};
    format = formatRequest(node, 5, at::MemoryFormat::Preserve);
  } else if (node->matches("aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, "
                           "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
                           "bool non_blocking=False, bool copy=False, MemoryFormat? "
                           "memory_format=None) -> Tensor(a)")) {
    arguments = {3, 1, 2, 4, 5, 6};
    format = formatRequest(node, 7, at::MemoryFormat::Preserve);
  } else {
    return std::nullopt;
  }
  if (!format) {
    return std::nullopt;
  }
  return KernelFunction([arguments, format = *format](ProcessedNode& p) {
    const at::Tensor& self = p.input(0).toTensor();
    const auto optional = [&p](int index) {
      return index < 0 ? c10::IValue() : p.input(static_cast<size_t>(index));
    };
    const c10::IValue device = optional(arguments.device);
    const c10::IValue dtype = optional(arguments.dtype);
    const c10::IValue layout = optional(arguments.layout);
    const c10::IValue pin_memory = optional(arguments.pin_memory);
    const at::ScalarType type = dtype.isNone() ? self.scalar_type() : dtype.toScalarType();
    const bool plain_cpu = (device.isNone() || device.toDevice().is_cpu()) &&
                           (layout.isNone() || layout.toLayout() == at::kStrided) &&
                           (pin_memory.isNone() || !pin_memory.toBool());
    if (!plain_cpu) {
      at::TensorOptions options = self.options().dtype(type);
      if (!device.isNone()) {
        options = options.device(device.toDevice());
      }
      if (!layout.isNone()) {
        options = options.layout(layout.toLayout());
      }
      if (!pin_memory.isNone()) {
        options = options.pinned_memory(pin_memory.toBool());
      }
      p.output(0) = self.to(options, p.input(arguments.non_blocking).toBool(),
                            p.input(arguments.copy).toBool(), format);
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

// contiguous(self, memory_format=contiguous_format): contiguous, channels last (3d).
std::optional<KernelFunction> contiguous(const Node* node, const KernelOptions&) {
  if (writtenInPlace(node->output())) {
    return std::nullopt;
  }
  auto format = formatRequest(node, 1, at::MemoryFormat::Contiguous);
  if (!format || *format == at::MemoryFormat::Preserve) {
    return std::nullopt;
  }
  const c10::Symbol for_convolution = c10::Symbol::attr(kLayoutForConvolution);
  if (node->hasAttribute(for_convolution) && node->i(for_convolution) != 0 &&
      *format != at::MemoryFormat::Contiguous) {
    const int64_t rank = *format == at::MemoryFormat::ChannelsLast3d ? 5 : 4;
    return KernelFunction([format = *format, rank](ProcessedNode& p) {
      const at::Tensor& self = p.input(0).toTensor();
      copyInto(p, self, self.scalar_type(),
               self.dim() == rank ? format : at::MemoryFormat::Contiguous);
    });
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
