// ops/shapes/transpose_copy.h's tile loop for one CPU capability (cmake/CpuKernels.cmake builds it
// once per capability with CPU_CAPABILITY naming the inline namespace). With AVX-512, 16 x 16
// tiles transposed in registers: 16 row loads, 64 shuffles, 16 row stores (the scalar loop,
// one element per load and store, took 1-3 ns an element: 2.5 ms for a 1-D convolution's
// [1598, 512] output coming back from channels last).
#include <algorithm>
#include <cstdint>

#if defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>
#endif

namespace srt::ops {
inline namespace CPU_CAPABILITY {

namespace {

constexpr int64_t kTile = 16;

// out[c][r] = in[r][c] for r < rows, c < cols of one tile (rows `ld_in`, `ld_out` floats apart).
void transposeScalar(const float* in, int64_t ld_in, float* out, int64_t ld_out, int64_t rows,
                     int64_t cols) {
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      out[c * ld_out + r] = in[r * ld_in + c];
    }
  }
}

#if defined(CPU_CAPABILITY_AVX512)
// A whole 16 x 16 tile: pairs of rows interleaved, then groups of four rows per 128-bit lane
// (after which vector 4 g + c holds, in lane L, column 4 L + c of rows 4 g .. 4 g + 3), then the
// lanes gathered across the four groups.
void transposeTile(const float* in, int64_t ld_in, float* out, int64_t ld_out) {
  __m512 a[kTile];
  __m512 b[kTile];
  for (int i = 0; i < kTile; ++i) {
    a[i] = _mm512_loadu_ps(in + i * ld_in);
  }
  for (int i = 0; i < kTile; i += 2) {
    b[i] = _mm512_unpacklo_ps(a[i], a[i + 1]);
    b[i + 1] = _mm512_unpackhi_ps(a[i], a[i + 1]);
  }
  for (int i = 0; i < kTile; i += 4) {
    a[i] = _mm512_shuffle_ps(b[i], b[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    a[i + 1] = _mm512_shuffle_ps(b[i], b[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    a[i + 2] = _mm512_shuffle_ps(b[i + 1], b[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    a[i + 3] = _mm512_shuffle_ps(b[i + 1], b[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    // Lanes 0 and 2, then 1 and 3, of groups 0 and 1 (u0, u1) and of groups 2 and 3 (u2, u3).
    const __m512 u0 = _mm512_shuffle_f32x4(a[c], a[4 + c], 0x88);
    const __m512 u1 = _mm512_shuffle_f32x4(a[c], a[4 + c], 0xdd);
    const __m512 u2 = _mm512_shuffle_f32x4(a[8 + c], a[12 + c], 0x88);
    const __m512 u3 = _mm512_shuffle_f32x4(a[8 + c], a[12 + c], 0xdd);
    _mm512_storeu_ps(out + c * ld_out, _mm512_shuffle_f32x4(u0, u2, 0x88));
    _mm512_storeu_ps(out + (8 + c) * ld_out, _mm512_shuffle_f32x4(u0, u2, 0xdd));
    _mm512_storeu_ps(out + (4 + c) * ld_out, _mm512_shuffle_f32x4(u1, u3, 0x88));
    _mm512_storeu_ps(out + (12 + c) * ld_out, _mm512_shuffle_f32x4(u1, u3, 0xdd));
  }
}
#endif

} // namespace

// Rows [row_begin, row_end) of a matrix `in` of `cols` columns (rows ld_in floats apart) into its
// transpose `out` (rows ld_out floats apart).
void transposeRowsLoop(const float* in, int64_t ld_in, float* out, int64_t ld_out, int64_t cols,
                       int64_t row_begin, int64_t row_end) {
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kTile) {
    const int64_t tile_rows = std::min(kTile, row_end - r0);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t tile_cols = std::min(kTile, cols - c0);
      const float* from = in + r0 * ld_in + c0;
      float* to = out + c0 * ld_out + r0;
#if defined(CPU_CAPABILITY_AVX512)
      if (tile_rows == kTile && tile_cols == kTile) {
        transposeTile(from, ld_in, to, ld_out);
        continue;
      }
#endif
      transposeScalar(from, ld_in, to, ld_out, tile_rows, tile_cols);
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops
