#include "ops/gemm/small_loops.h"

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {
namespace {
// Per batch entry ATen's own bmm switches to loops below 400 multiply-adds; the total bounds the
// time a plain loop can take (about 30 us) where a blocked, threaded library would win.
constexpr int64_t kPerEntryMultiplyAdds = 512;
constexpr int64_t kTotalMultiplyAdds = int64_t{1} << 16;
} // namespace

bool smallGemmSupports(const GemmProblem& problem) {
  const at::Tensor& a = problem.a;
  const at::Tensor& b = problem.b;
  if (a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat || !a.is_cpu() ||
      !b.is_cpu() || problem.hasAddend() || problem.batchDims() > 1) {
    return false;
  }
  const int64_t per_entry = problem.m() * problem.n() * problem.k();
  const int64_t batch = problem.batchDims() == 1 ? a.size(0) : 1;
  return per_entry <= kPerEntryMultiplyAdds && per_entry * batch <= kTotalMultiplyAdds;
}

void runSmallGemm(const GemmProblem& problem, const at::Tensor& out) {
  const at::Tensor& a = problem.a;
  const at::Tensor& b = problem.b;
  const bool batched = problem.batchDims() == 1;
  const int64_t batch = batched ? a.size(0) : 1;
  const int64_t m = problem.m(), n = problem.n(), k = problem.k();
  const int64_t a_batch = batched ? a.stride(0) : 0, a_row = a.stride(-2), a_col = a.stride(-1);
  const int64_t b_batch = batched ? b.stride(0) : 0, b_row = b.stride(-2), b_col = b.stride(-1);
  const float alpha = static_cast<float>(problem.alpha);
  const float* a_data = a.data_ptr<float>();
  const float* b_data = b.data_ptr<float>();
  float* c = out.data_ptr<float>();
  for (int64_t e = 0; e < batch; ++e) {
    const float* a_entry = a_data + e * a_batch;
    const float* b_entry = b_data + e * b_batch;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float* a_row_i = a_entry + i * a_row;
        const float* b_col_j = b_entry + j * b_col;
        float sum = 0.f;
        if (a_col == 1 && b_row == 1) { // both run along k: the usual q.k^T shape
          sum = vec::dot(a_row_i, b_col_j, k);
        } else {
          for (int64_t l = 0; l < k; ++l) {
            sum += a_row_i[l * a_col] * b_col_j[l * b_row];
          }
        }
        *c++ = alpha * sum;
      }
    }
  }
}

} // namespace srt::ops
