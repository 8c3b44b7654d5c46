// Polynomial exp and what is built on it, for results that owe ATen no bits: expOfNonPositive,
// the exp of softmax (x - max), and fastSigmoid, the recurrent gates' and the convolution
// epilogues' sigmoid. Cephes' expf (round-to-nearest range reduction by ln 2 in two parts, a
// degree-5 polynomial, scaling by 2^n), within 2 ulp of expf. ATen's Sleef exp (1 ulp) took 3
// cycles per float on this project's machines, as long as the attention GEMMs around it; this
// takes about 1. expOfNonPositive: inputs below -87.3 (masked keys among them) give exactly 0,
// positive inputs 1, NaN stays NaN. The capability without intrinsics uses ATen's exp. For the
// per-capability files only (cmake/CpuKernels.cmake).
#pragma once

#include <immintrin.h>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

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
  // ATen's maximum/minimum propagate NaN.
  const Vec clamped = at::vec::minimum(Vec(0.f), at::vec::maximum(Vec(kLowestExpInput), x));
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

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
