// ops/conv/stem_conv.h's stride-2 loop (stride 1 runs stem_winograd_loops.cpp's): per output row
// and output block, runs of pixels whose every tap is inside the image's columns in registers, the
// few pixels at the row's ends one at a time.
// cmake/CpuKernels.cmake builds every ops/*/cpu/ file once per capability; this loop keeps a
// 16-channel block in one vector, so only the AVX-512 build defines it (ops/conv/stem_conv.cpp
// calls it on AVX-512 CPUs only).
#include <algorithm>
#include <utility>

#include <immintrin.h>

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/cpu/blocked_activation.h"
#include "ops/conv/cpu/stem_conv_dispatch.h"
#include "ops/conv/stem_conv.h"

#if defined(CPU_CAPABILITY_AVX512)

// GCC 12 flags the _mm512_undefined_ps inside _mm512_max_ps once inlined into these loops (as
// cmake/CpuKernels.cmake says of ATen's headers).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace srt::ops::stem_conv {
inline namespace CPU_CAPABILITY {

namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kBlock = 16;
constexpr int kTaps = static_cast<int>(kKernel);
constexpr int kStride = 2;

// One output row's block of output channels, what every pixel of it shares.
struct RowBlock {
  const StemConv* conv;
  const float* weight; // the block's [in][3][3][16]
  __m512 bias;
  float* out; // the row's first pixel, the block's first channel
  int64_t pixel_stride;
  __mmask16 lanes; // the block's channels (channels last: up to out_channels)
  int64_t in_row0; // input row of tap row 0 (may be outside the image)
  int kh_first;    // tap rows inside the image: [kh_first, kh_last)
  int kh_last;
};

// kPixels output pixels from ow0 whose taps all fall inside the image's columns. Raw vectors, not
// Vectorized<float>, so that GCC keeps the accumulators in registers (as strided_winograd_loops.cpp
// found).
template <int kChannels, int kPixels> void runInside(const RowBlock& row, int64_t ow0) {
  const StemConv& conv = *row.conv;
  __m512 acc[kPixels];
#pragma GCC unroll 16
  for (int j = 0; j < kPixels; ++j) {
    acc[j] = row.bias;
  }
  const int64_t column0 = ow0 * kStride - conv.padding;
#pragma GCC unroll 4
  for (int c = 0; c < kChannels; ++c) {
#pragma GCC unroll 3
    for (int kh = 0; kh < kTaps; ++kh) {
      if (kh < row.kh_first || kh >= row.kh_last) {
        continue;
      }
      const float* in = conv.src + (c * conv.height + row.in_row0 + kh) * conv.width + column0;
      const float* w = row.weight + (c * kTaps + kh) * kTaps * kBlock;
#pragma GCC unroll 3
      for (int kw = 0; kw < kTaps; ++kw) {
        const __m512 weight = _mm512_loadu_ps(w + kw * kBlock);
#pragma GCC unroll 16
        for (int j = 0; j < kPixels; ++j) {
          acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(in[j * kStride + kw]), weight, acc[j]);
        }
      }
    }
  }
  const pointwise::PointwiseActivation activation = conv.activation; // blocked_activation.h
#pragma GCC unroll 16
  for (int j = 0; j < kPixels; ++j) {
    _mm512_mask_storeu_ps(row.out + (ow0 + j) * row.pixel_stride, row.lanes,
                          pointwise::activate(Vec(acc[j]), activation));
  }
}

// One output pixel whose taps may fall outside the image's columns (those read zero padding). One
// accumulator per tap column: a single one chained all 27 multiply-adds, waited on at both ends of
// every row (the small CNN's stem 19.0 us against 19.5-20.4 so, standalone).
template <int kChannels> void runEdge(const RowBlock& row, int64_t ow) {
  const StemConv& conv = *row.conv;
  const int64_t column0 = ow * kStride - conv.padding;
  const int kw_first = static_cast<int>(std::clamp<int64_t>(-column0, 0, kTaps));
  const int kw_last = static_cast<int>(std::clamp<int64_t>(conv.width - column0, 0, kTaps));
  __m512 acc[kTaps] = {row.bias, _mm512_setzero_ps(), _mm512_setzero_ps()};
#pragma GCC unroll 4
  for (int c = 0; c < kChannels; ++c) {
    for (int kh = row.kh_first; kh < row.kh_last; ++kh) {
      const float* in = conv.src + (c * conv.height + row.in_row0 + kh) * conv.width + column0;
      const float* w = row.weight + (c * kTaps + kh) * kTaps * kBlock;
#pragma GCC unroll 3
      for (int kw = 0; kw < kTaps; ++kw) {
        if (kw >= kw_first && kw < kw_last) {
          acc[kw] =
              _mm512_fmadd_ps(_mm512_set1_ps(in[kw]), _mm512_loadu_ps(w + kw * kBlock), acc[kw]);
        }
      }
    }
  }
  const pointwise::PointwiseActivation activation = conv.activation; // blocked_activation.h
  _mm512_mask_storeu_ps(
      row.out + ow * row.pixel_stride, row.lanes,
      pointwise::activate(Vec(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2])), activation));
}

// runInside of `count` pixels (1 ... kRun), its one instantiation for that count.
template <int kChannels, int... kCounts>
void runInsideCount(int64_t count, const RowBlock& row, int64_t ow0,
                    std::integer_sequence<int, kCounts...>) {
  ((count == kCounts + 1 ? runInside<kChannels, kCounts + 1>(row, ow0) : void()), ...);
}

// A row of one output block: runs of kRun pixels (14 accumulators, which measured faster than
// 16), the inside's remainder, the edges.
template <int kChannels> void runRow(const RowBlock& row, int64_t out_width) {
  constexpr int kRun = 14;
  const StemConv& conv = *row.conv;
  // Pixels whose taps are all inside the columns: [inside_first, inside_last).
  const int64_t inside_first = std::min(out_width, (conv.padding + kStride - 1) / kStride);
  const int64_t inside_last =
      conv.width + conv.padding < kTaps
          ? inside_first
          : std::clamp<int64_t>((conv.width + conv.padding - kTaps) / kStride + 1, inside_first,
                                out_width);
  for (int64_t ow = 0; ow < inside_first; ++ow) {
    runEdge<kChannels>(row, ow);
  }
  int64_t ow = inside_first;
  for (; ow + kRun <= inside_last; ow += kRun) {
    runInside<kChannels, kRun>(row, ow);
  }
  if (ow < inside_last) {
    runInsideCount<kChannels>(inside_last - ow, row, ow, std::make_integer_sequence<int, kRun>());
  }
  for (ow = inside_last; ow < out_width; ++ow) {
    runEdge<kChannels>(row, ow);
  }
}

} // namespace

void runStemConvLoop(const StemConv& conv, int64_t first_row, int64_t last_row) {
  const int64_t out_height = outputSize(conv, conv.height);
  const int64_t out_width = outputSize(conv, conv.width);
  const int64_t blocks = (conv.out_channels + kBlock - 1) / kBlock;
  const int64_t weight_block = conv.in_channels * kTaps * kTaps * kBlock;
  RowBlock row;
  row.conv = &conv;
  row.pixel_stride = conv.channels_last_out ? conv.out_channels : kBlock;
  // Rows outside, blocks inside: the input rows of an output row stay in L1 for all its blocks
  // (blocks outside read a 224x224 image once per block, from beyond L2 behind the output's
  // planes: mobilenet_v2's stem 2% slower than oneDNN's end to end, though faster alone).
  for (int64_t oh = first_row; oh < last_row; ++oh) {
    row.in_row0 = oh * kStride - conv.padding;
    row.kh_first = static_cast<int>(std::clamp<int64_t>(-row.in_row0, 0, kTaps));
    row.kh_last = static_cast<int>(std::clamp<int64_t>(conv.height - row.in_row0, 0, kTaps));
    for (int64_t ob = 0; ob < blocks; ++ob) {
      const OutputBlock block = outputBlock(conv, ob);
      row.lanes = block.lanes;
      row.bias = block.bias;
      row.weight = conv.weight + ob * weight_block;
      row.out =
          conv.out + (conv.channels_last_out ? oh * out_width * conv.out_channels + ob * kBlock
                                             : (ob * out_height + oh) * out_width * kBlock);
      withInChannels(conv.in_channels,
                     [&](auto channels) { runRow<decltype(channels)::value>(row, out_width); });
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::stem_conv

#endif // CPU_CAPABILITY_AVX512
