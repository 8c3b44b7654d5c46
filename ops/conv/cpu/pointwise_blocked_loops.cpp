// ops/conv/pointwise_blocked.h's loop. cmake/CpuKernels.cmake builds every ops/*/cpu/ file once
// per capability; this loop keeps a 16-channel block in one vector, so only the AVX-512 build
// defines it (ops/conv/pointwise_blocked.cpp calls it on AVX-512 CPUs only).
#include <algorithm>
#include <utility>

#include <immintrin.h>

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/cpu/blocked_activation.h"
#include "ops/conv/pointwise_blocked.h"
#include "ops/elementwise/cpu/partial_vectors.h"

#if defined(CPU_CAPABILITY_AVX512)

// GCC 12 flags the _mm512_undefined_ps inside _mm512_max_ps once inlined into these loops (as
// cmake/CpuKernels.cmake says of ATen's headers).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace srt::ops::pointwise {
inline namespace CPU_CAPABILITY {

namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kBlock = 16;
static_assert(Vec::size() == kBlock, "one 16-channel block a vector");
// Pixels by output blocks of accumulators: 9 x 3 = 27 of AVX-512's 32 registers (an A/B against
// 14 x 2 and 7 x 4 on 7x7 images; 3 weight loads and 9 broadcasts feed 27 FMAs).
constexpr int kMaxRows = 9;
static_assert(kOutputBlocks == 3, "tileOfRows has a tile for 1, 2 and 3 output blocks");

Vec biasVector(const BlockedPointwiseConv& conv, int64_t block) {
  const int64_t first = block * kBlock;
  const int64_t count = std::min<int64_t>(conv.out_channels - first, kBlock);
  if (conv.bias == nullptr || count <= 0) {
    return Vec(0.f);
  }
  return vec::loadUpTo(conv.bias + first, count);
}

// Lines of the next group of output blocks' weight that a tile brings into L2 while it multiplies,
// one an input channel (a tile of few channels fetches part of its share). A model's weights
// come from memory, and the hardware prefetcher, which stops at each group, left the loop waiting
// on them: efficientnet_b0's 192 -> 1152 at 7x7, its weight cycled through 64 copies, 130 us
// against 92 with the weight in cache; 97 with this (AMD EPYC, Zen 5).
struct WeightPrefetch {
  const char* line = nullptr;
  int64_t lines = 0; // still to fetch, one an input channel
  void step() {
    if (lines > 0) {
      _mm_prefetch(line, _MM_HINT_T1);
      line += 64;
      --lines;
    }
  }
};

// Input channel c's products into the accumulators: its weight row (16 outputs) of each output
// block, times its value at each of the R pixels.
template <int R, int NB>
inline void accumulate(Vec (&acc)[R][NB], const float* src, const float* w,
                       int64_t weight_block_stride) {
  Vec wv[NB];
  for (int j = 0; j < NB; ++j) {
    wv[j] = Vec::loadu(w + j * weight_block_stride);
  }
  for (int r = 0; r < R; ++r) {
    const Vec x(src[r * kBlock]);
    for (int j = 0; j < NB; ++j) {
      acc[r][j] = at::vec::fmadd(x, wv[j], acc[r][j]);
    }
  }
}

// Pixels [p, p + R) of output blocks [block, block + NB).
template <int R, int NB>
void tile(const BlockedPointwiseConv& conv, int64_t block, int64_t p, WeightPrefetch prefetch) {
  const int64_t pixels = conv.pixels;
  Vec acc[R][NB];
  for (int j = 0; j < NB; ++j) {
    const Vec b = biasVector(conv, block + j);
    for (int r = 0; r < R; ++r) {
      acc[r][j] = b;
      if (conv.residual != nullptr) {
        acc[r][j] += Vec::loadu(conv.residual + ((block + j) * pixels + p + r) * kBlock);
      }
    }
  }
  const float* weight = conv.weight + block * conv.weight_block_stride;
  const int64_t full_blocks = conv.in_channels / kBlock;
  for (int64_t c_block = 0; c_block < full_blocks; ++c_block) {
    const float* src = conv.src + (c_block * pixels + p) * kBlock;
    const float* w = weight + c_block * kBlock * kBlock;
    for (int i = 0; i < kBlock; ++i) {
      accumulate<R, NB>(acc, src + i, w + i * kBlock, conv.weight_block_stride);
      prefetch.step();
    }
  }
  // The last block's real channels only: its padding lanes meet no weight row.
  const float* src = conv.src + (full_blocks * pixels + p) * kBlock;
  const float* w = weight + full_blocks * kBlock * kBlock;
  for (int64_t i = 0; i < conv.in_channels - full_blocks * kBlock; ++i) {
    accumulate<R, NB>(acc, src + i, w + i * kBlock, conv.weight_block_stride);
    prefetch.step();
  }
  const PointwiseActivation activation = conv.activation;
  for (int j = 0; j < NB; ++j) {
    for (int r = 0; r < R; ++r) {
      activate(acc[r][j], activation).store(conv.out + ((block + j) * pixels + p + r) * kBlock);
    }
  }
}

template <int R>
void tileOfRows(const BlockedPointwiseConv& conv, int64_t block, int64_t blocks, int64_t p,
                const WeightPrefetch& prefetch) {
  switch (blocks) {
  case 3:
    tile<R, 3>(conv, block, p, prefetch);
    break;
  case 2:
    tile<R, 2>(conv, block, p, prefetch);
    break;
  default:
    tile<R, 1>(conv, block, p, prefetch);
    break;
  }
}

template <int... Rows>
void tileOf(int64_t rows, const BlockedPointwiseConv& conv, int64_t block, int64_t blocks,
            int64_t p, const WeightPrefetch& prefetch, std::integer_sequence<int, Rows...>) {
  // The one instantiation whose R is `rows` (1 ... kMaxRows).
  ((rows == Rows + 1 ? tileOfRows<Rows + 1>(conv, block, blocks, p, prefetch) : void()), ...);
}

} // namespace

void runBlockedPointwiseLoop(const BlockedPointwiseConv& conv, int64_t first_block,
                             int64_t last_block) {
  // Pixels in near-equal tiles of at most kMaxRows; each group of output blocks keeps its weight
  // columns (C x 16 x 3 floats) in L1 across the tiles, which share out the prefetching of the
  // next group's (output blocks are weight_block_stride floats apart: one range of lines).
  const int64_t tiles = (conv.pixels + kMaxRows - 1) / kMaxRows;
  const int64_t lines_per_block =
      conv.weight_block_stride * static_cast<int64_t>(sizeof(float)) / 64;
  for (int64_t block = first_block; block < last_block; block += kOutputBlocks) {
    const int64_t blocks = std::min<int64_t>(kOutputBlocks, last_block - block);
    const int64_t next = block + kOutputBlocks;
    const int64_t next_lines =
        std::max<int64_t>(0, std::min<int64_t>(kOutputBlocks, last_block - next)) * lines_per_block;
    const char* next_weight =
        next_lines > 0
            ? reinterpret_cast<const char*>(conv.weight + next * conv.weight_block_stride)
            : nullptr;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t begin = conv.pixels * t / tiles;
      const int64_t end = conv.pixels * (t + 1) / tiles;
      WeightPrefetch prefetch;
      const int64_t first_line = next_lines * t / tiles;
      prefetch.line = next_weight + first_line * 64;
      prefetch.lines = next_lines * (t + 1) / tiles - first_line;
      tileOf(end - begin, conv, block, blocks, begin, prefetch,
             std::make_integer_sequence<int, kMaxRows>());
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::pointwise

#endif // CPU_CAPABILITY_AVX512
