// Batched products too small for a library call, computed directly. DeepAndWide's 64 dot
// products of 32 floats ([64, 1, 32] x [64, 32, 1]) took 2.4 us through ATen's bmm, nearly all of
// it dispatch and setup, and about as long through 64 cblas_sgemm calls.
#pragma once

#include <ATen/core/Tensor.h>

#include "ops/gemm/problem.h"

namespace srt::ops {

// True for float32 CPU problems with at most one batch dimension, no addend, and products small
// enough that a plain loop beats a call: at most kSmallGemmMultiplyAdds per batch entry and in all.
bool smallGemmSupports(const GemmProblem& problem);

// Computes `problem` into `out`, the contiguous [batch..., M, N] view from resizeForGemm, reading
// the operands through their strides. Requires smallGemmSupports(problem).
void runSmallGemm(const GemmProblem& problem, const at::Tensor& out);

} // namespace srt::ops
