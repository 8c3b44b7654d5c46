// The oneDNN backend: a matmul primitive whose right operand, a constant weight, is reordered
// once, when the module is built, into the blocked layout oneDNN prefers.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

#include "ops/gemm_epilogue.h"
#include "ops/gemm_problem.h"
#include "ops/kernel.h"

namespace srt::ops {

// The node's inputs as a GEMM, or std::nullopt for ATen's kernel.
using GemmLowering = std::optional<GemmProblem> (*)(ProcessedNode&);

// A kernel for a node whose GEMM right operand is always `weight` ([K, N], a constant), e.g. the
// transposed weight of aten::linear. It runs oneDNN when the lowered problem is a 2-D float32
// GEMM with that right operand, and `aten_kernel` otherwise (another dtype at run time, a
// shape oneDNN has no primitive for). std::nullopt when the weight cannot be packed: not float32
// or empty. The packed weight is shared read-only by every runtime; the primitive is per node and
// runtime, rebuilt when M, the thread count, alpha or beta change.
std::optional<KernelFunction> makeOneDnnKernel(const at::Tensor& weight, GemmLowering lower,
                                               KernelFunction aten_kernel);

// A fused GEMM (srt::fused_linear): the same, with `epilogue` run as oneDNN post-ops (eltwise for
// the activation, a sum post-op for the residual, which is first copied into the output). The
// residual is the node's input `residual_input`, alpha its input `alpha_input` (when the
// epilogue has a residual). A residual that does not broadcast to the output, or a bias that is
// not one value per column, runs `aten_kernel`.
std::optional<KernelFunction> makeOneDnnKernel(const at::Tensor& weight, GemmLowering lower,
                                               KernelFunction aten_kernel, GemmEpilogue epilogue,
                                               int residual_input, int alpha_input);

} // namespace srt::ops
