// Our float32 GEMM on a weight packed in column blocks: out[m, n] = epilogue(a[m, k] @ w + bias).
// The weight is the layout oneDNN's matmul packs a constant right operand into on AVX-512
// (BA16a64b): blocks of kBlockedGemmWidth columns, each a row-major [k, 64] matrix (k padded to
// 16 rows with zeros), `block_stride` floats apart, the last block zero-padded. So it runs on the
// weight oneDNN packed (ops/gemm/onednn.cpp), never a second copy. Blocks of 16, 32 or 48
// columns read the same way: a convolution's weight as oneDNN packs it for channels-last
// activations (Acdb32a: [OC / 32][kh][kw][C][32], a [kh * kw * C, 32] matrix per block) is the
// right operand of its im2col product (ops/conv/small_image_gemm.h).
//
// Why not oneDNN's own kernel on it: a linear of few rows streams its weight from memory once per
// call (wav2vec2's 49-row linears: 9.4 MB for 0.23 GFLOP), and oneDNN 2.6's brgemm leaves the
// weight to the hardware prefetcher, which stalls at each new column block: 150-160 GFLOP/s of
// this machine's 235. This kernel prefetches the next block of the weight while it multiplies the
// current one: 190-215 GFLOP/s on those shapes (1.2-1.3x brgemm), and level with brgemm or
// faster from 32 to 1024 rows (1 thread, side by side in one process).
#pragma once

#include <cstdint>

#include "ops/core/worker_pool.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

constexpr int64_t kBlockedGemmWidth = 64;
// Rows per tile of the kernel: 6 x 4 vectors of sums, 4 weight vectors and a broadcast row value
// in AVX-512's 32 registers.
constexpr int64_t kBlockedGemmTileRows = 6;

// What runs on each result before it is stored: y = act(a @ w + bias), then with a residual r
// (rows of `residual_ld` floats): residual_first ? r + alpha * y : y + alpha * r.
struct BlockedGemmEpilogue {
  bool activate = false;
  vec::UnaryOp activation = vec::UnaryOp::kRelu; // when `activate`
  vec::Params activation_params;                 // a clamp's bounds
  const float* residual = nullptr;
  int64_t residual_ld = 0;
  float alpha = 1.f;
  bool residual_first = false;
  // Instead: y = act(a @ w + bias + r) (a convolution's sum post-op; alpha and residual_first
  // unused).
  bool residual_before_activation = false;
};

struct BlockedGemm {
  const float* a = nullptr; // [m, k], rows `lda` floats apart
  int64_t lda = 0;
  int64_t m = 0;
  const float* w = nullptr; // [k, n] in column blocks, see above
  int64_t k = 0;
  int64_t n = 0;
  int64_t block_stride = 0;
  int64_t block_width = kBlockedGemmWidth; // 16, 32, 48 or 64
  const float* bias = nullptr;             // n floats, or nullptr
  float* out = nullptr;                    // [m, n], rows `ldo` floats apart
  int64_t ldo = 0;
  BlockedGemmEpilogue epilogue;
};

// Rows up to which the kernel runs in place of oneDNN's: there the weight streams from memory for
// few products per element and prefetching it pays (wav2vec2's 49 rows: 1.2-1.3x brgemm, 96 and
// 128 rows: 1.05-1.1x, weights cycled through 24 copies so each comes from memory, as a model's
// layers do). From about 200 rows each weight element serves enough products that brgemm's
// kernel is level or up to 5% faster (vit_b_16's 197 rows, a 1024-row encoder layer).
constexpr int64_t kBlockedGemmMaxRows = 128;

// Whether this CPU runs the kernel: it is written for AVX-512 (32 vector registers hold a 6 x 64
// tile of sums); elsewhere the caller keeps oneDNN's.
bool blockedGemmRuns();

// The whole product (m <= kBlockedGemmMaxRows), split over the intra-op threads when the cost model
// says it pays (the runtime's `workers` where it has them, else OpenMP's): by column blocks, or by
// rows when there are fewer blocks than threads. Requires blockedGemmRuns().
void runBlockedGemm(const BlockedGemm& gemm, WorkerPool* workers);

// The whole product on the calling thread, any number of rows (each depth block of `a`'s rows is
// read once per column block, so it should stay in L2: a few hundred rows). For callers that
// split their work over the threads themselves (attention's heads). Requires blockedGemmRuns().
void runBlockedGemmOnThisThread(const BlockedGemm& gemm);

} // namespace srt::ops
