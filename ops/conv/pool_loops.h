// The vectorized inner loop of max pooling over channels-last images, built per CPU capability
// (ops/conv/cpu/pool_loops.cpp) and run on the widest the CPU has (vec::widestCapability()): a
// maximum is exact, so the results owe ATen's capability no bits.
#pragma once

#include <cstdint>

namespace srt::ops::pooling {

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

} // namespace srt::ops::pooling
