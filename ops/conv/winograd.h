// Stride-1 3x3 convolutions (padding 1, ungrouped, undilated) of channel-blocked or channels-last
// images by Winograd's F(4x4, 3x3): our own loop, built for AVX-512 (ops/conv/cpu/
// winograd_loops.cpp, one 16-channel block a vector) and run on CPUs that have it.
//
// oneDNN's Winograd kernel computes as few products (36 per 4x4 output tile and channel pair
// instead of 144), but it is one primitive on OpenMP's threads: one image on 2 threads ran it at
// about one thread's speed where OMP_WAIT_POLICY=PASSIVE puts them to sleep between regions, and
// its slices by output channels each transform the whole input (ops/conv/onednn_conv_pieces.cpp).
// On one thread this loop also ran 32- and 64-channel layers in about two thirds of its time
// (AMD EPYC, Zen 5; winogradLoopRuns in ops/conv/onednn_conv.cpp has the figures and bounds).
//
// This loop splits an image into ranges of output tiles over the runtime's own workers instead
// (tiles, not rows of them: a 28x28 image has 7 rows of 7 tiles), each range with its
// own scratch, and fuses bias, residual and activation into its output transform.
//
// Per band of tiles (sized so that their transformed inputs and products stay in L2): every
// tile's 6x6 input window transformed (B^T d B) into row t of 36 matrices, each matrix times its
// transformed weight ([C, OC], G g G^T) as one GEMM, then each tile's 36 products transformed
// (A^T m A) into its 4x4 outputs.
#pragma once

#include <cstdint>

#include "ops/conv/pointwise_blocked.h"

namespace srt::ops::winograd {

constexpr int64_t kTile = 4;
// Transformed points of a tile: 6 x 6, one matrix each.
constexpr int64_t kMatrices = 36;

// Floats of a transformed weight: [kMatrices][ceil(out / 16)][in rounded up to 16][16].
int64_t transformedWeightFloats(int64_t in_channels, int64_t out_channels);

// The transformed weight of `weight`, a plain [out][in][3][3] float32 one, into `out`
// (transformedWeightFloats of it; padding channels zero).
void transformWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out);

// One image's convolution: src [ceil(in / 16)][height][width][16]; out [ceil(out / 16)][height]
// [width][16] = activation(conv + bias + residual), residual like out or nullptr, bias
// [out_channels] or nullptr. Padding lanes of src must be finite (they meet zero weights); those
// of out come out the activation of the residual's plus zero. With channels_last, src is
// [height][width][in], out and residual [height][width][out] instead.
struct WinogradConv {
  bool channels_last = false;
  const float* src = nullptr;
  const float* weight = nullptr; // transformWeight's
  const float* bias = nullptr;
  const float* residual = nullptr;
  float* out = nullptr;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  pointwise::PointwiseActivation activation;
};

// 4x4 output tiles of an image, row by row: the unit runWinograd splits by.
inline int64_t tiles(const WinogradConv& conv) {
  return (conv.height + kTile - 1) / kTile * ((conv.width + kTile - 1) / kTile);
}

// Floats of scratch one call of runWinograd uses (per concurrent call).
int64_t scratchFloats(const WinogradConv& conv);

// Output tiles [first_tile, last_tile) of the image, every output channel.
void runWinograd(const WinogradConv& conv, float* scratch, int64_t first_tile, int64_t last_tile);

// Whether this CPU has AVX-512, the loop's one build; elsewhere oneDNN's kernel runs.
bool winogradAvailable();

} // namespace srt::ops::winograd
