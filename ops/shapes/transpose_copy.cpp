#include "ops/shapes/transpose_copy.h"

#include <algorithm>

#include "ops/core/parallelism.h"

namespace srt::ops {

void transposeMatrices(const float* in, float* out, int64_t batch, int64_t rows, int64_t cols,
                       WorkerPool* workers) {
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t matrix = rows * cols;
  splitIfWorthIt(workers, batch * row_tiles, 1,
                 static_cast<double>(batch * matrix) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t tile = begin; tile < end; ++tile) {
                     const int64_t b = tile / row_tiles;
                     const int64_t r0 = (tile % row_tiles) * kTile;
                     const int64_t r1 = std::min(rows, r0 + kTile);
                     const float* src = in + b * matrix;
                     float* dst = out + b * matrix;
                     for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
                       const int64_t c1 = std::min(cols, c0 + kTile);
                       for (int64_t c = c0; c < c1; ++c) {
                         for (int64_t r = r0; r < r1; ++r) {
                           dst[c * rows + r] = src[r * cols + c];
                         }
                       }
                     }
                   }
                 });
}

} // namespace srt::ops
