// Polynomial exp and what is built on it, for results that owe ATen no bits: expOfNonPositive,
// the exp of softmax (x - max); fastSigmoid, the recurrent gates' and the convolution
// epilogues' sigmoid, fastTanh and fastGelu on it, and visitFastFormula, which hands them out.
// Cephes' expf (round-to-nearest range reduction by ln 2 in two parts, a degree-5 polynomial,
// scaling by 2^n), within 2 ulp of expf. ATen's Sleef exp (1 ulp) took 3 cycles per float on this
// project's machines, as long as the attention GEMMs around it; this takes about 1.
// expOfNonPositive: inputs below -87.3 (masked keys among them) give exactly 0, positive inputs 1,
// NaN stays NaN. The capability without intrinsics uses ATen's exp. For the per-capability files
// only (cmake/CpuKernels.cmake).
#pragma once

#include <immintrin.h>

#include <cmath>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include "ops/elementwise/cpu/formulas.h"

namespace srt::ops::vec {
inline namespace CPU_CAPABILITY {

#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
constexpr float kLowestExpInput = -87.33654f; // exp of it is the smallest normal float
constexpr float kHighestExpInput = 88.f; // rounds to n = 127, the largest scale 2^n a float holds

// p * 2^n for whole-number n in [-126, 127].
inline at::vec::Vectorized<float> scaleByPowerOfTwo(at::vec::Vectorized<float> p,
                                                    at::vec::Vectorized<float> n) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_scalef_ps(p, n);
#else
  // 2^n built in the exponent field.
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
#endif
}

// exp(x) for x in [kLowestExpInput, kHighestExpInput] (unchecked): Cephes' expf, within 2 ulp.
inline at::vec::Vectorized<float> expInRange(at::vec::Vectorized<float> x) {
  using Vec = at::vec::Vectorized<float>;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f;
  constexpr float kLn2Low = -2.12194440e-4f;
  constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                  kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
  using at::vec::fmadd;
  const Vec n = (x * Vec(kLog2e)).round(); // to nearest
  Vec r = fmadd(n, Vec(-kLn2High), x);
  r = fmadd(n, Vec(-kLn2Low), r);
  Vec p = fmadd(Vec(kP0), r, Vec(kP1));
  p = fmadd(p, r, Vec(kP2));
  p = fmadd(p, r, Vec(kP3));
  p = fmadd(p, r, Vec(kP4));
  p = fmadd(p, r, Vec(kP5));
  p = fmadd(p * r, r, r + Vec(1.f));
  return scaleByPowerOfTwo(p, n);
}

// `value` where x is not below kLowestExpInput (NaN lanes of x included), 0 elsewhere.
inline at::vec::Vectorized<float> zeroBelowLowestExpInput(at::vec::Vectorized<float> value,
                                                          at::vec::Vectorized<float> x) {
#if defined(CPU_CAPABILITY_AVX512)
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLowestExpInput), _CMP_NLT_UQ);
  return _mm512_maskz_mov_ps(keep, value);
#else
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(kLowestExpInput), _CMP_NLT_UQ);
  return _mm256_and_ps(value, keep);
#endif
}
#endif

inline at::vec::Vectorized<float> expOfNonPositive(at::vec::Vectorized<float> x) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  using Vec = at::vec::Vectorized<float>;
  // Raw min/max keep a NaN as their second operand does (ATen's NaN-propagating ones take four
  // instructions each, a third of the loop).
#if defined(CPU_CAPABILITY_AVX512)
  const Vec clamped(
      _mm512_min_ps(_mm512_setzero_ps(), _mm512_max_ps(_mm512_set1_ps(kLowestExpInput), x)));
#else
  const Vec clamped(
      _mm256_min_ps(_mm256_setzero_ps(), _mm256_max_ps(_mm256_set1_ps(kLowestExpInput), x)));
#endif
  return zeroBelowLowestExpInput(expInRange(clamped), x);
#else
  return x.exp();
#endif
}

// 1 / (1 + exp(-x)), a large |x| giving 0 or 1, NaN staying NaN; within 2e-7 of sigmoid.
// With AVX-512, in 18 instructions a vector: x clamped to [-88, 88] by raw min/max (ATen's
// NaN-propagating ones take four instructions each; these keep a NaN as their second operand
// does), exp(-x) as 2^n times a degree-6 minimax polynomial of the reduced argument (relative
// error 2e-9; Cephes' form, which softmax keeps for its 2 ulp, takes two instructions more, and
// the argument's sign is folded into the coefficients), and the reciprocal an rcp14 estimate
// refined once (14 -> 28 bits) instead of a division. SiLU (x times it) then takes 0.2 ns a
// float on an AMD EPYC (Zen 4); oneDNN's swish post-op added 0.6 to a depthwise convolution.
inline at::vec::Vectorized<float> fastSigmoid(at::vec::Vectorized<float> x) {
#if defined(CPU_CAPABILITY_AVX512)
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f;
  constexpr float kLn2Low = -2.12194440e-4f;
  // exp(r) ~ sum kC[i] r^i on [-ln 2 / 2, ln 2 / 2].
  constexpr float kC0 = 1.f, kC1 = 1.f, kC2 = 0.49999991059303284f, kC3 = 0.16666419804096222f,
                  kC4 = 0.04166822507977486f, kC5 = 0.008374815806746483f,
                  kC6 = 0.0013836845755577087f;
  const __m512 clamped = _mm512_min_ps(_mm512_set1_ps(kHighestExpInput),
                                       _mm512_max_ps(_mm512_set1_ps(-kHighestExpInput), x));
  // exp(-x) = 2^n exp(-r) with n = round(-x log2 e), r = x + n ln 2.
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(clamped, _mm512_set1_ps(-kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(kLn2High), clamped);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(kLn2Low), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kC6), r, _mm512_set1_ps(-kC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-kC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC0));
  const __m512 denominator = _mm512_add_ps(_mm512_scalef_ps(p, n), _mm512_set1_ps(1.f));
  const __m512 estimate = _mm512_rcp14_ps(denominator);
  return _mm512_mul_ps(estimate, _mm512_fnmadd_ps(denominator, estimate, _mm512_set1_ps(2.f)));
#elif defined(CPU_CAPABILITY_AVX2)
  using Vec = at::vec::Vectorized<float>;
  const Vec minus_x =
      at::vec::minimum(Vec(kHighestExpInput), at::vec::maximum(Vec(kLowestExpInput), Vec(0.f) - x));
  return (expInRange(minus_x) + Vec(1.f)).reciprocal();
#else
  using Vec = at::vec::Vectorized<float>;
  return ((Vec(0.f) - x).exp() + Vec(1.f)).reciprocal();
#endif
}

// tanh(x) = 2 * sigmoid(2x) - 1: Sleef's tanh took 9% of a batch-1 LSTM's time. Within 2.7e-7
// of tanh (the rounding of 1 near x = 0, relative error larger there).
inline at::vec::Vectorized<float> fastTanh(at::vec::Vectorized<float> x) {
  using Vec = at::vec::Vectorized<float>;
  const Vec two(2.f);
  return two * fastSigmoid(two * x) - Vec(1.f);
}

// gelu(x) = x / 2 * (1 + erf(x / sqrt 2)) with Abramowitz and Stegun's erf (7.1.26, within
// 1.5e-7 of it, as oneDNN's gelu_erf): 1 + erf(z) = q for z < 0 and 2 - q otherwise, with
// q = t (a1 + t (a2 + ... a5 t)) exp(-z^2), t = 1 / (1 + p |z|), so the negative tail is never
// a difference of near-equal values (it stays negative, within 1e-7; a few percent relative at
// x = -5, where gelu is -1.5e-6). ATen's Sleef erf made a GEMM's gelu epilogue cost 20% of the
// product (197 x 768 x 3072: 1 ms of 4.9); this takes a tenth of that.
inline at::vec::Vectorized<float> fastGelu(at::vec::Vectorized<float> x) {
  using Vec = at::vec::Vectorized<float>;
  using at::vec::fmadd;
  constexpr float kP = 0.3275911f;
  constexpr float kA1 = 0.254829592f, kA2 = -0.284496736f, kA3 = 1.421413741f, kA4 = -1.453152027f,
                  kA5 = 1.061405429f;
  const Vec z = x * Vec(static_cast<float>(M_SQRT1_2));
  // erfc(10) is 2e-45: past it q is 0, and an infinite input gives an infinite result.
  const Vec magnitude = at::vec::minimum(z.abs(), Vec(10.f));
  const Vec denominator = fmadd(Vec(kP), magnitude, Vec(1.f));
#if defined(CPU_CAPABILITY_AVX512)
  // An rcp14 estimate refined once (14 -> 28 bits) instead of a division.
  const __m512 estimate = _mm512_rcp14_ps(denominator);
  const Vec t =
      _mm512_mul_ps(estimate, _mm512_fnmadd_ps(denominator, estimate, _mm512_set1_ps(2.f)));
#else
  const Vec t = denominator.reciprocal();
#endif
  Vec poly = fmadd(Vec(kA5), t, Vec(kA4));
  poly = fmadd(poly, t, Vec(kA3));
  poly = fmadd(poly, t, Vec(kA2));
  poly = fmadd(poly, t, Vec(kA1));
  const Vec q = poly * t * expOfNonPositive(Vec(0.f) - magnitude * magnitude);
  const Vec one_plus_erf = Vec::blendv(q, Vec(2.f) - q, z >= Vec(0.f));
  return Vec(0.5f) * x * one_plus_erf;
}

// Calls visit(f) with f the fast formula of `op` where there is one (sigmoid, silu, tanh, gelu),
// else its formula as ATen writes it (formulas.h) with `params` (a clamp's bounds).
template <typename Visit>
inline void visitFastFormula(UnaryOp op, const Visit& visit, Params params = {}) {
  using Vec = at::vec::Vectorized<float>;
  switch (op) {
  case UnaryOp::kSigmoid:
    return visit([](Vec v) { return fastSigmoid(v); });
  case UnaryOp::kSilu:
    return visit([](Vec v) { return v * fastSigmoid(v); });
  case UnaryOp::kTanh:
    return visit([](Vec v) { return fastTanh(v); });
  case UnaryOp::kGelu:
    return visit([](Vec v) { return fastGelu(v); });
  default:
    return visitFormula(op, params, visit);
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
