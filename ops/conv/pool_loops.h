// The vectorized inner loops of max and average pooling over channels-last images, built per CPU
// capability (ops/conv/cpu/pool_loops.cpp) and run on the widest the CPU has
// (vec::widestCapability()): a maximum is exact, so the results owe ATen's capability no bits; an
// average sums in another order than ATen's (along each row's window, then down), within rounding
// of it.
#pragma once

#include <cstdint>

namespace srt::ops::pooling {

// A window's extent along one image axis.
struct WindowAxis {
  int64_t kernel, stride, pad, dilation;
};

// Output rows [oy_begin, oy_end) of max pooling one channels-last image [in_h, in_w, channels]
// into `out` ([oy_end - oy_begin, out_w, channels]): out[oy][ox][c] = the maximum (NaN if any is
// NaN, as ATen's kernels) of image[y][x][c] over the window rows y of `height` and columns x of
// `width` (clipped to the image; every window holds at least one pixel, as ATen's output size
// ensures). Consecutive rows share their windows' rows: a band is cheaper than its rows alone.
void maxPoolChannelsLastRows(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
                             const WindowAxis& height, const WindowAxis& width, int64_t out_w,
                             int64_t oy_begin, int64_t oy_end, float* out);

// The ring of window-row reductions the loops keep per thread (48 KB: a 3-row window of 256
// channels and 16 output columns; of 16 channels, 256 columns), and the most window rows it
// takes.
constexpr int64_t kRingFloats = 12288;
constexpr int64_t kMaxRingRows = 16;

// Whether the ring takes windows of `height` over images of `channels`: at least one output
// column's window rows fit. (Max pooling falls back to a window loop beyond, average pooling to
// ATen's kernel.)
inline bool ringHolds(const WindowAxis& height, int64_t channels) {
  return height.kernel <= kMaxRingRows && height.kernel * channels <= kRingFloats;
}

// avg_pool2d's divisor for one window, as ATen's kernel computes it.
struct AverageDivisor {
  bool count_include_pad = true;
  int64_t override_divisor = 0; // divisor_override; 0: none
};

// Output rows [oy_begin, oy_end) of undilated average pooling of one channels-last image, as
// maxPoolChannelsLastRows (dilation 1): the sum of the window's pixels (clipped to the image)
// divided as ATen divides (`divisor`). Takes windows ringHolds takes only.
void avgPoolChannelsLastRows(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
                             const WindowAxis& height, const WindowAxis& width,
                             const AverageDivisor& divisor, int64_t out_w, int64_t oy_begin,
                             int64_t oy_end, float* out);

} // namespace srt::ops::pooling
