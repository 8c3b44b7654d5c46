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

// Column maxima or sums of a chunk of output columns, in L1 while the window's rows stream by.
constexpr int64_t kColumnFloats = kMaxSeparableRowFloats;

// combine() over `items` vectors of `count` floats, `stride` floats apart from `first` (a window's
// rows of one column chunk, or its columns of one channel vector); zero for no items.
template <typename Combine>
inline Vec reduceStrided(const float* first, int64_t stride, int64_t items, int64_t count,
                         const Combine& combine) {
  if (items == 0) {
    return Vec(0.f);
  }
  Vec acc = loadUpTo(first, count);
  for (int64_t k = 1; k < items; ++k) {
    acc = combine(acc, loadUpTo(first + k * stride, count));
  }
  return acc;
}

// Function objects, not functions, so that reduceStrided inlines them.
// maximum() propagates NaN, as ATen's pooling does.
constexpr auto nanMax = [](const Vec& a, const Vec& b) { return at::vec::maximum(a, b); };
constexpr auto add = [](const Vec& a, const Vec& b) { return a + b; };

// A row's output columns in chunks whose windows' input columns fit kColumnFloats: for each, the
// input columns [x0, x1) its windows read, reduced by `op` over the input rows [h_start, h_end)
// into `columns` (`channels` floats a column), then body(ox0, ox1, x0) for the output columns
// [ox0, ox1).
template <typename Op, typename Body>
void forEachColumnChunk(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                        int64_t h_end, const WindowAxis& width, int64_t out_w, const Op& op,
                        float* columns, const Body& body) {
  constexpr int64_t kWidth = Vec::size();
  const int64_t row_floats = in_w * channels;
  // (chunk - 1) * stride + kernel input columns of `channels` each.
  const int64_t chunk =
      std::max<int64_t>(1, (kColumnFloats / channels - width.kernel) / width.stride + 1);
  for (int64_t ox0 = 0; ox0 < out_w; ox0 += chunk) {
    const int64_t ox1 = std::min(out_w, ox0 + chunk);
    const int64_t x0 = std::max<int64_t>(0, ox0 * width.stride - width.pad);
    const int64_t x1 = std::min(in_w, (ox1 - 1) * width.stride - width.pad + width.kernel);
    const int64_t n = (std::max(x0, x1) - x0) * channels;
    const float* top = image + h_start * row_floats + x0 * channels;
    for (int64_t i = 0; i < n; i += kWidth) {
      const int64_t count = std::min(kWidth, n - i);
      storeUpTo(reduceStrided(top + i, row_floats, h_end - h_start, count, op), columns + i, count);
    }
    body(ox0, ox1, x0);
  }
}

// Undilated windows, separably: the max over the window's rows of each input column the chunk's
// windows cover (contiguous columns of channels, one vector loop), then each output pixel's max
// over its window's columns. A 3x3 window costs 2 + 2 / stride maxima a channel vector, not 8,
// and reads each input row once per output row: ResNet's stem pooling (64 x 112 x 112, 3x3 stride
// 2) 110 -> 63 us, GoogLeNet's 13 max pools (the stride-1 3x3 branches of its Inception blocks)
// 720 -> 376 us, SqueezeNet's 3 207 -> 112 us (1 thread, AMD EPYC, Zen 5).
void maxPoolSeparable(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                      int64_t h_end, const WindowAxis& width, int64_t out_w, float* out_row) {
  constexpr int64_t kWidth = Vec::size();
  alignas(64) float columns[kColumnFloats];
  forEachColumnChunk(
      image, in_w, channels, h_start, h_end, width, out_w, nanMax, columns,
      [&](int64_t ox0, int64_t ox1, int64_t x0) {
        for (int64_t ox = ox0; ox < ox1; ++ox) {
          const int64_t w_start = std::max<int64_t>(0, ox * width.stride - width.pad);
          const int64_t w_end = std::min(in_w, ox * width.stride - width.pad + width.kernel);
          const float* first = columns + (w_start - x0) * channels;
          float* result = out_row + ox * channels;
          for (int64_t c = 0; c < channels; c += kWidth) {
            const int64_t count = std::min(kWidth, channels - c);
            storeUpTo(reduceStrided(first + c, channels, w_end - w_start, count, nanMax),
                      result + c, count);
          }
        }
      });
}

// Average pooling, separably as max pooling above: the column sums of a chunk of the row's
// input columns over the window's rows, then each output pixel's sum over its window's columns,
// divided as ATen divides (Inception's stride-1 3x3 average-pool branches, DenseNet's
// transitions).
void avgPoolChannelsLastRowLoop(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                                int64_t h_end, int64_t pool_h, const WindowAxis& width,
                                const AverageDivisor& divisor, int64_t out_w, float* out_row) {
  constexpr int64_t kWidth = Vec::size();
  alignas(64) float columns[kColumnFloats];
  forEachColumnChunk(
      image, in_w, channels, h_start, h_end, width, out_w, add, columns,
      [&](int64_t ox0, int64_t ox1, int64_t x0) {
        for (int64_t ox = ox0; ox < ox1; ++ox) {
          const int64_t w_first = ox * width.stride - width.pad;
          const int64_t w_last = std::min(w_first + width.kernel, in_w + width.pad); // exclusive
          const int64_t w_start = std::max<int64_t>(0, w_first);
          const int64_t w_end = std::min(in_w, w_last);
          const int64_t factor = divisor.override_divisor != 0 ? divisor.override_divisor
                                 : divisor.count_include_pad
                                     ? pool_h * (w_last - w_first)
                                     : (h_end - h_start) * (w_end - w_start);
          const Vec divide(static_cast<float>(factor));
          const float* first = columns + (w_start - x0) * channels;
          float* result = out_row + ox * channels;
          for (int64_t c = 0; c < channels; c += kWidth) {
            const int64_t count = std::min(kWidth, channels - c);
            storeUpTo(reduceStrided(first + c, channels, w_end - w_start, count, add) / divide,
                      result + c, count);
          }
        }
      });
}

void maxPoolChannelsLastRowLoop(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                                int64_t h_end, int64_t dilation_h, const WindowAxis& width,
                                int64_t out_w, float* out_row) {
  if (dilation_h == 1 && width.dilation == 1 && channels * width.kernel <= kColumnFloats) {
    maxPoolSeparable(image, in_w, channels, h_start, h_end, width, out_w, out_row);
  } else {
    maxPoolWindows(image, in_w, channels, h_start, h_end, dilation_h, width, out_w, out_row);
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::pooling
