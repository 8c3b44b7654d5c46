// Stride-2 3x3 convolutions (padding 1, ungrouped, undilated) of channel-blocked images with
// fewer multiplications: our own loop, built for AVX-512 (ops/conv/cpu/strided_winograd_loops.cpp,
// one 16-channel block a vector) and run on CPUs that have it.
//
// Such a convolution is at a core's FMA rate in oneDNN's direct kernels, and oneDNN's Winograd
// takes stride 1 only. Split by the parity of its rows and columns (polyphase), the input is four
// quarter images and the 3x3 kernel four smaller ones that each slide over one of them at stride
// 1: 2x2 taps over the odd rows and odd columns, 2x1 and 1x2 over the mixed ones, 1x1 over the even
// ones. Winograd's F(4, 2) (4 outputs of a 2-tap filter from 5 products instead of 8, points 0, 1,
// -1, 2 and infinity) along each 2-tap direction leaves 25 + 20 + 20 + 16 = 81 products per 4x4
// output tile and channel pair instead of 144 (0.56). Each of the 36 distinct transformed
// kernels (25 + 5 + 5 + 1: along a direct direction every position shares one) is a [C, OC]
// matrix that multiplies the tiles' transformed inputs as one GEMM.
//
// Tiles are 4x4 outputs; a range of tile rows runs in bands whose transformed inputs and products
// stay in L2, the band's transforms and products written to the caller's scratch.
#pragma once

#include <cstdint>

#include "ops/conv/winograd.h"

namespace srt::ops::strided_winograd {

constexpr int64_t kTile = 4;
// Distinct transformed kernels: 25 of the 2x2 taps (odd rows, odd columns), 5 of the 2x1, 5 of
// the 1x2, the centre tap.
constexpr int64_t kMatrices = 36;

// Floats of a transformed weight: [kMatrices][ceil(out / 16)][in rounded up to 16][16].
int64_t transformedWeightFloats(int64_t in_channels, int64_t out_channels);

// The transformed weight of `weight`, a plain [out][in][3][3] float32 one, into `out`
// (transformedWeightFloats of it; padding channels zero).
void transformWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out);

// One image's convolution, described as the stride-1 loop's (ops/conv/winograd.h), but for its
// output: out and residual [ceil(out / 16)][out_height][out_width][16] (outputSize), or with
// channels_last [out_height][out_width][out]; weight transformWeight's.
using StridedWinogradConv = winograd::WinogradConv;

// A stride-2, padding-1 3x3 convolution's output size for an input size.
inline int64_t outputSize(int64_t size) {
  return (size - 1) / 2 + 1;
}

// Rows of 4x4 output tiles of an image, the unit runStridedWinograd splits by.
inline int64_t tileRows(const StridedWinogradConv& conv) {
  return (outputSize(conv.height) + kTile - 1) / kTile;
}

// Floats of scratch one call of runStridedWinograd uses (per concurrent call).
int64_t scratchFloats(const StridedWinogradConv& conv);

// Output tile rows [first_tile_row, last_tile_row) of the image, every output channel.
void runStridedWinograd(const StridedWinogradConv& conv, float* scratch, int64_t first_tile_row,
                        int64_t last_tile_row);

// Whether this CPU has AVX-512, the loop's one build; elsewhere oneDNN's kernel runs.
bool stridedWinogradAvailable();

} // namespace srt::ops::strided_winograd
