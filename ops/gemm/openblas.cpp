#include "ops/gemm/openblas.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <c10/util/SmallVector.h>
#include <cblas.h>

#include "ops/gemm/threads.h"

namespace srt::ops {
namespace {

struct BlasOperand {
  CBLAS_TRANSPOSE transpose;
  int ld;
};

constexpr int64_t kMaxBlasInt = std::numeric_limits<int>::max();

std::optional<BlasOperand> operand(CBLAS_TRANSPOSE transpose, int64_t ld) {
  if (ld > kMaxBlasInt) {
    return std::nullopt;
  }
  return BlasOperand{transpose, static_cast<int>(ld)};
}

// A [rows, cols] matrix with these strides as row-major BLAS sees it: as stored (ld = row
// stride), or as the transpose of a row-major [cols, rows] matrix (ld = column stride). The
// stride of a size-1 dimension is never used, so it may be anything.
std::optional<BlasOperand> blasOperand(int64_t rows, int64_t cols, int64_t row_stride,
                                       int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(1, cols))) {
    return operand(CblasNoTrans, rows == 1 ? std::max<int64_t>(1, cols) : row_stride);
  }
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= std::max<int64_t>(1, rows))) {
    return operand(CblasTrans, cols == 1 ? std::max<int64_t>(1, rows) : col_stride);
  }
  return std::nullopt;
}

std::optional<BlasOperand> blasOperand(const at::Tensor& t) {
  return blasOperand(t.size(-2), t.size(-1), t.stride(-2), t.stride(-1));
}

} // namespace

bool openblasSupports(const GemmProblem& problem) {
  const at::Tensor& a = problem.a;
  const at::Tensor& b = problem.b;
  return a.scalar_type() == at::kFloat && a.is_cpu() && b.is_cpu() && problem.m() <= kMaxBlasInt &&
         problem.n() <= kMaxBlasInt && problem.k() <= kMaxBlasInt && blasOperand(a) &&
         blasOperand(b);
}

void runOpenBlas(const GemmProblem& problem, const at::Tensor& out) {
  const int64_t m = problem.m();
  const int64_t n = problem.n();
  const int64_t k = problem.k();
  // sgemm adds beta * C: the addend goes into C first, broadcast (bias rows, a column, ...).
  float beta = 0.0f;
  if (problem.hasAddend()) {
    out.copy_(problem.addend);
    beta = static_cast<float>(problem.beta);
  }
  if (out.numel() == 0) {
    return;
  }
  if (k == 0) {
    // Nothing to multiply; BLAS would also reject the zero leading dimension of a [M, 0] operand.
    if (beta == 0.0f) {
      out.zero_();
    } else {
      out.mul_(beta);
    }
    return;
  }
  const BlasOperand a_op = *blasOperand(problem.a);
  const BlasOperand b_op = *blasOperand(problem.b);
  const float alpha = static_cast<float>(problem.alpha);
  const float* a_data = problem.a.data_ptr<float>();
  const float* b_data = problem.b.data_ptr<float>();
  float* c_data = out.data_ptr<float>();
  useAtenThreadsForOpenBlas();

  // Walks the batch dimensions like an odometer; broadcast ones have stride 0 in a or b.
  const int64_t batch_dims = problem.batchDims();
  const int64_t batches = c10::multiply_integers(out.sizes().begin(), out.sizes().end() - 2);
  c10::SmallVector<int64_t, 4> index(batch_dims, 0);
  int64_t a_offset = 0;
  int64_t b_offset = 0;
  for (int64_t batch = 0; batch < batches; ++batch) {
    cblas_sgemm(CblasRowMajor, a_op.transpose, b_op.transpose, m, n, k, alpha, a_data + a_offset,
                a_op.ld, b_data + b_offset, b_op.ld, beta, c_data + batch * m * n, n);
    for (int64_t d = batch_dims - 1; d >= 0; --d) {
      if (++index[d] < out.size(d)) {
        a_offset += problem.a.stride(d);
        b_offset += problem.b.stride(d);
        break;
      }
      a_offset -= (index[d] - 1) * problem.a.stride(d);
      b_offset -= (index[d] - 1) * problem.b.stride(d);
      index[d] = 0;
    }
  }
}

} // namespace srt::ops
