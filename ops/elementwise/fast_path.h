// What the element-wise, normalization and reduction kernels share: when an input can take the
// float32 fast path (ops/elementwise/vectorized_loops.h), outputs shaped for it, and the pieces of
// ATen's type promotion and scalar handling the `at::cpu::*_out` calls need from us.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <ATen/EmptyTensor.h>
#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/kernel_options.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

// Dense, contiguous float32 on the CPU: what the vectorized loops read and write.
inline bool isContiguousFloat(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.layout() == at::kStrided && t.is_contiguous() &&
         t.device().is_cpu() && !t.is_neg();
}

// Dense float32 in any dimension order (contiguous, channels last, a transposed matrix): one op
// per element maps its memory in order, into an output laid out the same way, as ATen's
// TensorIterator lays out a unary op's result.
inline bool isDenseFloat(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.layout() == at::kStrided && t.device().is_cpu() &&
         !t.is_neg() && t.is_non_overlapping_and_dense();
}

inline bool isSameShapeContiguousFloat(const at::Tensor& a, const at::Tensor& b) {
  return isContiguousFloat(a) && isContiguousFloat(b) && a.sizes() == b.sizes();
}

inline const float* floatData(const at::Tensor& t) {
  return static_cast<const float*>(t.data_ptr());
}

inline float* floatData(at::Tensor& t) {
  return static_cast<float*>(t.data_ptr());
}

// The node's output `i` as a contiguous tensor of `sizes`: last run's tensor untouched when it
// already is one (the common case, a second run on the same shape), resized in place when only
// the shape or layout changed (its memory is kept while it fits), else a new one.
inline at::Tensor& contiguousOutput(ProcessedNode& p, size_t i, at::IntArrayRef sizes,
                                    const at::TensorOptions& options) {
  c10::IValue& slot = p.output(i);
  if (slot.isTensor()) {
    at::Tensor& out = slot.toTensor();
    if (out.dtype() == options.dtype() && out.device() == options.device() &&
        isUniquelyOwned(out)) {
      if (out.sizes() != sizes || !out.is_contiguous()) {
        c10::TensorImpl* impl = out.unsafeGetTensorImpl();
        impl->set_sizes_contiguous({0}); // so that the resize below restrides too
        at::native::resize_impl_cpu_(impl, sizes, /*stride=*/c10::nullopt);
      }
      return out;
    }
  }
  slot = at::detail::empty_cpu(sizes, options);
  return slot.toTensor();
}

// out = op(x) over a dense float32 `x` (isDenseFloat), into the node's output 0 laid out as `x`.
inline void mapToOutput(ProcessedNode& p, vec::UnaryOp op, const at::Tensor& x,
                        vec::Params params = {}) {
  if (x.is_contiguous()) {
    at::Tensor& out = contiguousOutput(p, 0, x.sizes(), x.options());
    vec::map(op, floatData(x), floatData(out), x.numel(), params, p.workers());
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, x);
  resizePreservingLayout(out, x);
  vec::map(op, floatData(x), floatData(out), x.numel(), params, p.workers());
}

inline void mapToOutput(ProcessedNode& p, vec::BinaryOp op, const at::Tensor& x,
                        const at::Tensor& y, vec::Params params = {}) {
  at::Tensor& out = contiguousOutput(p, 0, x.sizes(), x.options());
  vec::map(op, floatData(x), floatData(y), floatData(out), x.numel(), params, p.workers());
}

// A Scalar as ATen passes it to a tensor-tensor kernel: a 0-dim "wrapped number" tensor, which
// takes part in type promotion only as a Python number would.
inline at::Tensor wrappedScalar(const c10::Scalar& scalar) {
  return at::native::wrapped_scalar_tensor(scalar);
}

// A real Scalar operand as a float32 kernel sees it: the wrapped number cast to float, unchecked
// (TensorIterator casts a CPU scalar operand with static_cast).
inline float wrappedScalarAsFloat(const c10::Scalar& scalar) {
  if (scalar.isFloatingPoint()) {
    return static_cast<float>(scalar.toDouble());
  }
  if (scalar.isBoolean()) {
    return scalar.toBool() ? 1.f : 0.f;
  }
  return static_cast<float>(scalar.toLong());
}

// torch.get_default_dtype() as a ScalarType: what factories and promotions of integers give.
inline at::ScalarType defaultDtype() {
  return c10::typeMetaToScalarType(c10::get_default_dtype());
}

// The dtype of ops that compute in floating point (sigmoid, exp, true division, ...): integers
// and bool promote to the default dtype.
inline at::ScalarType floatingResultType(at::ScalarType type) {
  return c10::isIntegralType(type, /*includeBool=*/true) ? defaultDtype() : type;
}

// True when the node's inputs from `first` on (up to `end`) are all None in the graph: a
// factory's layout, device and pin_memory (and memory_format) arguments. Kernels that make CPU
// tensors decline anything else; other placements are not this runtime's to make.
inline bool noneFrom(const torch::jit::Node* node, size_t first, size_t end = SIZE_MAX) {
  for (size_t i = first; i < std::min(end, node->inputs().size()); ++i) {
    if (!node->input(i)->type()->cast<c10::NoneType>()) {
      return false;
    }
  }
  return true;
}

// A one-input op: the float32 loop `kOp` when `x` allows it, else ATen's `AtenOut(out, x)`.
// kPromotesIntegers: integer inputs give a default-dtype result (sigmoid, exp, ...).
template <vec::UnaryOp kOp, at::Tensor& (*AtenOut)(at::Tensor&, const at::Tensor&),
          bool kPromotesIntegers>
void unaryKernel(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  if (isDenseFloat(x)) {
    mapToOutput(p, kOp, x);
    return;
  }
  const at::ScalarType type =
      kPromotesIntegers ? floatingResultType(x.scalar_type()) : x.scalar_type();
  AtenOut(outputTensor(p, 0, x.options().dtype(type)), x);
}

// The node's operator overload name ("Tensor", "Scalar", "" ...), or nullopt without a schema.
inline c10::optional<std::string> overloadName(const torch::jit::Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema == nullptr) {
    return c10::nullopt;
  }
  return schema->overload_name();
}

// The kernel registered for the node's overload, or nullopt (declined) for other overloads.
inline std::optional<KernelFunction>
kernelForOverload(const torch::jit::Node* node,
                  std::initializer_list<std::pair<const char*, void (*)(ProcessedNode&)>> kernels) {
  const c10::optional<std::string> overload = overloadName(node);
  if (overload) {
    for (const auto& [name, kernel] : kernels) {
      if (*overload == name) {
        return KernelFunction(kernel);
      }
    }
  }
  return std::nullopt;
}

// A factory for an op's unnamed overload, the one on Tensors (tanh.float and the like decline).
template <void (*Kernel)(ProcessedNode&)>
std::optional<KernelFunction> tensorOverload(const torch::jit::Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", Kernel}});
}

// An optional Tensor argument as an undefined tensor for None.
inline const at::Tensor& tensorOrUndefined(const c10::IValue& value) {
  static const at::Tensor undefined;
  return value.isNone() ? undefined : value.toTensor();
}

// An optional Tensor argument (None or a Tensor), as ATen's `const optional<Tensor>&` wants it.
inline c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

} // namespace srt::ops
