// Loads and stores of the first `count` lanes of a vector (a row's tail), for the per-capability
// files (cmake/CpuKernels.cmake). ATen 1.13's Vectorized<float>::loadu(ptr, count) and
// store(ptr, count) go through a stack array and a memcpy of variable size: vit_b_16's softmax rows
// of 197 floats took twice as long as rows of 192 for their 5-float tails. These are one masked
// instruction (AVX-512), a masked load or store (AVX2), ATen's elsewhere. Lanes past `count`
// load as zero; `count` is 1 ... Vec::size().
#pragma once

#include <immintrin.h>

#include <cstdint>

#include <ATen/cpu/vec/vec.h>

namespace srt::ops::vec {
inline namespace CPU_CAPABILITY {

#if defined(CPU_CAPABILITY_AVX2)
// Lanes below `count` all ones: the mask of AVX2's masked loads and stores.
inline __m256i leadingLanes(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

inline at::vec::Vectorized<float> loadPartial(const float* p, int64_t count) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
#elif defined(CPU_CAPABILITY_AVX2)
  return _mm256_maskload_ps(p, leadingLanes(count));
#else
  return at::vec::Vectorized<float>::loadu(p, count);
#endif
}

inline void storePartial(const at::vec::Vectorized<float>& v, float* p, int64_t count) {
#if defined(CPU_CAPABILITY_AVX512)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1u), v);
#elif defined(CPU_CAPABILITY_AVX2)
  _mm256_maskstore_ps(p, leadingLanes(count), v);
#else
  v.store(p, count);
#endif
}

// Whole vectors as they are, tails through the masked forms.
inline at::vec::Vectorized<float> loadUpTo(const float* p, int64_t count) {
  return count >= at::vec::Vectorized<float>::size() ? at::vec::Vectorized<float>::loadu(p)
                                                     : loadPartial(p, count);
}

inline void storeUpTo(const at::vec::Vectorized<float>& v, float* p, int64_t count) {
  if (count >= at::vec::Vectorized<float>::size()) {
    v.store(p);
  } else {
    storePartial(v, p, count);
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
