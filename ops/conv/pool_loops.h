// The vectorized inner loops of max and average pooling over channels-last images, built per CPU
// capability (ops/conv/cpu/pool_loops.cpp) and run on the widest the CPU has
// (vec::widestCapability()): a maximum is exact, so the results owe ATen's capability no bits; an
// average sums in another order than ATen's (columns, then across), within rounding of it.
#pragma once

#include <cstdint>

namespace srt::ops::pooling {

// Floats of column sums or maxima the separable loops keep (16 KB, in L1): they take rows whose
// channels x kernel width fit (the max-pool loop falls back to its window loop beyond; average
// pooling to ATen's kernel).
constexpr int64_t kMaxSeparableRowFloats = 4096;

// A window's extent along one image axis.
struct WindowAxis {
  int64_t kernel, stride, pad, dilation;
};

// One output row of max pooling: out_row[ox * channels + c] = the maximum (NaN if any is NaN, as
// ATen's kernels) of image[(y * in_w + x) * channels + c] over the window rows y in
// [h_start, h_end) step `dilation_h` (already clipped to the image) and the window columns of
// output column ox along `width`, clipped to [0, in_w).
void maxPoolChannelsLastRow(const float* image, int64_t in_w, int64_t channels, int64_t h_start,
                            int64_t h_end, int64_t dilation_h, const WindowAxis& width,
                            int64_t out_w, float* out_row);

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
