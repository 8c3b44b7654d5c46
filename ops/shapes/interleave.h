// Planes to pixels: an NCHW float32 image with few channels (an RGB input entering a CNN) copied
// channels last, each pixel's channels interleaved from the planes. Built per CPU capability
// (ops/shapes/cpu/interleave_loops.cpp) and run on the widest the CPU has: a copy is exact, so
// it owes ATen's capability no bits.
#pragma once

#include <cstdint>

namespace srt::ops {

// pixels[p * channels + c] = planes[c * plane + p] for the pixels p in [begin, end) of one image
// of `plane` pixels; channels 2, 3 or 4.
void interleavePlanes(const float* planes, float* pixels, int64_t channels, int64_t plane,
                      int64_t begin, int64_t end);

} // namespace srt::ops
