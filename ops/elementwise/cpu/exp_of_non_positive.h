// exp(x) for x <= 0, the exp of softmax (x - max) and of the gate loops' sigmoid (exp(-|x|)):
// Cephes' expf (round-to-nearest range reduction by ln 2 in two parts, a degree-5 polynomial,
// scaling by 2^n), within 2 ulp of expf. ATen's Sleef exp (1 ulp) took 3 cycles per float on this
// project's machines, as long as the attention GEMMs around it; this takes about 1. Inputs below
// -87.3 (masked keys among them) give exactly 0, positive inputs 1, NaN stays NaN. The capability
// without intrinsics uses ATen's exp. For the per-capability files only (cmake/CpuKernels.cmake).
#pragma once

#include <immintrin.h>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

namespace srt::ops::vec {
inline namespace CPU_CAPABILITY {

#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
constexpr float kLowestExpInput = -87.33654f; // exp of it is the smallest normal float

// p * 2^n for whole-number n in [-126, 0], and 0 where x is below kLowestExpInput; NaN lanes of x
// keep p's NaN (the unordered compare keeps them).
inline at::vec::Vectorized<float> scaleByPowerOfTwo(at::vec::Vectorized<float> p,
                                                    at::vec::Vectorized<float> n,
                                                    at::vec::Vectorized<float> x) {
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

inline at::vec::Vectorized<float> expOfNonPositive(at::vec::Vectorized<float> x) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  using Vec = at::vec::Vectorized<float>;
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

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
