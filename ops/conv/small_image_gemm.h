// Convolutions of channels-last images of few output pixels (at most kMaxPixels an image, the last
// stage of a ResNet at 224x224: 7x7) as one product per image on ops/gemm/blocked_gemm.h: the
// image's windows gathered into rows (im2col, in scratch; a 1x1 stride-1 convolution's input as it
// is) times the weight in the layout oneDNN packs it in for its channels-last kernels, read in
// place. Why: such a convolution streams a large weight from memory for few products per weight
// element (resnet's 3x3 512 -> 512 at 7x7: 9.4 MB for 49 pixels), and oneDNN's kernels leave that
// stream to the hardware prefetcher: 1.8-2.0 ms in the model for 0.23 GFLOP, half of this core's
// rate, against ~1.3 ms with the weight hot. The blocked GEMM prefetches the next part of the
// weight while it multiplies the current one. A batch runs here only while all its output
// pixels are no more than one product's rows (kMaxPixels: two 7x7 images): image by image, the
// weight streams once per image, while oneDNN's kernel keeps each block of it in cache across the
// batch's images. At 7x7, batches of 4 and 8 took 2-6% less time so in resnet18 (1 and 2
// threads; its 512 -> 512 3x3s at batch 8, 2 threads, 4.97 -> 4.1-4.3 ms each), resnet34 4.5%,
// resnet50 at batch 8 1-2%; wide_resnet50_2 at batch 4, whose 1024 -> 1024 weight (38 MB)
// outgrows the L3 either way, 1% slower (AMD EPYC, Zen 5).
#pragma once

#include <cstdint>
#include <optional>

#include "ops/core/worker_pool.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/blocked_gemm.h"

namespace srt::ops::conv_gemm {

// Output pixels of a batch up to which the product runs instead of oneDNN's kernel: the blocked
// GEMM's rows.
constexpr int64_t kMaxPixels = kBlockedGemmMaxRows;

// out[n, oh, ow, :] = activation(bias + residual[n, oh, ow, :] + the convolution's sum), all
// float32 and channels last (dense [N, H, W, C]).
struct SmallImageConv {
  const float* src = nullptr; // [batch, height, width, channels]
  int64_t batch = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0}; // top, left (and bottom, right)
  int64_t dilation[2] = {1, 1};
  int64_t out_height = 0;
  int64_t out_width = 0;
  int64_t out_channels = 0;
  // Blocks of block_width output channels (16, 32, 48 or 64), block_stride floats apart, each a
  // row-major [kernel[0] * kernel[1] * channels, block_width] matrix with rows in (kh, kw, c)
  // order: oneDNN's Acdb16a ... Acdb64a.
  const float* weight = nullptr;
  int64_t block_width = 0;
  int64_t block_stride = 0;
  const float* bias = nullptr;     // out_channels floats, or nullptr
  const float* residual = nullptr; // like out, or nullptr
  std::optional<vec::UnaryOp> activation;
  vec::Params params;   // the activation's (a clamp's bounds)
  float* out = nullptr; // [batch, out_height, out_width, out_channels]
};

// Floats of scratch run() needs: one image's gathered windows, or none where the product reads
// the input in place (1x1, stride 1, no padding).
int64_t scratchFloats(const SmallImageConv& conv);

// The convolution, image by image, each product split over the intra-op threads when it pays (the
// runtime's `workers` where it has them, else OpenMP's). Requires blockedGemmRuns() and
// out_height * out_width <= kMaxPixels.
void run(const SmallImageConv& conv, float* scratch, WorkerPool* workers);

} // namespace srt::ops::conv_gemm
