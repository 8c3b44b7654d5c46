#include "ops/gemm/problem.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/resize_native.h>

namespace srt::ops {

c10::SmallVector<int64_t, 4> GemmProblem::gemmSizes() const {
  c10::SmallVector<int64_t, 4> sizes(a.sizes().begin(), a.sizes().end() - 1);
  sizes.push_back(n());
  return sizes;
}

namespace {

bool sameDtype(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type();
}

// a [batch..., M, K] @ b [batch..., K, N]: the shapes agree and the addend fits the result.
std::optional<GemmProblem> checked(GemmProblem problem) {
  const at::Tensor& a = problem.a;
  const at::Tensor& b = problem.b;
  if (a.dim() < 2 || a.dim() != b.dim() || a.size(-1) != b.size(-2) || !sameDtype(a, b) ||
      a.sizes().slice(0, a.dim() - 2) != b.sizes().slice(0, b.dim() - 2)) {
    return std::nullopt;
  }
  if (problem.addend.defined() &&
      (!sameDtype(problem.addend, a) ||
       !at::is_expandable_to(problem.addend.sizes(), problem.gemmSizes()))) {
    return std::nullopt;
  }
  return problem;
}

// [d0, ..., K] as [d0 * ..., K]: a view when the strides allow it, else a copy (as ATen does).
at::Tensor foldLeadingDims(const at::Tensor& t) {
  const int64_t k = t.size(-1);
  const int64_t rows = c10::multiply_integers(t.sizes().begin(), t.sizes().end() - 1);
  return t.dim() == 2 ? t : t.reshape({rows, k});
}

} // namespace

std::optional<GemmProblem> lowerLinear(const at::Tensor& input, const at::Tensor& weight,
                                       const at::Tensor& bias) {
  if (input.dim() < 1 || weight.dim() != 2) {
    return std::nullopt;
  }
  GemmProblem problem;
  problem.a = input.dim() == 1 ? input.unsqueeze(0) : foldLeadingDims(input);
  problem.b = weight.t();
  problem.addend = bias;
  problem.out_sizes.assign(input.sizes().begin(), input.sizes().end() - 1);
  problem.out_sizes.push_back(weight.size(0));
  return checked(std::move(problem));
}

std::optional<GemmProblem> lowerAddmm(const at::Tensor& self, const at::Tensor& mat1,
                                      const at::Tensor& mat2, double beta, double alpha) {
  if (mat1.dim() != 2 || mat2.dim() != 2) {
    return std::nullopt;
  }
  GemmProblem problem{mat1, mat2, self, alpha, beta, {mat1.size(0), mat2.size(1)}};
  return checked(std::move(problem));
}

std::optional<GemmProblem> lowerMm(const at::Tensor& self, const at::Tensor& mat2) {
  if (self.dim() != 2 || mat2.dim() != 2) {
    return std::nullopt;
  }
  GemmProblem problem{self, mat2, {}, 1.0, 0.0, {self.size(0), mat2.size(1)}};
  return checked(std::move(problem));
}

std::optional<GemmProblem> lowerMatmul(const at::Tensor& self, const at::Tensor& other) {
  // A 1-D right operand is a matrix-vector product or a dot product: ATen's mv / dot.
  if (self.dim() < 1 || other.dim() < 2) {
    return std::nullopt;
  }
  GemmProblem problem;
  problem.beta = 0.0;
  if (other.dim() == 2) {
    // [..., K] @ [K, N]: one GEMM over all leading dimensions folded into M.
    problem.a = self.dim() == 1 ? self.unsqueeze(0) : foldLeadingDims(self);
    problem.b = other;
    problem.out_sizes.assign(self.sizes().begin(), self.sizes().end() - 1);
    problem.out_sizes.push_back(other.size(1));
    return checked(std::move(problem));
  }
  // Batched: a 1-D left operand is a row [1, K] whose dimension the result drops; batch
  // dimensions broadcast (ATen's error when they cannot).
  const at::Tensor a = self.dim() == 1 ? self.unsqueeze(0) : self;
  const at::IntArrayRef a_batch = a.sizes().slice(0, a.dim() - 2);
  const at::IntArrayRef b_batch = other.sizes().slice(0, other.dim() - 2);
  auto batch = at::infer_size_dimvector(a_batch, b_batch);
  const int64_t m = a.size(-2);
  const int64_t k = a.size(-1);
  const int64_t n = other.size(-1);
  if (other.size(-2) != k) {
    return std::nullopt;
  }
  c10::SmallVector<int64_t, 4> a_sizes(batch.begin(), batch.end());
  c10::SmallVector<int64_t, 4> b_sizes = a_sizes;
  a_sizes.append({m, k});
  b_sizes.append({k, n});
  problem.a = a.expand(a_sizes);
  problem.b = other.expand(b_sizes);
  problem.out_sizes.assign(batch.begin(), batch.end());
  if (self.dim() > 1) {
    problem.out_sizes.push_back(m);
  }
  problem.out_sizes.push_back(n);
  return checked(std::move(problem));
}

std::optional<GemmProblem> lowerBmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (self.dim() != 3 || mat2.dim() != 3) {
    return std::nullopt;
  }
  GemmProblem problem{self, mat2, {}, 1.0, 0.0, {self.size(0), self.size(1), mat2.size(2)}};
  return checked(std::move(problem));
}

std::optional<GemmProblem> lowerBaddbmm(const at::Tensor& self, const at::Tensor& batch1,
                                        const at::Tensor& batch2, double beta, double alpha) {
  if (batch1.dim() != 3 || batch2.dim() != 3) {
    return std::nullopt;
  }
  GemmProblem problem{batch1, batch2, self,
                      alpha,  beta,   {batch1.size(0), batch1.size(1), batch2.size(2)}};
  return checked(std::move(problem));
}

at::Tensor resizeForGemm(at::Tensor& out, const GemmProblem& problem) {
  at::native::resize_(out, problem.out_sizes);
  const auto gemm_sizes = problem.gemmSizes();
  // A view costs a TensorImpl allocation: skip it in the common case of equal shapes.
  return out.sizes() == at::IntArrayRef(gemm_sizes) ? out : out.view(gemm_sizes);
}

} // namespace srt::ops
