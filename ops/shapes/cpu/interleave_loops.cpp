// ops/shapes/interleave.h for one CPU capability (cmake/CpuKernels.cmake builds it once per
// capability with CPU_CAPABILITY naming the inline namespace).
#include <array>
#include <cstdint>

#if defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>
#endif

namespace srt::ops {
inline namespace CPU_CAPABILITY {

namespace {

template <int kChannels>
void interleaveScalar(const float* planes, float* pixels, int64_t plane, int64_t begin,
                      int64_t end) {
  for (int64_t p = begin; p < end; ++p) {
    for (int c = 0; c < kChannels; ++c) {
      pixels[p * kChannels + c] = planes[c * plane + p];
    }
  }
}

#if defined(CPU_CAPABILITY_AVX512)
// Three planes' 16 pixels at a time, as 48 interleaved floats in three vectors: each output
// vector takes its red and green lanes from one two-source permute and its blue ones from a
// second (GCC leaves the stride-3 stores scalar: 65 us for 3x224x224, this about 20).
struct RgbPermutes {
  std::array<std::array<int32_t, 16>, 3> red_green, blue;
};

constexpr RgbPermutes rgbPermutes() {
  RgbPermutes t{};
  for (int v = 0; v < 3; ++v) {
    for (int k = 0; k < 16; ++k) {
      const int element = 16 * v + k;
      const int pixel = element / 3;
      const int channel = element % 3;
      t.red_green[v][k] = channel == 0 ? pixel : channel == 1 ? 16 + pixel : 0;
      t.blue[v][k] = channel == 2 ? 16 + pixel : k;
    }
  }
  return t;
}

void interleaveRgb(const float* planes, float* pixels, int64_t plane, int64_t begin, int64_t end) {
  static constexpr RgbPermutes kPermutes = rgbPermutes();
  __m512i red_green[3];
  __m512i blue[3];
  for (int v = 0; v < 3; ++v) {
    red_green[v] = _mm512_loadu_si512(kPermutes.red_green[v].data());
    blue[v] = _mm512_loadu_si512(kPermutes.blue[v].data());
  }
  int64_t p = begin;
  for (; p + 16 <= end; p += 16) {
    const __m512 r = _mm512_loadu_ps(planes + p);
    const __m512 g = _mm512_loadu_ps(planes + plane + p);
    const __m512 b = _mm512_loadu_ps(planes + 2 * plane + p);
    float* out = pixels + 3 * p;
    for (int v = 0; v < 3; ++v) {
      const __m512 rg = _mm512_permutex2var_ps(r, red_green[v], g);
      _mm512_storeu_ps(out + 16 * v, _mm512_permutex2var_ps(rg, blue[v], b));
    }
  }
  interleaveScalar<3>(planes, pixels, plane, p, end);
}
#endif

} // namespace

void interleavePlanesLoop(const float* planes, float* pixels, int64_t channels, int64_t plane,
                          int64_t begin, int64_t end) {
  switch (channels) {
  case 2:
    interleaveScalar<2>(planes, pixels, plane, begin, end);
    return;
  case 3:
#if defined(CPU_CAPABILITY_AVX512)
    interleaveRgb(planes, pixels, plane, begin, end);
#else
    interleaveScalar<3>(planes, pixels, plane, begin, end);
#endif
    return;
  default:
    interleaveScalar<4>(planes, pixels, plane, begin, end);
    return;
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops
