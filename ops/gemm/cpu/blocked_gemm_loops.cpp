// ops/gemm/blocked_gemm.h's kernel. Written for AVX-512 alone: cmake/CpuKernels.cmake builds this
// file once per capability, and the other builds are empty (blockedGemmRuns() is false there).
#include <algorithm>
#include <cstdint>

#include "ops/elementwise/cpu/polynomial_exp.h"
#include "ops/gemm/blocked_gemm.h"

#if defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>

namespace srt::ops::gemm_loops {
inline namespace CPU_CAPABILITY {

namespace {

using vec::Vec;

constexpr int kVectors = 4; // a tile's columns: 4 x 16 floats
static_assert(kBlockedGemmWidth == kVectors * 16);
// Weight rows per pass of a tile: one 64-column block of 128 rows is 32 KB, which stays in L1
// (48 KB) while every tile of the rows multiplies it.
constexpr int64_t kDepthBlock = 128;
// Lanes of vector `v` that hold one of the block's `columns` valid columns.
inline __mmask16 laneMask(int64_t columns, int v) {
  const int64_t count = std::clamp<int64_t>(columns - 16 * v, 0, 16);
  return static_cast<__mmask16>((1u << count) - 1u);
}

// Row 0 of the weight's 16 columns from `column` on (a multiple of 16 below the padded width):
// in the block of g.block_width columns that holds them.
inline const float* weightColumns(const BlockedGemm& g, int64_t column) {
  return g.w + column / g.block_width * g.block_stride + column % g.block_width;
}

// One tile: rows [0, R) of `a` times depth rows [0, depth) of 64 columns of the weight, vector v's
// 16 at b[v] (rows `row_stride` floats apart), added to the sums already in `out` unless `first`,
// stored through the epilogue when `last`.
struct Tile {
  const float* a;
  int64_t lda;
  const float* b[kVectors];
  int64_t row_stride;
  int64_t depth;
  float* out;
  int64_t ldo;
  __mmask16 masks[kVectors];
  bool first;
  bool last;
  const float* bias;     // the block's first column, or nullptr
  const float* residual; // the tile's first element, or nullptr
  // The tile's share of the next depth block of the weight, brought into cache while it runs, in
  // its first prefetch_steps k steps: 64-column blocks (kWide), a line a step from prefetch[0] on,
  // in memory order; narrower ones, a row a step, vector v's line from prefetch[v] on.
  const float* prefetch[kVectors];
  int64_t prefetch_steps;
  bool residual_in_sum; // the residual starts the sums: the activation applies to it too
};

// V: the vectors of the block computed, those that hold a valid column (a block's last columns
// past n need none: keys 197 in 4 blocks computed 64 columns of the last for 5).
// kWide: the weight in blocks of 64 columns, a tile's rows contiguous (its addresses computed
// from one pointer: the narrower blocks' per-vector ones cost the 64-wide case 7-10%).
template <int R, int V, bool kWide, typename Activation>
__attribute__((always_inline)) inline void
multiplyTile(const Tile& t, const BlockedGemmEpilogue& epilogue, const Activation& activation) {
  __m512 sums[R][V];
  for (int v = 0; v < V; ++v) {
    const __m512 start = t.first && t.bias != nullptr
                             ? _mm512_maskz_loadu_ps(t.masks[v], t.bias + 16 * v)
                             : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      sums[r][v] = t.first ? start : _mm512_maskz_loadu_ps(t.masks[v], t.out + r * t.ldo + 16 * v);
      if (t.first && t.residual_in_sum) {
        sums[r][v] = _mm512_add_ps(
            sums[r][v],
            _mm512_maskz_loadu_ps(t.masks[v], t.residual + r * epilogue.residual_ld + 16 * v));
      }
    }
  }
  for (int64_t i = 0; i < t.depth; ++i) {
    if (i < t.prefetch_steps) {
      if constexpr (kWide) {
        _mm_prefetch(reinterpret_cast<const char*>(t.prefetch[0]) + 64 * i, _MM_HINT_T1);
      } else {
        for (int v = 0; v < kVectors; ++v) {
          _mm_prefetch(reinterpret_cast<const char*>(t.prefetch[v] + i * t.row_stride),
                       _MM_HINT_T1);
        }
      }
    }
    __m512 weights[V];
    for (int v = 0; v < V; ++v) {
      weights[v] = kWide ? _mm512_loadu_ps(t.b[0] + i * kBlockedGemmWidth + 16 * v)
                         : _mm512_loadu_ps(t.b[v] + i * t.row_stride);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(t.a[r * t.lda + i]);
      for (int v = 0; v < V; ++v) {
        sums[r][v] = _mm512_fmadd_ps(x, weights[v], sums[r][v]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) {
      __m512 y = sums[r][v];
      if (t.last) {
        y = activation(Vec(y));
        if (t.residual != nullptr && !t.residual_in_sum) {
          const __m512 residual =
              _mm512_maskz_loadu_ps(t.masks[v], t.residual + r * epilogue.residual_ld + 16 * v);
          const __m512 alpha = _mm512_set1_ps(epilogue.alpha);
          y = epilogue.residual_first ? _mm512_fmadd_ps(alpha, y, residual)
                                      : _mm512_fmadd_ps(alpha, residual, y);
        }
      }
      _mm512_mask_storeu_ps(t.out + r * t.ldo + 16 * v, t.masks[v], y);
    }
  }
}

template <int V, bool kWide, typename Activation>
void multiplyTileOfRows(int rows, const Tile& t, const BlockedGemmEpilogue& epilogue,
                        const Activation& activation) {
  switch (rows) {
  case 1:
    return multiplyTile<1, V, kWide>(t, epilogue, activation);
  case 2:
    return multiplyTile<2, V, kWide>(t, epilogue, activation);
  case 3:
    return multiplyTile<3, V, kWide>(t, epilogue, activation);
  case 4:
    return multiplyTile<4, V, kWide>(t, epilogue, activation);
  case 5:
    return multiplyTile<5, V, kWide>(t, epilogue, activation);
  default:
    return multiplyTile<6, V, kWide>(t, epilogue, activation);
  }
}

// A tile of a block of `vectors` valid vectors: narrower tiles only where kNarrowTails (the
// epilogue without activation: attention's products, whose key counts are rarely whole blocks),
// so that every activation's loop is not compiled four times over.
template <bool kNarrowTails, bool kWide, typename Activation>
void multiplyTileOfBlock(int vectors, int rows, const Tile& t, const BlockedGemmEpilogue& epilogue,
                         const Activation& activation) {
  if constexpr (kNarrowTails) {
    switch (vectors) {
    case 1:
      return multiplyTileOfRows<1, kWide>(rows, t, epilogue, activation);
    case 2:
      return multiplyTileOfRows<2, kWide>(rows, t, epilogue, activation);
    case 3:
      return multiplyTileOfRows<3, kWide>(rows, t, epilogue, activation);
    default:
      break;
    }
  }
  multiplyTileOfRows<kVectors, kWide>(rows, t, epilogue, activation);
}

// Rows [row_begin, row_end) x 64-column groups [block_begin, block_end): each group front to
// back in depth blocks, each depth block multiplied by every tile of the rows (their slice of
// `a`, at most kBlockedGemmMaxRows x kDepthBlock floats, stays in L2). The weight is read once,
// in memory order where its blocks are 64 columns wide, and each tile prefetches its share of the
// next depth block.
template <bool kNarrowTails, bool kWide, typename Activation>
void multiplyBlocks(const BlockedGemm& g, int64_t row_begin, int64_t row_end, int64_t block_begin,
                    int64_t block_end, const Activation& activation) {
  const BlockedGemmEpilogue& epilogue = g.epilogue;
  const int64_t rows = row_end - row_begin;
  // Tiles as even as kBlockedGemmTileRows allows (49 rows: 4 x 6 + 5 x 5).
  const int64_t tiles = (rows + kBlockedGemmTileRows - 1) / kBlockedGemmTileRows;
  for (int64_t block = block_begin; block < block_end; ++block) {
    const int64_t column = block * kBlockedGemmWidth;
    const int64_t columns = std::min(kBlockedGemmWidth, g.n - column);
    const int vectors = static_cast<int>((columns + 15) / 16);
    // Vector v's columns in depth row 0 (those past n: the first's, never stored).
    const auto vectorColumns = [&](int64_t group, int v) {
      const int64_t first = group * kBlockedGemmWidth;
      return weightColumns(g, first + 16 * v < g.n ? first + 16 * v : first);
    };
    const float* weight[kVectors];
    const float* next_group[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      weight[v] = vectorColumns(block, v);
      next_group[v] = block + 1 < block_end ? vectorColumns(block + 1, v) : nullptr;
    }
    for (int64_t i0 = 0; i0 < g.k; i0 += kDepthBlock) {
      const int64_t depth = std::min(kDepthBlock, g.k - i0);
      const bool last = i0 + depth >= g.k;
      // The next depth block: this group's, else the next group's first.
      const float* next[kVectors] = {};
      int64_t next_depth = 0;
      if (!last) {
        for (int v = 0; v < kVectors; ++v) {
          next[v] = weight[v] + (i0 + depth) * g.block_width;
        }
        next_depth = std::min(kDepthBlock, g.k - i0 - depth);
      } else if (next_group[0] != nullptr) {
        std::copy(next_group, next_group + kVectors, next);
        next_depth = std::min(kDepthBlock, g.k);
      }
      // Steps of prefetching: lines of 64-wide blocks, rows of narrower ones.
      const int64_t steps = kWide ? next_depth * kVectors : next_depth;
      const int64_t steps_per_tile = (steps + tiles - 1) / tiles;
      Tile t{};
      t.lda = g.lda;
      for (int v = 0; v < kVectors; ++v) {
        t.b[v] = weight[v] + i0 * g.block_width;
      }
      t.row_stride = g.block_width;
      t.depth = depth;
      t.ldo = g.ldo;
      for (int v = 0; v < kVectors; ++v) {
        t.masks[v] = laneMask(columns, v);
      }
      t.first = i0 == 0;
      t.last = last;
      t.bias = g.bias == nullptr ? nullptr : g.bias + column;
      t.residual_in_sum = epilogue.residual_before_activation && epilogue.residual != nullptr;
      int64_t row = row_begin;
      for (int64_t tile = 0; tile < tiles; ++tile) {
        const int64_t tile_rows = rows / tiles + (tile < rows % tiles ? 1 : 0);
        t.a = g.a + row * g.lda + i0;
        t.out = g.out + row * g.ldo + column;
        t.residual = epilogue.residual == nullptr
                         ? nullptr
                         : epilogue.residual + row * epilogue.residual_ld + column;
        const int64_t first_step = std::min(steps, tile * steps_per_tile);
        for (int v = 0; v < kVectors; ++v) {
          t.prefetch[v] = next[v] + first_step * (kWide ? 16 : g.block_width);
        }
        t.prefetch_steps = std::min(steps_per_tile, steps - first_step);
        multiplyTileOfBlock<kNarrowTails, kWide>(vectors, static_cast<int>(tile_rows), t, epilogue,
                                                 activation);
        row += tile_rows;
      }
    }
  }
}

} // namespace

void blockedGemmLoop(const BlockedGemm& g, int64_t row_begin, int64_t row_end, int64_t block_begin,
                     int64_t block_end) {
  const auto identity = [](Vec v) { return v; };
  // Narrower blocks (convolutions' weights): whole 64-column tiles only, they have no tails.
  const bool wide = g.block_width == kBlockedGemmWidth;
  if (!g.epilogue.activate) {
    if (wide) {
      multiplyBlocks<true, true>(g, row_begin, row_end, block_begin, block_end, identity);
    } else {
      multiplyBlocks<false, false>(g, row_begin, row_end, block_begin, block_end, identity);
    }
    return;
  }
  // The fast formulas: the epilogue owes ATen no bits, its sums are in another order already.
  vec::visitFastFormula(
      g.epilogue.activation,
      [&](const auto& formula) {
        if (wide) {
          multiplyBlocks<false, true>(g, row_begin, row_end, block_begin, block_end, formula);
        } else {
          multiplyBlocks<false, false>(g, row_begin, row_end, block_begin, block_end, formula);
        }
      },
      g.epilogue.activation_params);
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::gemm_loops

#endif // CPU_CAPABILITY_AVX512
