// 3x3 convolutions of images with few input channels (a network's first layer, on RGB): our own
// loops, built for AVX-512 (one 16-channel output block a vector) and run on CPUs that have it.
//
// With 3 input channels there is nothing to block the input by: every output pixel's 16 channels
// are 27 multiply-adds of one input value broadcast against a vector of 16 weights.
// - Stride 2 (ops/conv/cpu/stem_conv_loops.cpp): direct. The loop keeps one output row's run of
//   14 pixels in registers and reads each weight vector once for the run. On one thread it is a
//   little faster than oneDNN's direct kernel for plain inputs (AMD EPYC, Zen 5, best of 6:
//   mobilenet_v2's 3 -> 32 126 against 134 us, mobilenet_v3_small's 3 -> 16 62 against 69).
// - Stride 1 (ops/conv/cpu/stem_winograd_loops.cpp): Winograd F(4, 3) along rows, 18 products of
//   a transformed input and weight per 4 pixels and input channel instead of 36. Against the
//   direct loop at stride 1 (same CPU, best of 4 alternating processes): the small CNN's 3 -> 16
//   at 64x64 16.5 against 18.1 us, 3 -> 32 at 224x224 403 against 475, 3 -> 64 at 224x224 796
//   against 991 (VGG's first layer); the direct loop had been level with oneDNN's (20.4 against
//   20.5 on the small CNN's).
// Split by output rows over the runtime's own workers, the loops spare the primitive per piece
// (ops/conv/onednn_conv_pieces.cpp): the small CNN at batch 1, 2 threads, OMP_WAIT_POLICY=PASSIVE
// ran 7-11% faster end to end in three interleaved pairs.
#pragma once

#include <cstdint>

#include "ops/conv/pointwise_blocked.h"

namespace srt::ops::stem_conv {

constexpr int64_t kKernel = 3;
constexpr int64_t kMaxInChannels = 4;
// Stride 1 runs Winograd F(4, 3) along rows: 4 output pixels from 6 transformed inputs.
constexpr int64_t kWinogradTile = 4;
constexpr int64_t kWinogradPoints = 6;

// Floats of a packed weight: the direct loop's [ceil(out / 16)][in][3][3][16], then at
// winogradWeightOffset the Winograd loop's, each kernel row transformed (G g):
// [ceil(out / 16)][in][3][6][16].
int64_t packedWeightFloats(int64_t in_channels, int64_t out_channels);
int64_t winogradWeightOffset(int64_t in_channels, int64_t out_channels);

// `weight`, a plain [out][in][3][3] float32 one, packed into `out` (packedWeightFloats of it;
// padding channels zero).
void packWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out);

// One image's convolution: src [in][height][width] (plain); out [ceil(out / 16)][out_height]
// [out_width][16] (channel-blocked) or, with channels_last_out, [out_height][out_width][out];
// out = activation(conv + bias), bias [out_channels] or nullptr. Blocked, the padding lanes of out
// come out the activation of zero.
struct StemConv {
  const float* src = nullptr;
  const float* weight = nullptr; // packWeight's
  const float* bias = nullptr;
  float* out = nullptr;
  bool channels_last_out = false;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t stride = 1;  // 1 or 2, both directions
  int64_t padding = 0; // 0 ... 2, both directions
  pointwise::PointwiseActivation activation;
};

// Whether the loop runs a 2-D, ungrouped, undilated 3x3 convolution of these arguments.
bool stemConvRuns(int64_t in_channels, int64_t stride, int64_t padding);

inline int64_t outputSize(const StemConv& conv, int64_t size) {
  return (size + 2 * conv.padding - kKernel) / conv.stride + 1;
}

// Output rows [first_row, last_row) of the image, every output channel.
void runStemConv(const StemConv& conv, int64_t first_row, int64_t last_row);

// Whether this CPU has AVX-512, the loop's one build; elsewhere oneDNN's kernel runs.
bool stemConvAvailable();

} // namespace srt::ops::stem_conv
