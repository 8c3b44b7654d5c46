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

void maxPoolChannelsLastRowLoop(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                                int64_t h_end, int64_t dilation_h, const WindowAxis& width,
                                int64_t out_w, float* out_row) {
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

} // namespace CPU_CAPABILITY
} // namespace srt::ops::pooling
