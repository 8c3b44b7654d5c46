// Runs ops/shapes/cpu/transpose_loops.cpp's widest build (a copy owes ATen's capability no bits),
// split over the threads.
#include "ops/shapes/transpose_copy.h"

#include <algorithm>

#include "ops/core/parallelism.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

#define SRT_DECLARE_TRANSPOSE_LOOPS(capability)                                                    \
  namespace capability {                                                                           \
  void transposeRowsLoop(const float* in, int64_t ld_in, float* out, int64_t ld_out, int64_t cols, \
                         int64_t row_begin, int64_t row_end);                                      \
  }
SRT_DECLARE_TRANSPOSE_LOOPS(DEFAULT)
SRT_DECLARE_TRANSPOSE_LOOPS(AVX2)
SRT_DECLARE_TRANSPOSE_LOOPS(AVX512)
#undef SRT_DECLARE_TRANSPOSE_LOOPS

namespace {

auto transposeLoop() {
  static const auto loop = vec::widestOf(&DEFAULT::transposeRowsLoop, &AVX2::transposeRowsLoop,
                                         &AVX512::transposeRowsLoop);
  return loop;
}

} // namespace

void transposeMatrices(const float* in, float* out, int64_t batch, int64_t rows, int64_t cols,
                       WorkerPool* workers) {
  const auto loop = transposeLoop();
  // Slices of 16 rows (one tile high) per task.
  constexpr int64_t kSlice = 16;
  const int64_t slices = (rows + kSlice - 1) / kSlice;
  const int64_t matrix = rows * cols;
  splitIfWorthIt(workers, batch * slices, 1,
                 static_cast<double>(batch * matrix) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t slice = begin; slice < end; ++slice) {
                     const int64_t b = slice / slices;
                     const int64_t first = (slice % slices) * kSlice;
                     loop(in + b * matrix, cols, out + b * matrix, rows, cols, first,
                          std::min(rows, first + kSlice));
                   }
                 });
}

void transposeMatrix(const float* in, int64_t ld_in, float* out, int64_t ld_out, int64_t rows,
                     int64_t cols) {
  transposeLoop()(in, ld_in, out, ld_out, cols, 0, rows);
}

} // namespace srt::ops
