// The loops of ops/elementwise/vectorized_loops.h for one CPU capability. Built once per capability
// by cmake/CpuKernels.cmake with CPU_CAPABILITY set, so Vectorized<float> is that capability's
// (8 floats with AVX2, 16 with AVX-512) and every symbol lands in its own inline namespace. The
// element-wise formulas are formulas.h's; the row kernels below are this file's own.
#include <algorithm>
#include <cmath>
#include <limits>

#include <immintrin.h>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include "ops/elementwise/cpu/formulas.h"
#include "ops/elementwise/cpu/polynomial_exp.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::vec {
inline namespace CPU_CAPABILITY {
void unaryLoop(UnaryOp op, const float* x, float* out, int64_t n, Params params) {
  visitFormula(op, params, [&](const auto& f) { applyFormula(out, n, f, x); });
}

void fastUnaryLoop(UnaryOp op, float* x, int64_t n, Params params) {
  visitFastFormula(
      op, [&](const auto& f) { applyFormula(x, n, f, x); }, params);
}

void binaryLoop(BinaryOp op, const float* x, const float* y, float* out, int64_t n, Params params) {
  visitFormula(op, params, [&](const auto& f) { applyFormula(out, n, f, x, y); });
}

void ternaryLoop(TernaryOp op, const float* x, const float* y, const float* z, float* out,
                 int64_t n) {
  visitFormula(op, [&](const auto& f) { applyFormula(out, n, f, x, y, z); });
}

namespace {

float sumOf(const float* x, int64_t n) {
  return at::vec::reduce_all<float>([](Vec a, Vec b) { return a + b; }, x, n);
}

// The larger of a and b lane by lane, b where either is NaN (raw max; the sum a softmax divides by
// turns a NaN anywhere in the row into NaN everywhere, as ATen's does).
inline Vec rawMax(Vec a, Vec b) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_max_ps(a, b);
#elif defined(CPU_CAPABILITY_AVX2)
  return _mm256_max_ps(a, b);
#else
  return at::vec::maximum(a, b);
#endif
}

// R rows (ld floats apart) of a last-dimension softmax, as ATen's _vec_softmax computes each:
// exp(x - max), then times 1 / sum. The rows go through each pass together: one row alone waits
// on each pass's reduction and on the exp polynomial's latency (vit_b_16's 197-float rows took
// 1 ns a float so; four at once keep the vector units busy). The exp pass also sums.
template <int R> void softmaxRowGroup(float* x, int64_t ld, int64_t n) {
  constexpr int64_t kStep = Vec::size();
  const int64_t whole = n / kStep * kStep;
  const int64_t rest = n - whole;
  Vec max[R];
  for (int r = 0; r < R; ++r) {
    max[r] = Vec(-std::numeric_limits<float>::infinity());
  }
  for (int64_t i = 0; i < whole; i += kStep) {
    for (int r = 0; r < R; ++r) {
      max[r] = rawMax(max[r], Vec::loadu(x + r * ld + i));
    }
  }
  Vec max_vec[R];
  for (int r = 0; r < R; ++r) {
    if (rest > 0) {
      max[r] = Vec::set(max[r], rawMax(max[r], loadPartial(x + r * ld + whole, rest)), rest);
    }
    max_vec[r] = Vec(at::vec::vec_reduce_all<float>(rawMax, max[r]));
  }
  Vec sum[R];
  for (int r = 0; r < R; ++r) {
    sum[r] = Vec(0.f);
  }
  for (int64_t i = 0; i < whole; i += kStep) {
    for (int r = 0; r < R; ++r) {
      const Vec e = expOfNonPositive(Vec::loadu(x + r * ld + i) - max_vec[r]);
      e.store(x + r * ld + i);
      sum[r] = sum[r] + e;
    }
  }
  Vec inverse[R];
  for (int r = 0; r < R; ++r) {
    if (rest > 0) {
      // The lanes past the row are not summed.
      const Vec e = Vec::set(
          Vec(0.f), expOfNonPositive(loadPartial(x + r * ld + whole, rest) - max_vec[r]), rest);
      storePartial(e, x + r * ld + whole, rest);
      sum[r] = sum[r] + e;
    }
    inverse[r] =
        Vec(1.f / at::vec::vec_reduce_all<float>([](Vec a, Vec b) { return a + b; }, sum[r]));
  }
  for (int64_t i = 0; i < whole; i += kStep) {
    for (int r = 0; r < R; ++r) {
      (Vec::loadu(x + r * ld + i) * inverse[r]).store(x + r * ld + i);
    }
  }
  if (rest > 0) {
    for (int r = 0; r < R; ++r) {
      storePartial(loadPartial(x + r * ld + whole, rest) * inverse[r], x + r * ld + whole, rest);
    }
  }
}

// One row of layer norm: mean and biased variance over the row (two passes, so no cancellation),
// then (x - mean) * rstd * gamma + beta.
void layerNormRow(const float* x, const float* gamma, const float* beta, float eps, float* out,
                  int64_t n) {
  const float mean = sumOf(x, n) / static_cast<float>(n);
  const Vec mean_vec(mean);
  Vec squares(0.f);
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    const Vec d = Vec::loadu(x + i) - mean_vec;
    squares = at::vec::fmadd(d, d, squares);
  }
  float variance_sum = at::vec::vec_reduce_all<float>([](Vec a, Vec b) { return a + b; }, squares);
  for (; i < n; ++i) {
    variance_sum += (x[i] - mean) * (x[i] - mean);
  }
  const float rstd = 1.f / std::sqrt(std::max(variance_sum / static_cast<float>(n), 0.f) + eps);
  // (x - mean) * rstd, not ATen's x * rstd - mean * rstd: the compiler may fuse the latter into
  // one FMA whose unrounded product no longer cancels, which left 1e-4 where a one-element row
  // must give 0 (seen in the -O1 sanitizer build); the difference is one rounding.
  const Vec scale(rstd);
  if (gamma != nullptr && beta != nullptr) {
    applyFormula(
        out, n, [&](Vec v, Vec g, Vec b) { return ((v - mean_vec) * scale) * g + b; }, x, gamma,
        beta);
  } else if (gamma != nullptr) {
    applyFormula(
        out, n, [&](Vec v, Vec g) { return ((v - mean_vec) * scale) * g; }, x, gamma);
  } else if (beta != nullptr) {
    applyFormula(
        out, n, [&](Vec v, Vec b) { return (v - mean_vec) * scale + b; }, x, beta);
  } else {
    applyFormula(
        out, n, [&](Vec v) { return (v - mean_vec) * scale; }, x);
  }
}

} // namespace

void softmaxRowsLoop(float* x, int64_t rows, int64_t n, int64_t ld) {
  constexpr int kGroup = 4;
  int64_t r = 0;
  for (; r + kGroup <= rows; r += kGroup) {
    softmaxRowGroup<kGroup>(x + r * ld, ld, n);
  }
  for (; r < rows; ++r) {
    softmaxRowGroup<1>(x + r * ld, ld, n);
  }
}

void layerNormRowsLoop(const float* x, const float* gamma, const float* beta, float eps, float* out,
                       int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    layerNormRow(x + r * n, gamma, beta, eps, out + r * n, n);
  }
}

namespace {

// Columns [j, j + V * Vec::size()) of rowTimesMatrix: V accumulators, so consecutive k steps do not
// wait on each other's FMA.
template <int V>
void rowTimesColumns(const float* x, const float* w, int64_t ld, const float* bias, float* y,
                     int64_t k, int64_t n, int64_t j) {
  constexpr int64_t kWidth = Vec::size();
  Vec acc[V];
  for (int v = 0; v < V; ++v) {
    const int64_t count = std::clamp<int64_t>(n - j - v * kWidth, 0, kWidth);
    acc[v] = bias == nullptr || count == 0 ? Vec(0.f) : loadUpTo(bias + j + v * kWidth, count);
  }
  for (int64_t i = 0; i < k; ++i) {
    const Vec xi(x[i]);
    const float* row = w + i * ld + j;
    for (int v = 0; v < V; ++v) {
      acc[v] = at::vec::fmadd(xi, Vec::loadu(row + v * kWidth), acc[v]);
    }
  }
  for (int v = 0; v < V; ++v) {
    const int64_t count = std::clamp<int64_t>(n - j - v * kWidth, 0, kWidth);
    if (count > 0) {
      storeUpTo(acc[v], y + j + v * kWidth, count);
    }
  }
}

} // namespace

void rowTimesMatrixLoop(const float* x, const float* w, int64_t ld, const float* bias, float* y,
                        int64_t k, int64_t n) {
  constexpr int64_t kWidth = Vec::size();
  // Whole vectors up to n rounded up to the width stay inside the row: its columns are zero up to
  // ld, a multiple of every capability's width (and a slice starts at such a multiple).
  const int64_t readable = (n + kWidth - 1) / kWidth * kWidth;
  for (int64_t j = 0; j < n; j += 4 * kWidth) {
    switch (std::min<int64_t>(4, (readable - j) / kWidth)) {
    case 4:
      rowTimesColumns<4>(x, w, ld, bias, y, k, n, j);
      break;
    case 3:
      rowTimesColumns<3>(x, w, ld, bias, y, k, n, j);
      break;
    case 2:
      rowTimesColumns<2>(x, w, ld, bias, y, k, n, j);
      break;
    default:
      rowTimesColumns<1>(x, w, ld, bias, y, k, n, j);
      break;
    }
  }
}

float dotLoop(const float* x, const float* y, int64_t n) {
  Vec partial(0.f);
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    partial = at::vec::fmadd(Vec::loadu(x + i), Vec::loadu(y + i), partial);
  }
  float sum = at::vec::vec_reduce_all<float>([](Vec a, Vec b) { return a + b; }, partial);
  for (; i < n; ++i) {
    sum += x[i] * y[i];
  }
  return sum;
}

void scaleRowsLoop(const float* x, const float* scale, float* out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    float* result = out + r * n;
    int64_t i = 0;
    for (; i + Vec::size() <= n; i += Vec::size()) {
      (Vec::loadu(row + i) * Vec::loadu(scale + i)).store(result + i);
    }
    for (; i < n; ++i) {
      result[i] = row[i] * scale[i];
    }
  }
}

void affineRowsLoop(const float* x, int64_t x_stride, const float* scale, const float* shift,
                    float* out, int64_t out_stride, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * x_stride;
    float* result = out + r * out_stride;
    int64_t i = 0;
    for (; i + Vec::size() <= n; i += Vec::size()) {
      at::vec::fmadd(Vec::loadu(row + i), Vec::loadu(scale + i), Vec::loadu(shift + i))
          .store(result + i);
    }
    for (; i < n; ++i) {
      result[i] = row[i] * scale[i] + shift[i];
    }
  }
}

void sumRowsLoop(const float* x, int64_t rows, int64_t n, float* sums) {
  int64_t i = 0;
  // Four vectors of columns at a time: each row adds one load per accumulator.
  for (; i + 4 * Vec::size() <= n; i += 4 * Vec::size()) {
    Vec acc[4];
    for (int v = 0; v < 4; ++v) {
      acc[v] = Vec::loadu(sums + i + v * Vec::size());
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * n + i;
      for (int v = 0; v < 4; ++v) {
        acc[v] = acc[v] + Vec::loadu(row + v * Vec::size());
      }
    }
    for (int v = 0; v < 4; ++v) {
      acc[v].store(sums + i + v * Vec::size());
    }
  }
  for (; i + Vec::size() <= n; i += Vec::size()) {
    Vec acc = Vec::loadu(sums + i);
    for (int64_t r = 0; r < rows; ++r) {
      acc = acc + Vec::loadu(x + r * n + i);
    }
    acc.store(sums + i);
  }
  for (; i < n; ++i) {
    float acc = sums[i];
    for (int64_t r = 0; r < rows; ++r) {
      acc += x[r * n + i];
    }
    sums[i] = acc;
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
