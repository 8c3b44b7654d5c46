// ops/conv/strided_winograd.h's loop: per band of tile rows, the input transform, 36 GEMMs, the
// output transform with the epilogue. cmake/CpuKernels.cmake builds every ops/*/cpu/ file once per
// capability; this loop keeps a 16-channel block in one vector, so only the AVX-512 build defines
// it (ops/conv/strided_winograd.cpp calls it on AVX-512 CPUs only).
#include <algorithm>
#include <utility>

#include <immintrin.h>

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/cpu/blocked_activation.h"
#include "ops/conv/cpu/winograd_tiles.h"
#include "ops/conv/strided_winograd.h"
#include "ops/elementwise/cpu/partial_vectors.h"

#if defined(CPU_CAPABILITY_AVX512)

// GCC 12 flags the _mm512_undefined_ps inside _mm512_max_ps once inlined into these loops (as
// cmake/CpuKernels.cmake says of ATen's headers).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace srt::ops::strided_winograd {
inline namespace CPU_CAPABILITY {

namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kBlock = 16;
static_assert(Vec::size() == kBlock, "one 16-channel block a vector");

int64_t roundUp(int64_t value) {
  return (value + kBlock - 1) / kBlock * kBlock;
}

// F(4, 2)'s input transform (points 0, 1, -1, 2, infinity; rows scaled to small integers, the
// weight transform in ops/conv/strided_winograd.cpp scaled the other way): 5 values of a 2-tap
// direction in, 5 transformed out.
inline void transformInput(const __m512 (&d)[5], __m512 (&v)[5]) {
  const __m512 two = _mm512_set1_ps(2.f);
  v[0] = _mm512_fmadd_ps(two, _mm512_sub_ps(d[0], d[2]), _mm512_sub_ps(d[3], d[1]));
  v[1] = _mm512_fmadd_ps(two, d[1], _mm512_sub_ps(d[2], d[3]));
  v[2] = _mm512_fmsub_ps(_mm512_set1_ps(3.f), d[2], _mm512_fmadd_ps(two, d[1], d[3]));
  v[3] = _mm512_sub_ps(d[3], d[1]);
  v[4] = _mm512_fmadd_ps(two, _mm512_sub_ps(d[1], d[3]), _mm512_sub_ps(d[4], d[2]));
}

// F(4, 2)'s output transform: 5 products in, 4 outputs.
inline void transformOutput(const __m512 (&m)[5], __m512 (&y)[4]) {
  const __m512 sum = _mm512_add_ps(m[1], m[2]);
  const __m512 difference = _mm512_sub_ps(m[1], m[2]);
  y[0] = _mm512_add_ps(_mm512_add_ps(sum, m[0]), m[3]);
  y[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.f), m[3], difference);
  y[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.f), m[3], sum);
  y[3] = _mm512_fmadd_ps(_mm512_set1_ps(8.f), m[3], _mm512_add_ps(difference, m[4]));
}

// Where a band's matrices live: matrix g's first row among the band's 81 rows a tile, and its
// rows per tile (the 2x2 taps' 25: one; the 2x1 and 1x2 taps' 5 each: four, one a direct row or
// column of the tile; the centre tap's: sixteen, one an output).
int64_t firstRow(int64_t g, int64_t tiles) {
  if (g < 25) {
    return g * tiles;
  }
  if (g < 30) {
    return (25 + (g - 25) * 4) * tiles;
  }
  if (g < 35) {
    return (45 + (g - 30) * 4) * tiles;
  }
  return 65 * tiles;
}

int64_t rowsPerTile(int64_t g) {
  return g < 25 ? 1 : g < 35 ? 4 : 16;
}

struct Band {
  const StridedWinogradConv* conv;
  int64_t out_height;
  int64_t out_width;
  int64_t tiles_per_row;
  int64_t first_tile_row;
  int64_t tiles;
  int64_t in_padded; // input channels rounded up to 16: a transformed row's floats
  int64_t out_blocks;
  float* inputs;   // [81 rows a tile x tiles][in_padded]
  float* products; // matrix g: [out_blocks][rows][16] at products + firstRow(g) * out_blocks * 16
};

// Tile t's transformed inputs, input block cb; kInside: its whole input window is inside the
// image (no bounds to check).
template <bool kInside> void transformTile(const Band& band, int64_t t, int64_t cb) {
  const StridedWinogradConv& conv = *band.conv;
  const int64_t th = band.first_tile_row + t / band.tiles_per_row;
  const int64_t tw = t % band.tiles_per_row;
  // The tile's 9x9 input window from row 2 * oh0 - 1, column 2 * ow0 - 1: even window rows and
  // columns are the image's odd ones; outside the image zeros. Each of its values is read once.
  const int64_t row0 = 2 * th * kTile - 1;
  const int64_t column0 = 2 * tw * kTile - 1;
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
  // Matrix g's row for this tile, input block cb: rows of in_padded floats.
  const int64_t k = band.in_padded;
  float* base = band.inputs + cb * kBlock;
  float* two_by_two = base + t * k; // matrix 5 a + b: + g * tiles * k
  float* two_by_one =
      base + (25 * band.tiles + t * 4) * k; // matrix 25 + a, row j: + (4 a tiles + j) k
  float* one_by_two = base + (45 * band.tiles + t * 4) * k; // matrix 30 + b, row i
  float* centre = base + (65 * band.tiles + t * 16) * k;    // row 4 i + j
  const int64_t matrix = band.tiles * k;
  // The image's odd rows at its odd columns (the 2x2 taps): transformed along each row, then down
  // the rows (matrix 5 a + b).
  __m512 along_rows[5][5]; // [odd row i][transformed column position b]
#pragma GCC unroll 5
  for (int i = 0; i < 5; ++i) {
    const __m512 d[5] = {load(2 * i, 0), load(2 * i, 2), load(2 * i, 4), load(2 * i, 6),
                         load(2 * i, 8)};
    transformInput(d, along_rows[i]);
  }
#pragma GCC unroll 5
  for (int b = 0; b < 5; ++b) {
    const __m512 d[5] = {along_rows[0][b], along_rows[1][b], along_rows[2][b], along_rows[3][b],
                         along_rows[4][b]};
    __m512 v[5];
    transformInput(d, v);
#pragma GCC unroll 5
    for (int a = 0; a < 5; ++a) {
      _mm512_storeu_ps(two_by_two + (a * 5 + b) * matrix, v[a]);
    }
  }
#pragma GCC unroll 4
  // The odd rows at the even columns (the 2x1 taps): transformed down the rows (matrix 25 + a,
  // row j of the tile).
  for (int j = 0; j < 4; ++j) {
    const int v = 2 * j + 1;
    const __m512 d[5] = {load(0, v), load(2, v), load(4, v), load(6, v), load(8, v)};
    __m512 out[5];
    transformInput(d, out);
#pragma GCC unroll 5
    for (int a = 0; a < 5; ++a) {
      _mm512_storeu_ps(two_by_one + (a * 4 * band.tiles + j) * k, out[a]);
    }
  }
#pragma GCC unroll 4
  // The even rows: at the odd columns (the 1x2 taps) transformed along the row (matrix 30 + b,
  // row i of the tile), at the even columns (the centre tap) as they are (matrix 35, row 4 i + j).
  for (int i = 0; i < 4; ++i) {
    const int u = 2 * i + 1;
    const __m512 d[5] = {load(u, 0), load(u, 2), load(u, 4), load(u, 6), load(u, 8)};
    __m512 out[5];
    transformInput(d, out);
#pragma GCC unroll 5
    for (int b = 0; b < 5; ++b) {
      _mm512_storeu_ps(one_by_two + (b * 4 * band.tiles + i) * k, out[b]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      _mm512_storeu_ps(centre + (i * 4 + j) * k, load(u, 2 * j + 1));
    }
  }
}

// Matrix g's products for the band: its transformed inputs times its transformed weight.
void multiply(const Band& band, int64_t g) {
  const StridedWinogradConv& conv = *band.conv;
  const int64_t rows = rowsPerTile(g) * band.tiles;
  const int64_t first = firstRow(g, band.tiles);
  const float* inputs = band.inputs + first * band.in_padded;
  const int64_t weight_block = band.in_padded * kBlock;
  const float* weight = conv.weight + g * band.out_blocks * weight_block;
  float* products = band.products + first * band.out_blocks * kBlock;
  winograd_tiles::multiplyMatrix(inputs, band.in_padded, conv.in_channels, weight, band.out_blocks,
                                 products, rows);
}

// Tile t's outputs of output block ob from the band's products, with the epilogue.
void finishTile(const Band& band, int64_t t, int64_t ob) {
  const StridedWinogradConv& conv = *band.conv;
  // Matrix g's products are [out_blocks][rows][16]; this tile's of block ob:
  const float* two_by_two = band.products + (ob * band.tiles + t) * kBlock; // + g * tiles * out
  const int64_t two_by_two_matrix = band.tiles * band.out_blocks * kBlock;
  const float* two_by_one =
      band.products + (25 * band.tiles * band.out_blocks + (ob * band.tiles + t) * 4) * kBlock;
  const float* one_by_two =
      band.products + (45 * band.tiles * band.out_blocks + (ob * band.tiles + t) * 4) * kBlock;
  const int64_t one_dimensional_matrix = 4 * two_by_two_matrix;
  const float* centre =
      band.products + (65 * band.tiles * band.out_blocks + (ob * band.tiles + t) * 16) * kBlock;
  // Down the odd rows: the 2x2 taps' products transformed along each row, plus the 2x1 taps'.
  __m512 rows[5][4]; // [transformed row position a][output column j]
#pragma GCC unroll 5
  for (int a = 0; a < 5; ++a) {
    __m512 m[5];
#pragma GCC unroll 5
    for (int b = 0; b < 5; ++b) {
      m[b] = _mm512_loadu_ps(two_by_two + (a * 5 + b) * two_by_two_matrix);
    }
    transformOutput(m, rows[a]);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      rows[a][j] = _mm512_add_ps(
          rows[a][j], _mm512_loadu_ps(two_by_one + a * one_dimensional_matrix + j * kBlock));
    }
  }
  __m512 y[4][4]; // [output row i][output column j]
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512 m[5] = {rows[0][j], rows[1][j], rows[2][j], rows[3][j], rows[4][j]};
    __m512 column[4];
    transformOutput(m, column);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      y[i][j] = column[i];
    }
  }
#pragma GCC unroll 4
  // The 1x2 taps' products along each output row, and the centre tap's.
  for (int i = 0; i < 4; ++i) {
    __m512 m[5];
#pragma GCC unroll 5
    for (int b = 0; b < 5; ++b) {
      m[b] = _mm512_loadu_ps(one_by_two + b * one_dimensional_matrix + i * kBlock);
    }
    __m512 row[4];
    transformOutput(m, row);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      y[i][j] = _mm512_add_ps(
          y[i][j], _mm512_add_ps(row[j], _mm512_loadu_ps(centre + (i * 4 + j) * kBlock)));
    }
  }
  winograd_tiles::storeTile(conv, y, ob, band.first_tile_row + t / band.tiles_per_row,
                            t % band.tiles_per_row, band.out_height, band.out_width);
}

} // namespace

void runStridedWinogradLoop(const StridedWinogradConv& conv, float* scratch, int64_t first_tile_row,
                            int64_t last_tile_row, int64_t band_rows) {
  Band band;
  band.conv = &conv;
  band.out_height = outputSize(conv.height);
  band.out_width = outputSize(conv.width);
  band.tiles_per_row = (band.out_width + kTile - 1) / kTile;
  band.in_padded = roundUp(conv.in_channels);
  band.out_blocks = roundUp(conv.out_channels) / kBlock;
  const int64_t in_blocks = band.in_padded / kBlock;
  // Bands of near-equal rows, at most band_rows: a last band of few tiles would leave the GEMMs
  // short rows.
  const int64_t rows = last_tile_row - first_tile_row;
  const int64_t bands = (rows + band_rows - 1) / band_rows;
  for (int64_t k = 0; k < bands; ++k) {
    const int64_t row = first_tile_row + rows * k / bands;
    band.first_tile_row = row;
    band.tiles = (first_tile_row + rows * (k + 1) / bands - row) * band.tiles_per_row;
    band.inputs = scratch;
    band.products = scratch + 81 * band.tiles * band.in_padded;
    for (int64_t t = 0; t < band.tiles; ++t) {
      const int64_t th = row + t / band.tiles_per_row;
      const int64_t tw = t % band.tiles_per_row;
      const bool inside = th > 0 && tw > 0 && (th * kTile + kTile) * 2 <= conv.height &&
                          (tw * kTile + kTile) * 2 <= conv.width;
      for (int64_t cb = 0; cb < in_blocks; ++cb) {
        if (inside) {
          transformTile<true>(band, t, cb);
        } else {
          transformTile<false>(band, t, cb);
        }
      }
    }
    for (int64_t g = 0; g < kMatrices; ++g) {
      multiply(band, g);
    }
    for (int64_t ob = 0; ob < band.out_blocks; ++ob) {
      for (int64_t t = 0; t < band.tiles; ++t) {
        finishTile(band, t, ob);
      }
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::strided_winograd

#endif // CPU_CAPABILITY_AVX512
