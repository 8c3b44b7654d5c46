// The vectorized inner loops of max and average pooling over channels-last images, built per CPU
// capability (ops/conv/cpu/pool_loops.cpp) and run on the widest the CPU has
// (vec::widestCapability()): a maximum is exact, so the results owe ATen's capability no bits; an
// average sums in another order than ATen's (columns, then across), within rounding of it.
#pragma once

#include <cstdint>

namespace srt::ops::pooling {

// Floats of column sums the separable average-pooling loop keeps (16 KB, in L1): it takes rows
// whose channels x kernel width fit (average pooling falls back to ATen's kernel beyond).
constexpr int64_t kMaxSeparableRowFloats = 4096;

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

// avg_pool2d's divisor for one window, as ATen's kernel computes it.
struct AverageDivisor {
  bool count_include_pad = true;
  int64_t override_divisor = 0; // divisor_override; 0: none
};

// One output row of undilated average pooling: out_row[ox * channels + c] = the sum of
// image[(y * in_w + x) * channels + c] over the window rows [h_start, h_end) (already clipped to
// the image; pool_h rows counting the padding) and the window columns of output column ox along
// `width` (dilation 1), clipped to [0, in_w), divided as ATen divides (`divisor`).
void avgPoolChannelsLastRow(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                            int64_t h_end, int64_t pool_h, const WindowAxis& width,
                            const AverageDivisor& divisor, int64_t out_w, float* out_row);

} // namespace srt::ops::pooling
