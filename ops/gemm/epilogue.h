// What a fused GEMM does to its result before anyone else sees it: an activation, then a residual
// added with aten::add's alpha, in either operand order (srt::fused_linear, ops/gemm/fused.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <ATen/core/Tensor.h>

namespace torch::jit {
struct Value;
} // namespace torch::jit

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

// The activations a fused GEMM applies: none, or one of the element-wise formulas
// (vectorized_loops.h), whose values these are.
enum class Activation : uint8_t {
  kRelu = static_cast<uint8_t>(vec::UnaryOp::kRelu),
  kGelu = static_cast<uint8_t>(vec::UnaryOp::kGelu),         // approximate="none"
  kGeluTanh = static_cast<uint8_t>(vec::UnaryOp::kGeluTanh), // approximate="tanh"
  kSigmoid = static_cast<uint8_t>(vec::UnaryOp::kSigmoid),
  kTanh = static_cast<uint8_t>(vec::UnaryOp::kTanh),
  kSilu = static_cast<uint8_t>(vec::UnaryOp::kSilu),
  kNone = 0xff,
};

// The formula of an activation other than kNone.
inline vec::UnaryOp formulaOf(Activation activation) {
  return static_cast<vec::UnaryOp>(activation);
}

// The names srt::fused_linear's `activation` argument takes: "none", "relu", "gelu",
// "gelu_tanh", "sigmoid", "tanh", "silu". std::nullopt for anything else.
std::optional<Activation> parseActivation(std::string_view name);
const char* toString(Activation activation);

// parseActivation for a fused op's reference (what the JIT runs): an unknown name is an error
// naming `op` and the names it takes.
Activation activationOrError(std::string_view name, const char* op);

// The activation a fused node's constant `activation` argument names; std::nullopt where the name
// is not a constant (the JIT operator then runs the node) or names none of them.
std::optional<Activation> constantActivation(const torch::jit::Value* name);

// act(x) with ATen's own ops: what the JIT runs for a fused node, and the path for what the
// vectorized loops do not cover (other dtypes, strided outputs).
at::Tensor applyActivation(Activation activation, const at::Tensor& x);

struct GemmEpilogue {
  Activation activation = Activation::kNone;
  // y = act(gemm), then: no residual: y; residual_first: residual + alpha * y (add(residual, y,
  // alpha)); otherwise y + alpha * residual (add(y, residual, alpha)).
  bool has_residual = false;
  bool residual_first = false;
  double alpha = 1.0;
};

// The reference: exactly the ATen ops the fused node replaced, allocating a new tensor.
at::Tensor referenceEpilogue(const GemmEpilogue& epilogue, const at::Tensor& y,
                             const at::Tensor& residual);

// True when applyEpilogue can run in place on a float32 `out` of these sizes: the residual, when
// there is one, is float32 and broadcasts to `out_sizes` (so the result keeps them).
bool epilogueFitsInPlace(const GemmEpilogue& epilogue, at::IntArrayRef out_sizes,
                         const at::Tensor& residual);

// Applies `epilogue` in place to `out` (contiguous float32, the node's output in its final
// shape) in vectorized passes over the memory the GEMM just wrote. Requires epilogueFitsInPlace.
void applyEpilogue(const GemmEpilogue& epilogue, const at::Tensor& out, const at::Tensor& residual);

} // namespace srt::ops
