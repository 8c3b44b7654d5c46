// ops/conv/stem_conv.h's stride-1 loop: Winograd F(4, 3) along each row. Every output row is the
// sum over input channels and the kernel's 3 rows of 1-D convolutions of an input row with 3 taps,
// and F(4, 3) computes 4 outputs of such a convolution from 6 products instead of 12 (points 0,
// 1, -1, 2, -2 and infinity): per 4 output pixels and 16 output channels, 18 multiply-adds an
// input channel and a 10-operation output transform instead of 36 multiply-adds an input channel.
// Each input row is transformed once into a ring of the 3 rows the current output row reads, and
// shared by all its output blocks; rows are split into segments of at most kSegmentTiles tiles
// so that the ring lives on the stack (no scratch to plan).
// cmake/CpuKernels.cmake builds every ops/*/cpu/ file once per capability; this loop keeps a
// 16-channel block in one vector, so only the AVX-512 build defines it.
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
constexpr int64_t kTile = kWinogradTile;
constexpr int kPoints = static_cast<int>(kWinogradPoints);
// Tiles a vector of the input transform covers (one lane each).
constexpr int64_t kGroupTiles = 16;
constexpr int64_t kSegmentTiles = 64;
// Tiles whose 6 accumulators each stay in registers (24 of the 32).
constexpr int kRunTiles = 4;

// The transformed input rows one output row reads: [slot][channel][point][tile], input row r in
// slot r % 3.
struct Ring {
  alignas(64) float rows[kTaps][kMaxInChannels][kPoints][kSegmentTiles];
  int64_t slot_row[kTaps] = {-1, -1, -1};
};

// 16 of `in`'s floats from column `column` (a row of `width`), zero where outside the row. The
// masked lanes' addresses are not read, so the load may start before the row or run past it.
__m512 loadColumns(const float* in, int64_t column, int64_t width) {
  if (column >= 0 && column + kBlock <= width) {
    return _mm512_loadu_ps(in + column);
  }
  const int64_t first = std::clamp<int64_t>(-column, 0, kBlock);
  const int64_t last = std::clamp<int64_t>(width - column, first, kBlock);
  const auto lanes = static_cast<__mmask16>(((1u << last) - 1u) & ~((1u << first) - 1u));
  return _mm512_maskz_loadu_ps(lanes, in + column);
}

// B^T d of F(4, 3) for 16 tiles at once: tile t's 6 inputs are the row's columns column0 + 4t ...
// column0 + 4t + 5. Read straight from the row, not through a zero-padded copy: loads that
// straddle the copy's fresh stores wait for them (AMD EPYC, Zen 5: the small CNN's stem 21 us
// against 14 with the transform skipped).
void transformGroup(const float* in, int64_t column0, int64_t width, float* transformed) {
  // Lane t of a permute of two vectors picks element 4 (t % 8) of their 32: the low 8 tiles
  // from the first pair of vectors, the high 8 from the second.
  alignas(64) static constexpr int32_t kEveryFourth[16] = {0, 4, 8, 12, 16, 20, 24, 28,
                                                           0, 4, 8, 12, 16, 20, 24, 28};
  const __m512i every_fourth = _mm512_load_si512(kEveryFourth);
  __m512 v[kPoints];
#pragma GCC unroll 6
  for (int k = 0; k < kPoints; ++k) {
    const int64_t column = column0 + k;
    const __m512 low = _mm512_permutex2var_ps(loadColumns(in, column, width), every_fourth,
                                              loadColumns(in, column + kBlock, width));
    const __m512 high =
        _mm512_permutex2var_ps(loadColumns(in, column + 2 * kBlock, width), every_fourth,
                               loadColumns(in, column + 3 * kBlock, width));
    v[k] = _mm512_mask_mov_ps(low, 0xff00, high);
  }
  const __m512 four = _mm512_set1_ps(4.f);
  const __m512 five = _mm512_set1_ps(5.f);
  const __m512 two = _mm512_set1_ps(2.f);
  const __m512 v4_minus_v2 = _mm512_sub_ps(v[4], v[2]);
  const __m512 v1_minus_v3 = _mm512_sub_ps(v[1], v[3]);
  const __m512 d[kPoints] = {
      _mm512_fmadd_ps(four, v[0], _mm512_fnmadd_ps(five, v[2], v[4])),
      _mm512_fnmadd_ps(four, _mm512_add_ps(v[1], v[2]), _mm512_add_ps(v[3], v[4])),
      _mm512_fmadd_ps(four, _mm512_sub_ps(v[1], v[2]), _mm512_sub_ps(v[4], v[3])),
      _mm512_fnmadd_ps(two, v1_minus_v3, v4_minus_v2),
      _mm512_fmadd_ps(two, v1_minus_v3, v4_minus_v2),
      _mm512_fmadd_ps(four, v[1], _mm512_fnmadd_ps(five, v[3], v[5]))};
#pragma GCC unroll 6
  for (int p = 0; p < kPoints; ++p) {
    _mm512_storeu_ps(transformed + p * kSegmentTiles, d[p]);
  }
}

// Input row `row`'s tiles [0, tiles) of the segment from output column column0, every channel,
// transformed into `ring`'s slot for it.
void transformRow(const StemConv& conv, Ring& ring, int64_t row, int64_t column0, int64_t tiles) {
  const int64_t slot = row % kTaps;
  if (ring.slot_row[slot] == row) {
    return;
  }
  ring.slot_row[slot] = row;
  for (int64_t c = 0; c < conv.in_channels; ++c) {
    const float* in = conv.src + (c * conv.height + row) * conv.width;
    for (int64_t g = 0; g * kGroupTiles < tiles; ++g) {
      transformGroup(in, column0 - conv.padding + g * kGroupTiles * kTile, conv.width,
                     &ring.rows[slot][c][0][g * kGroupTiles]);
    }
  }
}

// One output row's block of output channels, what its tiles share.
struct RowBlock {
  const float* weight; // the block's Winograd part: [in][3][6][16]
  __m512 bias;
  float* out; // the segment's first pixel, the block's first channel
  int64_t pixel_stride;
  __mmask16 lanes;
  int64_t pixels;           // the segment's output pixels (its last tile may be partial)
  const float* rows[kTaps]; // tap row kh's transformed input row ([channel][point][tile]), or null
};

// Tiles [tile0, tile0 + kCount) of the row: the products in registers, then A^T m. `activation`
// by value: through a reference GCC reloads its floats after every store (blocked_activation.h).
template <int kChannels, int kCount>
void runTiles(const RowBlock& row, int64_t tile0, const pointwise::PointwiseActivation activation) {
  // Column 1 of A^T is all ones: the bias in product 1 reaches every output of the tile.
  __m512 acc[kCount][kPoints];
#pragma GCC unroll 4
  for (int t = 0; t < kCount; ++t) {
#pragma GCC unroll 6
    for (int p = 0; p < kPoints; ++p) {
      acc[t][p] = p == 1 ? row.bias : _mm512_setzero_ps();
    }
  }
#pragma GCC unroll 3
  for (int kh = 0; kh < kTaps; ++kh) {
    const float* rows = row.rows[kh];
    if (rows == nullptr) {
      continue;
    }
#pragma GCC unroll 4
    for (int c = 0; c < kChannels; ++c) {
      const float* d = rows + c * kPoints * kSegmentTiles + tile0;
      const float* w = row.weight + (c * kTaps + kh) * kPoints * kBlock;
#pragma GCC unroll 6
      for (int p = 0; p < kPoints; ++p) {
        const __m512 weight = _mm512_loadu_ps(w + p * kBlock);
#pragma GCC unroll 4
        for (int t = 0; t < kCount; ++t) {
          acc[t][p] = _mm512_fmadd_ps(_mm512_set1_ps(d[p * kSegmentTiles + t]), weight, acc[t][p]);
        }
      }
    }
  }
  const __m512 two = _mm512_set1_ps(2.f);
  const __m512 four = _mm512_set1_ps(4.f);
  const __m512 eight = _mm512_set1_ps(8.f);
#pragma GCC unroll 4
  for (int t = 0; t < kCount; ++t) {
    const __m512* m = acc[t];
    const __m512 sum12 = _mm512_add_ps(m[1], m[2]);
    const __m512 difference12 = _mm512_sub_ps(m[1], m[2]);
    const __m512 sum34 = _mm512_add_ps(m[3], m[4]);
    const __m512 difference34 = _mm512_sub_ps(m[3], m[4]);
    const Vec y[kTile] = {
        Vec(_mm512_add_ps(_mm512_add_ps(m[0], sum12), sum34)),
        Vec(_mm512_fmadd_ps(two, difference34, difference12)),
        Vec(_mm512_fmadd_ps(four, sum34, sum12)),
        Vec(_mm512_add_ps(_mm512_fmadd_ps(eight, difference34, difference12), m[5]))};
    const int64_t pixel0 = (tile0 + t) * kTile;
    float* out = row.out + pixel0 * row.pixel_stride;
    if (pixel0 + kTile <= row.pixels) {
#pragma GCC unroll 4
      for (int j = 0; j < kTile; ++j) {
        _mm512_mask_storeu_ps(out + j * row.pixel_stride, row.lanes,
                              pointwise::activate(y[j], activation));
      }
    } else {
      for (int64_t j = 0; j < row.pixels - pixel0; ++j) {
        _mm512_mask_storeu_ps(out + j * row.pixel_stride, row.lanes,
                              pointwise::activate(y[j], activation));
      }
    }
  }
}

// runTiles of `count` tiles (1 ... kRunTiles - 1), its one instantiation for that count.
template <int kChannels, int... kCounts>
void runTilesCount(int64_t count, const RowBlock& row, int64_t tile0,
                   const pointwise::PointwiseActivation& activation,
                   std::integer_sequence<int, kCounts...>) {
  ((count == kCounts + 1 ? runTiles<kChannels, kCounts + 1>(row, tile0, activation) : void()), ...);
}

template <int kChannels>
void runSegmentRow(const RowBlock& row, int64_t tiles,
                   const pointwise::PointwiseActivation& activation) {
  int64_t tile = 0;
  for (; tile + kRunTiles <= tiles; tile += kRunTiles) {
    runTiles<kChannels, kRunTiles>(row, tile, activation);
  }
  if (tile < tiles) {
    runTilesCount<kChannels>(tiles - tile, row, tile, activation,
                             std::make_integer_sequence<int, kRunTiles - 1>());
  }
}

} // namespace

void runStemWinogradLoop(const StemConv& conv, int64_t first_row, int64_t last_row) {
  const int64_t out_height = outputSize(conv, conv.height);
  const int64_t out_width = outputSize(conv, conv.width);
  const int64_t blocks = (conv.out_channels + kBlock - 1) / kBlock;
  const int64_t weight_block = conv.in_channels * kTaps * kPoints * kBlock;
  const float* weight = conv.weight + winogradWeightOffset(conv.in_channels, conv.out_channels);
  const pointwise::PointwiseActivation activation = conv.activation; // blocked_activation.h
  const int64_t pixel_stride = conv.channels_last_out ? conv.out_channels : kBlock;
  Ring ring;
  for (int64_t column0 = 0; column0 < out_width; column0 += kSegmentTiles * kTile) {
    const int64_t pixels = std::min(out_width - column0, kSegmentTiles * kTile);
    const int64_t tiles = (pixels + kTile - 1) / kTile;
    std::fill(std::begin(ring.slot_row), std::end(ring.slot_row), -1);
    RowBlock row;
    row.pixel_stride = pixel_stride;
    row.pixels = pixels;
    for (int64_t oh = first_row; oh < last_row; ++oh) {
      for (int kh = 0; kh < kTaps; ++kh) {
        const int64_t in_row = oh - conv.padding + kh;
        row.rows[kh] = nullptr;
        if (in_row >= 0 && in_row < conv.height) {
          transformRow(conv, ring, in_row, column0, tiles);
          row.rows[kh] = &ring.rows[in_row % kTaps][0][0][0];
        }
      }
      for (int64_t ob = 0; ob < blocks; ++ob) {
        const OutputBlock block = outputBlock(conv, ob);
        row.lanes = block.lanes;
        row.bias = block.bias;
        row.weight = weight + ob * weight_block;
        row.out = conv.out + (conv.channels_last_out
                                  ? (oh * out_width + column0) * conv.out_channels + ob * kBlock
                                  : ((ob * out_height + oh) * out_width + column0) * kBlock);
        withInChannels(conv.in_channels, [&](auto channels) {
          runSegmentRow<decltype(channels)::value>(row, tiles, activation);
        });
      }
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::stem_conv

#endif // CPU_CAPABILITY_AVX512
