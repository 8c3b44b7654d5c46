// Which library runs a GEMM: the one decision every GEMM kernel asks (linear and friends,
// srt::fused_linear, srt::gemm), so that a shape takes the same path whichever node it is in.
#pragma once

#include "ops/core/kernel_options.h"
#include "ops/gemm/problem.h"

namespace srt::ops {

// At build time: oneDNN only pays off with a right operand packed once, so a node whose right
// operand is a constant weight runs it when the option names oneDNN (makeOneDnnKernel, which
// takes what its primitive cannot back to the path below). Every other node runs the path below
// with this backend: oneDNN without a packed weight means ATen.
GemmBackend backendWithoutPackedWeight(GemmBackend configured);

// At run time, for a lowered problem and that backend: the plain loops for products too small for
// any library call (ops/gemm/small_loops.h), else OpenBLAS when it is the backend and reads the
// operands as they are (ops/gemm/openblas.h), else ATen (the caller's own ATen call, which
// differs by op: addmm, mm, bmm, matmul).
enum class GemmPath { kSmallLoops, kOpenBlas, kAten };
GemmPath chooseGemmPath(const GemmProblem& problem, GemmBackend backend);

// Runs `problem` into `out` (the view from resizeForGemm) on the chosen path and returns true,
// unless the path is ATen's: then it returns false and the caller makes its own ATen call.
bool runUnlessAten(GemmPath path, const GemmProblem& problem, const at::Tensor& out);

} // namespace srt::ops
