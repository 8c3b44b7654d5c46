// ops/conv/pool_loops.h for one CPU capability (cmake/CpuKernels.cmake builds it once per
// capability with CPU_CAPABILITY naming the inline namespace).
#include <algorithm>
#include <limits>

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/pool_loops.h"
#include "ops/elementwise/cpu/partial_vectors.h"

namespace srt::ops::pooling {
inline namespace CPU_CAPABILITY {

using Vec = at::vec::Vectorized<float>;
using vec::loadUpTo;
using vec::storeUpTo;

// Any window: for each output pixel and vector of channels, the max over the window's pixels.
void maxPoolWindows(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                    int64_t h_end, int64_t dilation_h, const WindowAxis& width, int64_t out_w,
                    float* out_row) {
  constexpr int64_t kWidth = Vec::size();
  const Vec lowest(-std::numeric_limits<float>::infinity());
  for (int64_t ox = 0; ox < out_w; ++ox) {
    int64_t w_start = ox * width.stride - width.pad;
    const int64_t w_end = std::min(w_start + (width.kernel - 1) * width.dilation + 1, in_w);
    while (w_start < 0) {
      w_start += width.dilation;
    }
    float* result = out_row + ox * channels;
    for (int64_t c = 0; c < channels; c += kWidth) {
      const int64_t count = std::min(kWidth, channels - c);
      Vec acc = lowest;
      for (int64_t y = h_start; y < h_end; y += dilation_h) {
        const float* row = image + y * in_w * channels + c;
        for (int64_t x = w_start; x < w_end; x += width.dilation) {
          // maximum() propagates NaN, as ATen's pooling does.
          acc = at::vec::maximum(acc, loadUpTo(row + x * channels, count));
        }
      }
      storeUpTo(acc, result + c, count);
    }
  }
}

// A running maximum, NaN in a lane where any vector it took is NaN (as ATen's pooling).
// at::vec::maximum checks each pair it combines for NaN and turns the check into a vector (4
// instructions a maximum); here one unordered comparison covers two loads and the checks gather
// in a mask applied once: a 3x3 window's maximum in 6 instructions instead of 16 (AVX-512).
class NanMaximum {
public:
  explicit NanMaximum(const Vec& first) : result_(first), previous_(first) {}

  void add(const Vec& next) {
#if defined(CPU_CAPABILITY_AVX512)
    unordered_ |= _mm512_cmp_ps_mask(previous_, next, _CMP_UNORD_Q);
    result_ = _mm512_max_ps(result_, next);
#elif defined(CPU_CAPABILITY_AVX2)
    unordered_ = _mm256_or_ps(unordered_, _mm256_cmp_ps(previous_, next, _CMP_UNORD_Q));
    result_ = _mm256_max_ps(result_, next);
#else
    result_ = at::vec::maximum(result_, next);
#endif
    previous_ = next;
  }

  Vec get() const {
#if defined(CPU_CAPABILITY_AVX512)
    return _mm512_mask_mov_ps(result_, unordered_,
                              _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
#elif defined(CPU_CAPABILITY_AVX2)
    return _mm256_blendv_ps(result_, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()),
                            unordered_);
#else
    return result_;
#endif
  }

private:
  Vec result_;
  Vec previous_;
#if defined(CPU_CAPABILITY_AVX512)
  __mmask16 unordered_ = 0;
#elif defined(CPU_CAPABILITY_AVX2)
  __m256 unordered_ = _mm256_setzero_ps();
#endif
};

// The NaN-propagating maximum of `items` (at least 1) vectors of `count` floats, the k-th at
// address(k); unrolled for the common windows of 2 and 3.
template <typename Address>
inline Vec nanMaximum(int64_t items, int64_t count, const Address& address) {
  NanMaximum maximum(loadUpTo(address(0), count));
  switch (items) {
  case 3:
    maximum.add(loadUpTo(address(1), count));
    maximum.add(loadUpTo(address(2), count));
    break;
  case 2:
    maximum.add(loadUpTo(address(1), count));
    break;
  default:
    for (int64_t k = 1; k < items; ++k) {
      maximum.add(loadUpTo(address(k), count));
    }
  }
  return maximum.get();
}

// The sum of `items` (at least 1) vectors of `count` floats, the k-th at address(k).
template <typename Address> inline Vec sumOf(int64_t items, int64_t count, const Address& address) {
  Vec sum = loadUpTo(address(0), count);
  for (int64_t k = 1; k < items; ++k) {
    sum = sum + loadUpTo(address(k), count);
  }
  return sum;
}

// Output rows [oy_begin, oy_end) of undilated windows, the image read once, row after row: each
// input row's reduction (`reduce`: maximum or sum) over every output column's window columns goes
// to a ring of the window's last rows (`columns` output columns at a time), each output pixel is
// finish(oy, ox) (a function of one vector: identity, or division by the window's divisor)
// applied to the reduction of its window's rows there. Reading the rows in order keeps
// the hardware prefetcher ahead where the image comes from memory (a Winograd convolution of
// oneDNN's writes its output past the caches): GoogLeNet's 192 x 56 x 56 max pooling after one
// took 212 us when its loop read three rows at a time, 77-149 us so (it varies between
// processes; ONNX Runtime, whose convolution leaves its output in cache, 31 us), AMD EPYC, Zen 5,
// 1 thread.
template <typename Reduce, typename Finish>
void poolRing(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
              const WindowAxis& height, const WindowAxis& width, int64_t out_w, int64_t oy_begin,
              int64_t oy_end, float* out, const Reduce& reduce, const Finish& finish) {
  constexpr int64_t kWidth = Vec::size();
  alignas(64) float ring[kRingFloats];
  const int64_t ring_rows = height.kernel;
  const int64_t columns = kRingFloats / (ring_rows * channels);
  const int64_t row_floats = in_w * channels;
  for (int64_t ox0 = 0; ox0 < out_w; ox0 += columns) {
    const int64_t ox1 = std::min(out_w, ox0 + columns);
    const int64_t slot_floats = (ox1 - ox0) * channels;
    int64_t next_row = 0; // input rows below it are in the ring or no longer needed
    for (int64_t oy = oy_begin; oy < oy_end; ++oy) {
      const int64_t first = oy * height.stride - height.pad;
      const int64_t h_start = std::max<int64_t>(0, first);
      const int64_t h_end = std::min(in_h, first + height.kernel);
      for (int64_t y = std::max(next_row, h_start); y < h_end; ++y) {
        const float* row = image + y * row_floats;
        float* slot = ring + (y % ring_rows) * slot_floats;
        for (int64_t ox = ox0; ox < ox1; ++ox) {
          const int64_t w_first = ox * width.stride - width.pad;
          const int64_t w_start = std::max<int64_t>(0, w_first);
          const int64_t w_end = std::min(in_w, w_first + width.kernel);
          const float* window = row + w_start * channels;
          float* result = slot + (ox - ox0) * channels;
          for (int64_t c = 0; c < channels; c += kWidth) {
            const int64_t count = std::min(kWidth, channels - c);
            storeUpTo(reduce(w_end - w_start, count,
                             [&](int64_t k) { return window + k * channels + c; }),
                      result + c, count);
          }
        }
      }
      next_row = std::max(next_row, h_end);
      const float* rows[kMaxRingRows];
      for (int64_t y = h_start; y < h_end; ++y) {
        rows[y - h_start] = ring + (y % ring_rows) * slot_floats;
      }
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        const auto pixel = finish(oy, ox);
        const int64_t offset = (ox - ox0) * channels;
        float* result = out + ((oy - oy_begin) * out_w + ox) * channels;
        for (int64_t c = 0; c < channels; c += kWidth) {
          const int64_t count = std::min(kWidth, channels - c);
          storeUpTo(pixel(reduce(h_end - h_start, count,
                                 [&](int64_t k) { return rows[k] + offset + c; })),
                    result + c, count);
        }
      }
    }
  }
}

// The reductions as function objects, so that poolRing inlines them.
constexpr auto nanMaximumOf = [](int64_t items, int64_t count, const auto& address) {
  return nanMaximum(items, count, address);
};
constexpr auto sumOfItems = [](int64_t items, int64_t count, const auto& address) {
  return sumOf(items, count, address);
};

void maxPoolChannelsLastRowsLoop(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
                                 const WindowAxis& height, const WindowAxis& width, int64_t out_w,
                                 int64_t oy_begin, int64_t oy_end, float* out) {
  if (height.dilation == 1 && width.dilation == 1 && ringHolds(height, channels)) {
    poolRing(image, in_h, in_w, channels, height, width, out_w, oy_begin, oy_end, out, nanMaximumOf,
             [](int64_t, int64_t) { return [](const Vec& maximum) { return maximum; }; });
    return;
  }
  // Dilated windows, or more window rows than the ring takes: window by window.
  for (int64_t oy = oy_begin; oy < oy_end; ++oy) {
    int64_t h_start = oy * height.stride - height.pad;
    const int64_t h_end = std::min(h_start + (height.kernel - 1) * height.dilation + 1, in_h);
    while (h_start < 0) {
      h_start += height.dilation;
    }
    maxPoolWindows(image, in_w, channels, h_start, h_end, height.dilation, width, out_w,
                   out + (oy - oy_begin) * out_w * channels);
  }
}

// Average pooling (Inception's stride-1 3x3 branches, DenseNet's transitions): window sums
// through the ring, divided as ATen divides.
void avgPoolChannelsLastRowsLoop(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
                                 const WindowAxis& height, const WindowAxis& width,
                                 const AverageDivisor& divisor, int64_t out_w, int64_t oy_begin,
                                 int64_t oy_end, float* out) {
  // ATen's divide factor: the window clipped to the padded image, or to the image itself.
  const auto extent = [](const WindowAxis& axis, int64_t size, int64_t index, bool with_padding) {
    const int64_t first = index * axis.stride - axis.pad;
    const int64_t last = std::min(first + axis.kernel, size + axis.pad);
    return with_padding ? last - first : std::min(last, size) - std::max<int64_t>(first, 0);
  };
  poolRing(image, in_h, in_w, channels, height, width, out_w, oy_begin, oy_end, out, sumOfItems,
           [&](int64_t oy, int64_t ox) {
             const int64_t factor = divisor.override_divisor != 0
                                        ? divisor.override_divisor
                                        : extent(height, in_h, oy, divisor.count_include_pad) *
                                              extent(width, in_w, ox, divisor.count_include_pad);
             const Vec divide(static_cast<float>(factor));
             return [divide](const Vec& sum) { return sum / divide; };
           });
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::pooling
