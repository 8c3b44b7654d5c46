// The GEMM family (linear, addmm, mm, matmul, bmm, baddbmm) lowered to one form the BLAS and
// oneDNN backends run: out = alpha * a @ b + beta * addend, batched over leading dimensions.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

namespace srt::ops {

struct GemmProblem {
  // [batch..., M, K] and [batch..., K, N] with the same batch dimensions; broadcast batch
  // dimensions are expanded views (stride 0), never copies.
  at::Tensor a;
  at::Tensor b;
  // Undefined, or expandable to gemmSizes(). Ignored when beta == 0 (ATen's rule: then NaN and inf
  // in it do not propagate).
  at::Tensor addend;
  double alpha = 1.0;
  double beta = 1.0;
  // The node's output shape. Same element count as gemmSizes(), so a contiguous output of this
  // shape can be viewed as [batch..., M, N] (linear on N-D input, matmul with a 1-D operand).
  c10::SmallVector<int64_t, 4> out_sizes;

  int64_t m() const { return a.size(-2); }
  int64_t k() const { return a.size(-1); }
  int64_t n() const { return b.size(-1); }
  int64_t batchDims() const { return a.dim() - 2; }
  bool hasAddend() const { return addend.defined() && beta != 0.0; }
  // [batch..., M, N]
  c10::SmallVector<int64_t, 4> gemmSizes() const;
};

// Each returns std::nullopt when the arguments are not a plain GEMM of one dtype with consistent
// shapes: the caller then runs ATen's kernel, which computes the awkward ranks (matmul with a 1-D
// right operand) and raises ATen's own error for invalid arguments.
std::optional<GemmProblem> lowerLinear(const at::Tensor& input, const at::Tensor& weight,
                                       const at::Tensor& bias);
std::optional<GemmProblem> lowerAddmm(const at::Tensor& self, const at::Tensor& mat1,
                                      const at::Tensor& mat2, double beta, double alpha);
std::optional<GemmProblem> lowerMm(const at::Tensor& self, const at::Tensor& mat2);
std::optional<GemmProblem> lowerMatmul(const at::Tensor& self, const at::Tensor& other);
std::optional<GemmProblem> lowerBmm(const at::Tensor& self, const at::Tensor& mat2);
std::optional<GemmProblem> lowerBaddbmm(const at::Tensor& self, const at::Tensor& batch1,
                                        const at::Tensor& batch2, double beta, double alpha);

// `out` resized to problem.out_sizes (its storage reused when large enough), and returned as the
// contiguous [batch..., M, N] view the backends write into.
at::Tensor resizeForGemm(at::Tensor& out, const GemmProblem& problem);

} // namespace srt::ops
