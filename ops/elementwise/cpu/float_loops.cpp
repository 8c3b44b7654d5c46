// The loops of ops/elementwise/vectorized_loops.h for one CPU capability. Built once per capability
// by cmake/CpuKernels.cmake with CPU_CAPABILITY set, so Vectorized<float> is that capability's
// (8 floats with AVX2, 16 with AVX-512) and every symbol lands in its own inline namespace. The
// element-wise formulas are formulas.h's; the row kernels below are this file's own.
#include <algorithm>
#include <cmath>

#include <immintrin.h>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include "ops/elementwise/cpu/formulas.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::vec {
inline namespace CPU_CAPABILITY {
void unaryLoop(UnaryOp op, const float* x, float* out, int64_t n, Params params) {
  visitFormula(op, params, [&](const auto& f) { applyFormula(out, n, f, x); });
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

#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
constexpr float kLowestExpInput = -87.33654f; // exp of it is the smallest normal float

// p * 2^n for whole-number n in [-126, 0], and 0 where x is below kLowestExpInput; NaN lanes of x
// keep p's NaN (the unordered compare keeps them).
Vec scaleByPowerOfTwo(Vec p, Vec n, Vec x) {
#if defined(CPU_CAPABILITY_AVX512)
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLowestExpInput), _CMP_NLT_UQ);
  return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
#else
  // 2^n built in the exponent field.
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(kLowestExpInput), _CMP_NLT_UQ);
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(exponent)), keep);
#endif
}
#endif

// exp(x) for softmax, whose inputs are x - max <= 0: Cephes' expf (round-to-nearest range
// reduction by ln 2 in two parts, a degree-5 polynomial, scaling by 2^n), within 2 ulp of expf.
// ATen's Sleef exp (1 ulp) took 3 cycles per float on this project's machines, as long as the
// attention GEMMs around it; this takes about 1. Inputs below -87.3 (masked keys among them) give
// exactly 0, NaN stays NaN. The capability without intrinsics uses ATen's exp.
Vec expForSoftmax(Vec x) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f;
  constexpr float kLn2Low = -2.12194440e-4f;
  constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                  kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
  using at::vec::fmadd;
  // ATen's maximum/minimum propagate NaN.
  const Vec clamped = at::vec::minimum(Vec(0.f), at::vec::maximum(Vec(kLowestExpInput), x));
  const Vec n = (clamped * Vec(kLog2e)).round(); // to nearest
  Vec r = fmadd(n, Vec(-kLn2High), clamped);
  r = fmadd(n, Vec(-kLn2Low), r);
  Vec p = fmadd(Vec(kP0), r, Vec(kP1));
  p = fmadd(p, r, Vec(kP2));
  p = fmadd(p, r, Vec(kP3));
  p = fmadd(p, r, Vec(kP4));
  p = fmadd(p, r, Vec(kP5));
  p = fmadd(p * r, r, r + Vec(1.f));
  return scaleByPowerOfTwo(p, n, x);
#else
  return x.exp();
#endif
}

// One row of a last-dimension softmax, as ATen's _vec_softmax computes it: exp(x - max), then
// times 1 / sum.
void softmaxRow(float* x, int64_t n) {
  const float max =
      at::vec::reduce_all<float>([](Vec a, Vec b) { return at::vec::maximum(a, b); }, x, n);
  const Vec max_vec(max);
  applyFormula(
      x, n, [&](Vec v) { return expForSoftmax(v - max_vec); }, x);
  const Vec inverse_sum(1.f / sumOf(x, n));
  applyFormula(
      x, n, [&](Vec v) { return v * inverse_sum; }, x);
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

void softmaxRowsLoop(float* x, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    softmaxRow(x + r * n, n);
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
    acc[v] = bias == nullptr || count == 0 ? Vec(0.f)
             : count == kWidth             ? Vec::loadu(bias + j + v * kWidth)
                                           : Vec::loadu(bias + j + v * kWidth, count);
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
    if (count == kWidth) {
      acc[v].store(y + j + v * kWidth);
    } else if (count > 0) {
      acc[v].store(y + j + v * kWidth, count);
    }
  }
}

} // namespace

void rowTimesMatrixLoop(const float* x, const float* w, int64_t ld, const float* bias, float* y,
                        int64_t k, int64_t n) {
  constexpr int64_t kWidth = Vec::size();
  for (int64_t j = 0; j < n; j += 4 * kWidth) {
    // ld is a multiple of every capability's width, so whole vectors stay inside the row.
    switch (std::min<int64_t>(4, (ld - j) / kWidth)) {
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
