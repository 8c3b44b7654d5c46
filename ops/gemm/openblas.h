// The OpenBLAS backend: cblas_sgemm, one call per batch.
#pragma once

#include <ATen/core/Tensor.h>

#include "ops/gemm/problem.h"

namespace srt::ops {

// True when cblas_sgemm can run `problem` without copying an operand: float32, and the last two
// dimensions of `a` and `b` row-major or column-major (a transposed view) with a leading
// dimension, sizes within BLAS's int.
bool openblasSupports(const GemmProblem& problem);

// Computes `problem` into `out`, the [batch..., M, N] view from resizeForGemm.
// Requires openblasSupports(problem).
void runOpenBlas(const GemmProblem& problem, const at::Tensor& out);

} // namespace srt::ops
