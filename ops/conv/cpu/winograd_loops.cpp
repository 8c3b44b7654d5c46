// ops/conv/winograd.h's loop: per band of tile rows, the input transform, 36 GEMMs, the output
// transform with the epilogue. cmake/CpuKernels.cmake builds every ops/*/cpu/ file once per
// capability; this loop keeps a 16-channel block in one vector, so only the AVX-512 build defines
// it (ops/conv/winograd.cpp calls it on AVX-512 CPUs only).
#include <algorithm>

#include <immintrin.h>

#include "ops/conv/cpu/winograd_tiles.h"
#include "ops/conv/winograd.h"

#if defined(CPU_CAPABILITY_AVX512)

// GCC 12 flags the _mm512_undefined_ps inside _mm512_max_ps once inlined into these loops (as
// cmake/CpuKernels.cmake says of ATen's headers).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace srt::ops::winograd {
inline namespace CPU_CAPABILITY {

namespace {

constexpr int64_t kBlock = 16;
constexpr int kPoints = 6;

int64_t roundUp(int64_t value) {
  return (value + kBlock - 1) / kBlock * kBlock;
}

// B^T of F(4, 3) (points 0, 1, -1, 2, -2, infinity): 6 inputs along a direction, 6 transformed.
inline void transformInput(const __m512 (&d)[kPoints], __m512 (&v)[kPoints]) {
  const __m512 four = _mm512_set1_ps(4.f);
  const __m512 minus_five = _mm512_set1_ps(-5.f);
  const __m512 two = _mm512_set1_ps(2.f);
  // v1, v2 = (d4 - 4 d2) +- (d3 - 4 d1); v3, v4 = (d4 - d2) +- 2 (d3 - d1).
  const __m512 a = _mm512_fnmadd_ps(four, d[2], d[4]);
  const __m512 b = _mm512_fnmadd_ps(four, d[1], d[3]);
  const __m512 c = _mm512_sub_ps(d[4], d[2]);
  const __m512 e = _mm512_mul_ps(two, _mm512_sub_ps(d[3], d[1]));
  v[0] = _mm512_fmadd_ps(four, d[0], _mm512_fmadd_ps(minus_five, d[2], d[4]));
  v[1] = _mm512_add_ps(a, b);
  v[2] = _mm512_sub_ps(a, b);
  v[3] = _mm512_add_ps(c, e);
  v[4] = _mm512_sub_ps(c, e);
  v[5] = _mm512_fmadd_ps(four, d[1], _mm512_fmadd_ps(minus_five, d[3], d[5]));
}

// A^T of F(4, 3): 6 products in, 4 outputs.
inline void transformOutput(const __m512 (&m)[kPoints], __m512 (&y)[kTile]) {
  const __m512 sum12 = _mm512_add_ps(m[1], m[2]);
  const __m512 difference12 = _mm512_sub_ps(m[1], m[2]);
  const __m512 sum34 = _mm512_add_ps(m[3], m[4]);
  const __m512 difference34 = _mm512_sub_ps(m[3], m[4]);
  y[0] = _mm512_add_ps(_mm512_add_ps(m[0], sum12), sum34);
  y[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.f), difference34, difference12);
  y[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.f), sum34, sum12);
  y[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.f), difference34, difference12), m[5]);
}

struct Band {
  const WinogradConv* conv;
  int64_t tiles_per_row;
  int64_t first_tile; // of the image's, row by row
  int64_t tiles;
  int64_t in_padded; // input channels rounded up to 16: a transformed row's floats
  int64_t out_blocks;
  float* inputs;   // matrix g: [tiles][in_padded] at inputs + g * tiles * in_padded
  float* products; // matrix g: [out_blocks][tiles][16] at products + g * tiles * out_blocks * 16
};

// Tile t's transformed inputs, input block cb, into row t of the 36 matrices; kInside: its whole
// 6x6 window is inside the image (no bounds to check).
template <bool kInside> void transformTile(const Band& band, int64_t t, int64_t cb) {
  const WinogradConv& conv = *band.conv;
  const int64_t th = (band.first_tile + t) / band.tiles_per_row;
  const int64_t tw = (band.first_tile + t) % band.tiles_per_row;
  // The window from row 4 th - 1, column 4 tw - 1 (padding 1); outside the image zeros.
  const int64_t row0 = th * kTile - 1;
  const int64_t column0 = tw * kTile - 1;
  const int64_t pixel_stride = conv.channels_last ? conv.in_channels : kBlock;
  const int64_t row_stride = conv.width * pixel_stride;
  const float* window = conv.src +
                        cb * (conv.channels_last ? kBlock : conv.height * conv.width * kBlock) +
                        row0 * row_stride + column0 * pixel_stride;
  const __mmask16 mask = winograd_tiles::laneMask(conv.channels_last, conv.in_channels, cb);
  auto load = [&](int u, int v) {
    if (!kInside &&
        (row0 + u < 0 || row0 + u >= conv.height || column0 + v < 0 || column0 + v >= conv.width)) {
      return _mm512_setzero_ps();
    }
    return _mm512_maskz_loadu_ps(mask, window + u * row_stride + v * pixel_stride);
  };
  // Along each row first ([row u][transformed column b]), then down each transformed column.
  __m512 along_rows[kPoints][kPoints];
#pragma GCC unroll 6
  for (int u = 0; u < kPoints; ++u) {
    const __m512 d[kPoints] = {load(u, 0), load(u, 1), load(u, 2),
                               load(u, 3), load(u, 4), load(u, 5)};
    transformInput(d, along_rows[u]);
  }
  const int64_t matrix = band.tiles * band.in_padded;
  float* row = band.inputs + t * band.in_padded + cb * kBlock;
#pragma GCC unroll 6
  for (int b = 0; b < kPoints; ++b) {
    const __m512 d[kPoints] = {along_rows[0][b], along_rows[1][b], along_rows[2][b],
                               along_rows[3][b], along_rows[4][b], along_rows[5][b]};
    __m512 v[kPoints];
    transformInput(d, v);
#pragma GCC unroll 6
    for (int a = 0; a < kPoints; ++a) {
      _mm512_storeu_ps(row + (a * kPoints + b) * matrix, v[a]);
    }
  }
}

// Tile t's outputs of output block ob from the band's products, with the epilogue.
void finishTile(const Band& band, int64_t t, int64_t ob) {
  const WinogradConv& conv = *band.conv;
  const int64_t matrix = band.tiles * band.out_blocks * kBlock;
  const float* products = band.products + (ob * band.tiles + t) * kBlock;
  // Along each row of products first ([point row a][output column j]), then down the columns.
  __m512 along_rows[kPoints][kTile];
#pragma GCC unroll 6
  for (int a = 0; a < kPoints; ++a) {
    __m512 m[kPoints];
#pragma GCC unroll 6
    for (int b = 0; b < kPoints; ++b) {
      m[b] = _mm512_loadu_ps(products + (a * kPoints + b) * matrix);
    }
    transformOutput(m, along_rows[a]);
  }
  __m512 y[kTile][kTile]; // [output row i][output column j]
#pragma GCC unroll 4
  for (int j = 0; j < kTile; ++j) {
    const __m512 m[kPoints] = {along_rows[0][j], along_rows[1][j], along_rows[2][j],
                               along_rows[3][j], along_rows[4][j], along_rows[5][j]};
    __m512 column[kTile];
    transformOutput(m, column);
#pragma GCC unroll 4
    for (int i = 0; i < kTile; ++i) {
      y[i][j] = column[i];
    }
  }
  winograd_tiles::storeTile(conv, y, ob, (band.first_tile + t) / band.tiles_per_row,
                            (band.first_tile + t) % band.tiles_per_row, conv.height, conv.width);
}

} // namespace

void runWinogradLoop(const WinogradConv& conv, float* scratch, int64_t first_tile,
                     int64_t last_tile, int64_t band_tiles) {
  Band band;
  band.conv = &conv;
  band.tiles_per_row = (conv.width + kTile - 1) / kTile;
  band.in_padded = roundUp(conv.in_channels);
  band.out_blocks = roundUp(conv.out_channels) / kBlock;
  const int64_t in_blocks = band.in_padded / kBlock;
  const int64_t weight_matrix = band.out_blocks * band.in_padded * kBlock;
  // Bands of near-equal tiles, at most band_tiles: a last band of few tiles would leave the GEMMs
  // short rows.
  const int64_t tiles = last_tile - first_tile;
  const int64_t bands = (tiles + band_tiles - 1) / band_tiles;
  for (int64_t k = 0; k < bands; ++k) {
    band.first_tile = first_tile + tiles * k / bands;
    band.tiles = first_tile + tiles * (k + 1) / bands - band.first_tile;
    band.inputs = scratch;
    band.products = scratch + kMatrices * band.tiles * band.in_padded;
    for (int64_t t = 0; t < band.tiles; ++t) {
      const int64_t th = (band.first_tile + t) / band.tiles_per_row;
      const int64_t tw = (band.first_tile + t) % band.tiles_per_row;
      const bool inside = th > 0 && tw > 0 && th * kTile + kTile + 1 <= conv.height &&
                          tw * kTile + kTile + 1 <= conv.width;
      for (int64_t cb = 0; cb < in_blocks; ++cb) {
        if (inside) {
          transformTile<true>(band, t, cb);
        } else {
          transformTile<false>(band, t, cb);
        }
      }
    }
    for (int64_t g = 0; g < kMatrices; ++g) {
      winograd_tiles::multiplyMatrix(
          band.inputs + g * band.tiles * band.in_padded, band.in_padded, conv.in_channels,
          conv.weight + g * weight_matrix, band.out_blocks,
          band.products + g * band.tiles * band.out_blocks * kBlock, band.tiles);
    }
    for (int64_t ob = 0; ob < band.out_blocks; ++ob) {
      for (int64_t t = 0; t < band.tiles; ++t) {
        finishTile(band, t, ob);
      }
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::winograd

#endif // CPU_CAPABILITY_AVX512
