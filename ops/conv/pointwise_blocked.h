// 1x1 convolutions of channel-blocked images of few pixels (14x14 and smaller), our own loop in
// place of oneDNN's jit_1x1 kernel, built for AVX-512 (ops/conv/cpu/pointwise_blocked_loops.cpp:
// one 16-channel block a vector) and run on CPUs that have it. On images of 7x7
// and fewer pixels jit_1x1 blocks its pixels poorly: the expanding 1x1 convolutions at the ends of
// mobile networks ran 13-20% slower in it than in this loop (mobilenet_v2's 320 -> 1280 at 7x7: 300
// vs 252 us, 160 -> 960: 107 vs 86; efficientnet_b0's 192 -> 1152: 144 vs 124; mobilenet_v3_small's
// 96 -> 576: 39 vs 32; on an Intel Xeon with AVX-512, 1 thread), the reducing ones level; from 8x8
// up jit_1x1 was as fast or faster there. Since the loop prefetches each group of output blocks'
// weight while the previous group multiplies (in a model the weight comes from memory:
// mobilenet_v2 at 1 thread on an AMD EPYC, Zen 5, its 320 -> 1280 213 -> 174 us, the whole
// network 4.6% faster), it also beats jit_1x1 at 14x14 on one thread (kMaxPixels).
//
// The output block ob (16 channels) of pixel p is bias[ob] + the sum over input channels c of
// src[c / 16][p][c % 16] * weight[ob][c][...16]: in the layouts oneDNN packs blocked 1x1 weights
// in, ABcd16b16a ([ceil(OC/16)][ceil(C/16)][16 inputs][16 outputs]) and, for fewer than 16 input
// channels, Abcd16a ([ceil(OC/16)][C][16 outputs]), each output block's weight is one [C (padded
// or not), 16] matrix, read in place.
#pragma once

#include <cstdint>
#include <limits>

namespace srt::ops::pointwise {

// Pixels up to which the loop runs instead of oneDNN's on one thread: 14x14 (mobilenet_v2 1.8-2.8%
// and mobilenet_v3_small 2.7-4.3% faster at batch 1 against 7x7, efficientnet_b0 and batch 8
// level; AMD EPYC, Zen 5, interleaved in one process), and split over threads: 7x7 (14x14 images
// split so ran mobilenet_v3_small 4-6% slower than oneDNN's pieces).
constexpr int64_t kMaxPixels = 196;
constexpr int64_t kMaxSplitPixels = 49;
// Output blocks the loop computes together (a tile's accumulators span them): ranges of output
// blocks split over threads in multiples of it keep every tile whole.
constexpr int64_t kOutputBlocks = 3;

// The activation applied in registers to y = conv + bias + residual:
// clamp(y + shift, lo, hi) * scale, times y where times_input. Identity, relu, the clamps
// (ReLU6), hardsigmoid (shift 3, [0, 6], scale 1/6: ATen's formula) and hardswish (the same times
// y).
struct PointwiseActivation {
  float shift = 0.f;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  float scale = 1.f;
  bool times_input = false;
};

// One image's blocked 1x1 convolution: src [ceil(in_channels / 16)][pixels][16], weight as above
// (output block ob's rows at weight + ob * weight_block_stride, padding zero), bias
// [out_channels] or nullptr, residual like out or nullptr; out [ceil(out_channels / 16)][pixels]
// [16] = activation(conv + bias + residual) for the output blocks [first_block, last_block).
// Padding lanes of out come out the activation of the residual's plus zero (finite).
struct BlockedPointwiseConv {
  const float* src = nullptr;
  const float* weight = nullptr;
  int64_t weight_block_stride = 0; // floats
  const float* bias = nullptr;
  const float* residual = nullptr;
  float* out = nullptr;
  int64_t pixels = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  PointwiseActivation activation;
};

void runBlockedPointwise(const BlockedPointwiseConv& conv, int64_t first_block, int64_t last_block);

// Whether this CPU has AVX-512, the loop's one build; elsewhere oneDNN's kernel runs.
bool blockedPointwiseAvailable();

} // namespace srt::ops::pointwise
