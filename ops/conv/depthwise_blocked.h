// Depthwise convolutions of channel-blocked images whose output rows are 14 pixels or fewer, our
// own loop in place of oneDNN's jit_dw kernel, built for AVX-512 (ops/conv/cpu/
// depthwise_blocked_loops.cpp). With the row width a compile-time constant, an output row's
// accumulators stay in registers and the taps that fall into the padding are dropped at compile
// time; jit_dw took 1.3-2x as long on the small images at the ends of mobile networks (1 thread,
// Intel Xeon with AVX-512: 960 channels 3x3 at 7x7 11.5 against 5.8 us, 1152 5x5 at 7x7 25.2
// against 13.4, 576 3x3 at 14x14 26.0 against 15.6, 672 5x5 at 14x14 65.9 against 50.6, 576 3x3
// stride 2 from 14x14 8.1 against 4.9); at 28 pixels a row its accumulators spill and jit_dw is
// faster.
//
// The weight is oneDNN's Abcde16a packing of [C, 1, 1, K, K]: [ceil(C/16)][K][K][16], read in
// place; padding K/2 on every side (PyTorch's "same" for odd K).
#pragma once

#include <cstdint>

#include "ops/conv/pointwise_blocked.h"

namespace srt::ops::depthwise {

// Output row widths up to which the loop runs.
constexpr int64_t kMaxOutputWidth = 14;

// One image: src [ceil(channels / 16)][height][width][16], out [ceil(channels / 16)][out_height]
// [out_width][16] = activation(conv + bias) for the channel blocks [first_block, last_block);
// bias [channels] or nullptr.
struct BlockedDepthwiseConv {
  const float* src = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t kernel = 0; // 3 or 5
  int64_t stride = 0; // 1 or 2
  pointwise::PointwiseActivation activation;
};

// Whether the loop has a build for this kernel, stride and input width on this CPU (AVX-512).
bool blockedDepthwiseRuns(int64_t kernel, int64_t stride, int64_t width);

void runBlockedDepthwise(const BlockedDepthwiseConv& conv, int64_t first_block, int64_t last_block);

} // namespace srt::ops::depthwise
