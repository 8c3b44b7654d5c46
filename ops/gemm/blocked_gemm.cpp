// Runs ops/gemm/cpu/blocked_gemm_loops.cpp's AVX-512 build, split over threads.
#include "ops/gemm/blocked_gemm.h"

#include <algorithm>
#include <string_view>

#include "ops/core/parallelism.h"

namespace srt::ops {

namespace gemm_loops::AVX512 {
void blockedGemmLoop(const BlockedGemm& g, int64_t row_begin, int64_t row_end, int64_t block_begin,
                     int64_t block_end);
} // namespace gemm_loops::AVX512

bool blockedGemmRuns() {
  static const bool runs = std::string_view(vec::widestCapability()) == "AVX512";
  return runs;
}

void runBlockedGemmOnThisThread(const BlockedGemm& gemm) {
  const int64_t blocks = (gemm.n + kBlockedGemmWidth - 1) / kBlockedGemmWidth;
  gemm_loops::AVX512::blockedGemmLoop(gemm, 0, gemm.m, 0, blocks);
}

void runBlockedGemm(const BlockedGemm& gemm, WorkerPool* workers) {
  const int64_t blocks = (gemm.n + kBlockedGemmWidth - 1) / kBlockedGemmWidth;
  const double ns = static_cast<double>(gemm.m * gemm.k * blocks * kBlockedGemmWidth) *
                    kNanosecondsPerMultiplyAdd;
  const int threads = threadsFor(workers, ns);
  // Whole column blocks per thread where there are enough to go round (each thread then streams
  // its own part of the weight), else slices of the rows in whole tiles.
  if (blocks >= threads) {
    forEachPart(workers, blocks, threads, [&](int64_t, int64_t first, int64_t last) {
      gemm_loops::AVX512::blockedGemmLoop(gemm, 0, gemm.m, first, last);
    });
    return;
  }
  const int64_t tiles = (gemm.m + kBlockedGemmTileRows - 1) / kBlockedGemmTileRows;
  const int64_t parts = std::min<int64_t>(threads, tiles);
  forEachPart(workers, tiles, parts, [&](int64_t, int64_t first, int64_t last) {
    gemm_loops::AVX512::blockedGemmLoop(gemm, first * kBlockedGemmTileRows,
                                        std::min(gemm.m, last * kBlockedGemmTileRows), 0, blocks);
  });
}

} // namespace srt::ops
