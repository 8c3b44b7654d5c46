// aten::zeros, ones, full, eye, their new_* and *_like forms and aten::empty with a run-time size
// (`torch.zeros(x.size(0), 8)`, `x.new_zeros(n, m)`, `torch.full_like(scores, -inf)`):
// out-variant kernels filling the node's reused output. Sizes known when the module is built are
// folded to constants before this; these are the ones that depend on the inputs.
// aten::rand, randn, randint and their *_like forms (noise a model draws in eval too: torchaudio's
// masking, a VAE's sampling) fill it with draws, as ATen does (uniform_, normal_, random_ from the
// default generator, so a seeded run draws what the JIT draws). Never folded: the JIT marks them
// nondeterministic.
#include <ATen/CPUFunctions.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_variant.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/creation/placement.h"
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

// Writes a tensor of `sizes` filled with `value` (nothing, for empty) into output 0, with the
// dtype and placement of the node's (dtype, layout, device, pin_memory) inputs from `first`.
void fillOutput(ProcessedNode& p, at::IntArrayRef sizes, size_t first, at::ScalarType dtype,
                c10::Device device, const c10::optional<c10::Scalar>& value) {
  at::detail::check_size_nonnegative(sizes);
  const Placement placement = readPlacement(p, first, dtype, device);
  if (!placement.plain_cpu) {
    // Another device, layout or pinned memory: a fresh tensor from ATen, as the JIT would make.
    at::Tensor fresh = at::empty(sizes, placement.options);
    p.output(0) = value ? fresh.fill_(*value) : fresh;
    return;
  }
  at::Tensor& out = contiguousOutput(p, 0, sizes, placement.options);
  if (value) {
    out.fill_(*value);
  }
}

// What ATen draws into a fresh tensor for rand (uniform on [0, 1)), randn (standard normal) and
// randint (integers in [low, high)).
enum class Draw { kUniform, kNormal, kIntegers };

template <Draw kDraw> void draw(at::Tensor& out, int64_t low = 0, int64_t high = 0) {
  if constexpr (kDraw == Draw::kUniform) {
    out.uniform_(0, 1);
  } else if constexpr (kDraw == Draw::kNormal) {
    out.normal_(0, 1);
  } else {
    out.random_(low, high);
  }
}

// zeros / ones / empty (size, *, dtype, layout, device, pin_memory[, memory_format])
template <int kFill> void filledOfSize(ProcessedNode& p) {
  const at::DimVector sizes = p.input(0).toDimVector();
  fillOutput(p, sizes, 1, defaultDtype(), at::kCPU,
             kFill < 0 ? c10::nullopt : c10::optional<c10::Scalar>(kFill));
}

void full(ProcessedNode& p) {
  const at::DimVector sizes = p.input(0).toDimVector();
  const c10::Scalar value = p.input(1).toScalar();
  fillOutput(p, sizes, 2, fullDtype(value), at::kCPU, value);
}

// new_zeros / new_ones / new_empty (self, size, *, dtype, layout, device, pin_memory): self's
// dtype and device unless given.
template <int kFill> void newFilled(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector sizes = p.input(1).toDimVector();
  fillOutput(p, sizes, 2, self.scalar_type(), self.device(),
             kFill < 0 ? c10::nullopt : c10::optional<c10::Scalar>(kFill));
}

void newFull(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector sizes = p.input(1).toDimVector();
  fillOutput(p, sizes, 3, self.scalar_type(), self.device(), p.input(2).toScalar());
}

// zeros_like / ones_like / empty_like (self, *, dtype, layout, device, pin_memory,
// memory_format) and full_like (self, fill_value, *, ...): self's sizes and, unless given, its
// dtype; self's layout (memory_format None or preserve) or a contiguous one (contiguous, which
// torch.legacy_contiguous_format also is: torch.nn.utils.rnn's invert_permutation). A device read
// at run time (`device=x.device`, torchvision's detection heads) is the node's output where it is
// the CPU, ATen's fresh tensor elsewhere, as for another layout or pinned memory. Another memory
// format declines the node (likeFactory).
void fillLike(ProcessedNode& p, size_t dtype_input, const c10::optional<c10::Scalar>& value,
              bool contiguous) {
  const at::Tensor& self = p.input(0).toTensor();
  const Placement placement = readPlacement(p, dtype_input, self.scalar_type(), self.device());
  if (!placement.plain_cpu) {
    at::Tensor fresh =
        at::empty_like(self, placement.options,
                       contiguous ? at::MemoryFormat::Contiguous : at::MemoryFormat::Preserve);
    p.output(0) = value ? fresh.fill_(*value) : fresh;
    return;
  }
  at::Tensor& out = outputTensor(p, 0, placement.options);
  if (contiguous) {
    at::native::resize_(out, self.sizes());
  } else {
    resizePreservingLayout(out, self);
  }
  if (value && out.numel() > 0) {
    out.fill_(*value);
  }
}

template <int kFill, bool kContiguous> void filledLike(ProcessedNode& p) {
  fillLike(p, 1, kFill < 0 ? c10::nullopt : c10::optional<c10::Scalar>(kFill), kContiguous);
}

template <bool kContiguous> void fullLike(ProcessedNode& p) {
  fillLike(p, 2, p.input(1).toScalar(), kContiguous);
}

// The *_like node when its memory format is None, preserve or contiguous: `preserving` or
// `contiguous` then. Its dtype, layout, device and pin_memory are read at run time: a traced
// graph passes them all (`zeros_like(x, 6, 0, "cpu", False, None)`), a scripted one None.
std::optional<KernelFunction> likeFactory(const Node* node, size_t dtype_input,
                                          KernelFunction preserving, KernelFunction contiguous) {
  const size_t format_input = dtype_input + 4;
  if (node->inputs().size() != format_input + 1 ||
      node->input(0)->type()->kind() != c10::TypeKind::TensorType) {
    return std::nullopt;
  }
  const auto format = torch::jit::toIValue(node->input(format_input));
  if (!format) {
    return std::nullopt;
  }
  if (format->isNone() || format->toInt() == static_cast<int64_t>(at::MemoryFormat::Preserve)) {
    return preserving;
  }
  if (format->toInt() == static_cast<int64_t>(at::MemoryFormat::Contiguous)) {
    return contiguous;
  }
  return std::nullopt;
}

// The unnamed overload with `arguments` inputs (zeros.names, full.out ... decline); aten::empty's
// memory_format must be None or contiguous, the layout its kernel makes.
std::optional<KernelFunction> takeOverload(const Node* node, const char* overload, size_t arguments,
                                           KernelFunction kernel) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema == nullptr || schema->overload_name() != overload ||
      node->inputs().size() != arguments) {
    return std::nullopt;
  }
  return kernel;
}

std::optional<KernelFunction> empty(const Node* node, const KernelOptions&) {
  if (!node->matches("aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? "
                     "layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? "
                     "memory_format=None) -> Tensor")) {
    return std::nullopt;
  }
  auto format = torch::jit::toIValue(node->input(5));
  if (!format || !(format->isNone() ||
                   format->toInt() == static_cast<int64_t>(at::MemoryFormat::Contiguous))) {
    return std::nullopt;
  }
  return KernelFunction(filledOfSize<-1>);
}

// rand / randn (size, *, dtype, layout, device, pin_memory)
template <Draw kDraw> void drawnOfSize(ProcessedNode& p) {
  fillOutput(p, p.input(0).toDimVector(), 1, defaultDtype(), at::kCPU, c10::nullopt);
  draw<kDraw>(p.output(0).toTensor());
}

// randint (high, size, *, dtype, ...) and randint.low (low, high, size, *, dtype, ...): int64
// unless told otherwise.
template <bool kLow> void randomIntegers(ProcessedNode& p) {
  constexpr size_t kSize = kLow ? 2 : 1;
  fillOutput(p, p.input(kSize).toDimVector(), kSize + 1, at::kLong, at::kCPU, c10::nullopt);
  draw<Draw::kIntegers>(p.output(0).toTensor(), kLow ? p.input(0).toInt() : 0,
                        p.input(kSize - 1).toInt());
}

// rand_like / randn_like (self, *, dtype, ...): self's sizes, as filledLike.
template <Draw kDraw, bool kContiguous> void drawnLike(ProcessedNode& p) {
  fillLike(p, 1, c10::nullopt, kContiguous);
  draw<kDraw>(p.output(0).toTensor());
}

// randint_like (self, high, *, dtype, ...) and randint_like.low_dtype (self, low, high, *, ...).
template <bool kLow, bool kContiguous> void randomIntegersLike(ProcessedNode& p) {
  constexpr size_t kHigh = kLow ? 2 : 1;
  fillLike(p, kHigh + 1, c10::nullopt, kContiguous);
  draw<Draw::kIntegers>(p.output(0).toTensor(), kLow ? p.input(1).toInt() : 0,
                        p.input(kHigh).toInt());
}

// eye(n[, m], *, dtype, layout, device, pin_memory): `torch.eye(x.size(-1))`, ATen's checks.
void eye(ProcessedNode& p, int64_t n, int64_t m, size_t first) {
  const Placement placement = readPlacement(p, first, defaultDtype(), at::kCPU);
  if (!placement.plain_cpu) {
    p.output(0) = at::eye(n, m, placement.options);
    return;
  }
  at::cpu::eye_outf(n, m, outputTensor(p, 0, placement.options));
}

} // namespace

SRT_REGISTER_KERNEL("aten::eye", kOutVariant,
                    whenMatches("aten::eye(int n, *, ScalarType? dtype=None, Layout? layout=None, "
                                "Device? device=None, bool? pin_memory=None) -> Tensor",
                                [](ProcessedNode& p) {
                                  const int64_t n = p.input(0).toInt();
                                  eye(p, n, n, 1);
                                }));
SRT_REGISTER_KERNEL(
    "aten::eye", kOutVariant,
    whenMatches("aten::eye.m(int n, int m, *, ScalarType? dtype=None, Layout? "
                "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
                [](ProcessedNode& p) { eye(p, p.input(0).toInt(), p.input(1).toInt(), 2); }));
SRT_REGISTER_KERNEL("aten::zeros", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 5, filledOfSize<0>);
});
SRT_REGISTER_KERNEL("aten::ones", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 5, filledOfSize<1>);
});
SRT_REGISTER_KERNEL("aten::full", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 6, full);
});
SRT_REGISTER_KERNEL("aten::empty", kOutVariant, empty);
SRT_REGISTER_KERNEL("aten::new_zeros", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 6, newFilled<0>);
});
SRT_REGISTER_KERNEL("aten::new_ones", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 6, newFilled<1>);
});
SRT_REGISTER_KERNEL("aten::new_empty", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 6, newFilled<-1>);
});
SRT_REGISTER_KERNEL("aten::zeros_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  return likeFactory(node, 1, filledLike<0, false>, filledLike<0, true>);
});
SRT_REGISTER_KERNEL("aten::ones_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  return likeFactory(node, 1, filledLike<1, false>, filledLike<1, true>);
});
SRT_REGISTER_KERNEL("aten::empty_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  return likeFactory(node, 1, filledLike<-1, false>, filledLike<-1, true>);
});
SRT_REGISTER_KERNEL("aten::full_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  return likeFactory(node, 2, fullLike<false>, fullLike<true>);
});
SRT_REGISTER_KERNEL("aten::new_full", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 7, newFull);
});
SRT_REGISTER_KERNEL("aten::rand", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 5, drawnOfSize<Draw::kUniform>);
});
SRT_REGISTER_KERNEL("aten::randn", kOutVariant, [](const Node* node, const KernelOptions&) {
  return takeOverload(node, "", 5, drawnOfSize<Draw::kNormal>);
});
SRT_REGISTER_KERNEL("aten::randint", kOutVariant, [](const Node* node, const KernelOptions&) {
  auto high_only = takeOverload(node, "", 6, randomIntegers<false>);
  return high_only ? high_only : takeOverload(node, "low", 7, randomIntegers<true>);
});
SRT_REGISTER_KERNEL("aten::rand_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  return likeFactory(node, 1, drawnLike<Draw::kUniform, false>, drawnLike<Draw::kUniform, true>);
});
SRT_REGISTER_KERNEL("aten::randn_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  return likeFactory(node, 1, drawnLike<Draw::kNormal, false>, drawnLike<Draw::kNormal, true>);
});
SRT_REGISTER_KERNEL("aten::randint_like", kOutVariant, [](const Node* node, const KernelOptions&) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema != nullptr && schema->overload_name() == "low_dtype") {
    return likeFactory(node, 3, randomIntegersLike<true, false>, randomIntegersLike<true, true>);
  }
  if (schema != nullptr && schema->overload_name().empty()) {
    return likeFactory(node, 2, randomIntegersLike<false, false>, randomIntegersLike<false, true>);
  }
  return std::optional<KernelFunction>();
});

} // namespace srt::ops
