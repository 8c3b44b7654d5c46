// What srt::fused_linear (ops/gemm/fused.cpp) and its packed-weight overload
// (ops/gemm/packed_linear.cpp) share: the argument positions, the reference and the epilogue
// read from a node's constant arguments.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

#include "ops/gemm/epilogue.h"

namespace torch::jit {
struct Node;
} // namespace torch::jit

namespace srt::ops {

extern const char* const kFusedLinearSchema;

// Inputs of srt::fused_linear, and of srt::fused_linear.packed at the same positions.
enum FusedLinearInput {
  kInput = 0,
  kWeight,
  kBias,
  kActivation,
  kResidual,
  kAlpha,
  kResidualFirst
};

// What the JIT runs, and what we run for what the fused kernels do not cover: the ops the node
// replaced, in their order (linear, activation, residual add). `weight` is [N, K] as linear's.
at::Tensor fusedLinearReference(const at::Tensor& input, const at::Tensor& weight,
                                const c10::optional<at::Tensor>& bias, c10::string_view activation,
                                const c10::optional<at::Tensor>& residual, const at::Scalar& alpha,
                                bool residual_first);

// The epilogue fixed by the node's constant arguments, or std::nullopt when they are not
// constants (the JIT operator then runs the node).
std::optional<GemmEpilogue> constantEpilogue(const torch::jit::Node* node);

} // namespace srt::ops
