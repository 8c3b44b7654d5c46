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

// 1 / (1 + exp(-x)): exp over the whole range (expInRange on -x clamped, so a large |x| gives 0
// or 1) and, with AVX-512, a reciprocal estimate refined once (14 -> 28 bits) instead of a
// division. About 17 instructions per vector: silu (x times it) took 0.29 ns a float on an AMD
// EPYC (Zen 4), where oneDNN's swish post-op added 0.6 to a depthwise convolution. Within 2e-7
// of sigmoid (1.4e-7 measured over [-100, 100]); NaN stays NaN.
inline at::vec::Vectorized<float> fastSigmoid(at::vec::Vectorized<float> x) {
  using Vec = at::vec::Vectorized<float>;
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  const Vec minus_x =
      at::vec::minimum(Vec(kHighestExpInput), at::vec::maximum(Vec(kLowestExpInput), Vec(0.f) - x));
  const Vec denominator = expInRange(minus_x) + Vec(1.f);
#if defined(CPU_CAPABILITY_AVX512)
  const __m512 estimate = _mm512_rcp14_ps(denominator);
  return _mm512_mul_ps(estimate, _mm512_fnmadd_ps(denominator, estimate, _mm512_set1_ps(2.f)));
#else
  return denominator.reciprocal();
#endif
#else
  return ((Vec(0.f) - x).exp() + Vec(1.f)).reciprocal();
#endif
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
