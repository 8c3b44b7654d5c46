// What the Winograd loops (ops/conv/cpu/winograd_loops.cpp at stride 1,
// strided_winograd_loops.cpp at stride 2) share: the products, one transformed matrix's rows (a
// tile's transformed inputs, [rows][in_padded]) times its transformed weight
// ([out_blocks][in_padded][16]) into [out_blocks][rows][16]; and a 4x4 output tile's epilogue and
// store. AVX-512 only: a 16-channel block is one vector.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include <immintrin.h>

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/cpu/blocked_activation.h"
#include "ops/conv/winograd.h"
#include "ops/elementwise/cpu/partial_vectors.h"

#if defined(CPU_CAPABILITY_AVX512)

namespace srt::ops::winograd_tiles {
inline namespace CPU_CAPABILITY {

constexpr int64_t kBlock = 16;

// Rows [row, row + R) of a matrix's product with output blocks [ob, ob + NB) of its weight. Raw
// vectors, not Vectorized<float>: GCC kept an array of those on the stack, copied in and out around
// the loop, which with 16 input channels cost a third of the products' time.
template <int R, int NB>
inline void multiplyTile(const float* inputs, int64_t in_padded, int64_t in_channels,
                         const float* weight, float* products, int64_t rows) {
  __m512 acc[R][NB];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      acc[r][j] = _mm512_setzero_ps();
    }
  }
  const int64_t weight_block = in_padded * kBlock;
  for (int64_t c = 0; c < in_channels; ++c) {
    __m512 w[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      w[j] = _mm512_loadu_ps(weight + j * weight_block + c * kBlock);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(inputs[r * in_padded + c]);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) {
        acc[r][j] = _mm512_fmadd_ps(x, w[j], acc[r][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(products + (j * rows + r) * kBlock, acc[r][j]);
    }
  }
}

// Accumulator rows by output blocks: 6 x 4, 8 x 3, 12 x 2 and 12 x 1 of AVX-512's 32 registers,
// beside the weight's vectors and a broadcast.
constexpr int maxRows(int blocks) {
  return blocks == 4 ? 6 : blocks == 3 ? 8 : 12;
}

template <int NB, int... Rows>
inline void multiplyRows(int64_t count, const float* inputs, int64_t in_padded, int64_t in_channels,
                         const float* weight, float* products, int64_t rows,
                         std::integer_sequence<int, Rows...>) {
  // The one instantiation whose R is `count` (1 ... maxRows(NB)).
  ((count == Rows + 1
        ? multiplyTile<Rows + 1, NB>(inputs, in_padded, in_channels, weight, products, rows)
        : void()),
   ...);
}

template <int NB>
inline void multiplyBlocks(const float* inputs, int64_t in_padded, int64_t in_channels,
                           const float* weight, float* products, int64_t rows) {
  constexpr int kRows = maxRows(NB);
  const int64_t parts = (rows + kRows - 1) / kRows;
  for (int64_t part = 0; part < parts; ++part) {
    const int64_t begin = rows * part / parts;
    const int64_t end = rows * (part + 1) / parts;
    multiplyRows<NB>(end - begin, inputs + begin * in_padded, in_padded, in_channels, weight,
                     products + begin * kBlock, rows, std::make_integer_sequence<int, kRows>());
  }
}

// One matrix's products: `rows` transformed inputs ([rows][in_padded], the first in_channels of
// each read) times the weight ([out_blocks][in_padded][16]) into [out_blocks][rows][16].
inline void multiplyMatrix(const float* inputs, int64_t in_padded, int64_t in_channels,
                           const float* weight, int64_t out_blocks, float* products, int64_t rows) {
  const int64_t weight_block = in_padded * kBlock;
  for (int64_t ob = 0; ob < out_blocks; ob += 4) {
    const float* w = weight + ob * weight_block;
    float* out = products + ob * rows * kBlock;
    switch (std::min<int64_t>(4, out_blocks - ob)) {
    case 4:
      multiplyBlocks<4>(inputs, in_padded, in_channels, w, out, rows);
      break;
    case 3:
      multiplyBlocks<3>(inputs, in_padded, in_channels, w, out, rows);
      break;
    case 2:
      multiplyBlocks<2>(inputs, in_padded, in_channels, w, out, rows);
      break;
    default:
      multiplyBlocks<1>(inputs, in_padded, in_channels, w, out, rows);
      break;
    }
  }
}

// Lanes of a block that hold channels: all of a blocked tensor's (its padding lanes are finite),
// a channels-last one's up to its channel count.
inline __mmask16 laneMask(bool channels_last, int64_t channels, int64_t block) {
  const int64_t lanes = channels_last ? std::min(kBlock, channels - block * kBlock) : kBlock;
  return static_cast<__mmask16>((1u << lanes) - 1u);
}

// Output tile (th, tw)'s block ob, y[row][column] (4x4 outputs of an out_height x out_width
// image), plus bias and residual, activated and stored: the tile's rows and columns inside the
// image only; channels last, the last block's lanes past the channels neither read nor written.
inline void storeTile(const winograd::WinogradConv& conv, const __m512 (&y)[4][4], int64_t ob,
                      int64_t th, int64_t tw, int64_t out_height, int64_t out_width) {
  using Vec = at::vec::Vectorized<float>;
  constexpr int64_t kTile = 4;
  const int64_t block = ob * kBlock;
  const __m512 bias = conv.bias != nullptr && block < conv.out_channels
                          ? vec::loadUpTo(conv.bias + block, conv.out_channels - block)
                          : Vec(0.f);
  const int64_t pixel_stride = conv.channels_last ? conv.out_channels : kBlock;
  const int64_t first = conv.channels_last ? block : block * out_height * out_width;
  const __mmask16 mask = laneMask(conv.channels_last, conv.out_channels, ob);
  const pointwise::PointwiseActivation activation = conv.activation;
  const int rows_inside = static_cast<int>(std::min<int64_t>(kTile, out_height - th * kTile));
  const int columns_inside = static_cast<int>(std::min<int64_t>(kTile, out_width - tw * kTile));
  for (int i = 0; i < rows_inside; ++i) {
    const int64_t at = first + ((th * kTile + i) * out_width + tw * kTile) * pixel_stride;
    for (int j = 0; j < columns_inside; ++j) {
      Vec value = _mm512_add_ps(y[i][j], bias);
      if (conv.residual != nullptr) {
        value += Vec(_mm512_maskz_loadu_ps(mask, conv.residual + at + j * pixel_stride));
      }
      _mm512_mask_storeu_ps(conv.out + at + j * pixel_stride, mask,
                            pointwise::activate(value, activation));
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::winograd_tiles

#endif // CPU_CAPABILITY_AVX512
