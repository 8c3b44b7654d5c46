// rowsTimesPairBlocks (ops/recurrent/gate_loops.h): the hidden product of a recurrent step on a
// bfloat16 weight, with AVX512-BF16's dot product of bfloat16 pairs (vdpbf16ps), which sums into
// float32. Compiled for that instruction set by a target attribute rather than a capability build
// (ATen has no AVX512-BF16 capability); called only where ops::cpuMultipliesBFloat16() holds.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/recurrent/gate_loops.h"

namespace srt::ops::recurrent {

#define SRT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace {

constexpr int kPairVectors = static_cast<int>(kColumnBlock / 16); // 16 float32 lanes per vector

// The x rows' values [begin, begin + 2 * pairs) rounded to bfloat16 (to nearest even), two per
// 32-bit word as vdpbf16ps reads them; a trailing odd value pairs with zero.
template <int R>
SRT_AVX512_BF16 void roundPairs(const float* x, int64_t ldx, int64_t begin, int64_t k,
                                int64_t pairs, uint32_t (*rounded)[kPairChunk]) {
  for (int r = 0; r < R; ++r) {
    const float* row = x + r * ldx + begin;
    const int64_t values = std::min(2 * pairs, k - begin);
    for (int64_t i = 0; i < 2 * pairs; i += 32) {
      const int64_t left = values - i;
      const auto mask = [](int64_t n) -> __mmask16 {
        return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
      };
      const __m512 low = _mm512_maskz_loadu_ps(mask(left), row + i);
      const __m512 high = _mm512_maskz_loadu_ps(mask(left - 16), row + i + 16);
      _mm512_storeu_si512(rounded[r] + i / 2, (__m512i)_mm512_cvtne2ps_pbh(high, low));
    }
  }
}

// acc[r][v] += the pair `pair` of x row r dotted with the weight's pair row `row`, column vector v.
template <int R>
SRT_AVX512_BF16 inline void dotPair(__m512 (&acc)[R][kPairVectors], const uint16_t* row,
                                    const uint32_t (*rounded)[kPairChunk], int64_t pair) {
  for (int v = 0; v < kPairVectors; ++v) {
    const auto weights = (__m512bh)_mm512_loadu_si512(row + v * 32);
    for (int r = 0; r < R; ++r) {
      const auto xs = (__m512bh)_mm512_set1_epi32(static_cast<int>(rounded[r][pair]));
      acc[r][v] = _mm512_dpbf16_ps(acc[r][v], xs, weights);
    }
  }
}

// R rows of y (leading dimension ldy) = R rows of x @ w over the pairs [first, first + pairs) of
// every column block, added to y if `accumulate`; blocks and pairs back to front if `backwards`.
// S interleaved sets of accumulators keep 4 * R * S dot products in flight (vdpbf16ps's latency
// is several cycles; one row alone would wait on it).
template <int R, int S>
SRT_AVX512_BF16 void pairBlocks(const uint32_t (*rounded)[kPairChunk], const uint16_t* w,
                                int64_t k_pairs, int64_t first, int64_t pairs, int64_t n, float* y,
                                int64_t ldy, bool accumulate, bool backwards) {
  const auto in_order = [backwards](int64_t i, int64_t count) {
    return backwards ? count - 1 - i : i;
  };
  for (int64_t jj = 0; jj < n; jj += kColumnBlock) {
    const int64_t j = in_order(jj / kColumnBlock, n / kColumnBlock) * kColumnBlock;
    const uint16_t* block = w + (j * k_pairs + first * kColumnBlock) * 2;
    __m512 acc[S][R][kPairVectors];
    for (int s = 0; s < S; ++s) {
      for (int r = 0; r < R; ++r) {
        for (int v = 0; v < kPairVectors; ++v) {
          acc[s][r][v] = s == 0 && accumulate ? _mm512_loadu_ps(y + r * ldy + j + v * 16)
                                              : _mm512_setzero_ps();
        }
      }
    }
    int64_t p = 0;
    for (; p + S <= pairs; p += S) {
      for (int s = 0; s < S; ++s) {
        const int64_t q = in_order(p + s, pairs);
        dotPair<R>(acc[s], block + q * 2 * kColumnBlock, rounded, q);
      }
    }
    for (; p < pairs; ++p) {
      const int64_t q = in_order(p, pairs);
      dotPair<R>(acc[0], block + q * 2 * kColumnBlock, rounded, q);
    }
    for (int r = 0; r < R; ++r) {
      for (int v = 0; v < kPairVectors; ++v) {
        __m512 sum = acc[0][r][v];
        for (int s = 1; s < S; ++s) {
          sum = _mm512_add_ps(sum, acc[s][r][v]);
        }
        _mm512_storeu_ps(y + r * ldy + j + v * 16, sum);
      }
    }
  }
}

// R rows, the weight's pairs a chunk at a time (the rounded rows live on the stack), one pass
// over the weight.
template <int R, int S>
SRT_AVX512_BF16 void rowsTimesPairBlocksOf(const float* x, int64_t ldx, const uint16_t* w,
                                           int64_t k, int64_t n, float* y, int64_t ldy,
                                           bool backwards) {
  alignas(64) uint32_t rounded[R][kPairChunk];
  const int64_t k_pairs = (k + 1) / 2;
  const int64_t chunks = (k_pairs + kPairChunk - 1) / kPairChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t first = (backwards ? chunks - 1 - c : c) * kPairChunk;
    const int64_t pairs = std::min<int64_t>(kPairChunk, k_pairs - first);
    roundPairs<R>(x, ldx, 2 * first, k, pairs, rounded);
    pairBlocks<R, S>(rounded, w, k_pairs, first, pairs, n, y, ldy, c > 0, backwards);
  }
}

} // namespace

bool rowsTimesPairBlocks(const float* x, int64_t ldx, int64_t rows, const uint16_t* w, int64_t k,
                         int64_t n, float* y, int64_t ldy, bool backwards) {
  return forRowGroups(rows, backwards, [&](int64_t r, int64_t group, bool group_backwards) {
    const float* x_rows = x + r * ldx;
    float* y_rows = y + r * ldy;
    if (group == 4) {
      rowsTimesPairBlocksOf<4, 1>(x_rows, ldx, w, k, n, y_rows, ldy, group_backwards);
    } else if (group == 2) {
      rowsTimesPairBlocksOf<2, 2>(x_rows, ldx, w, k, n, y_rows, ldy, group_backwards);
    } else {
      rowsTimesPairBlocksOf<1, 2>(x_rows, ldx, w, k, n, y_rows, ldy, group_backwards);
    }
  });
}

#undef SRT_AVX512_BF16

} // namespace srt::ops::recurrent
