// An image times one factor per channel (squeeze-excitation's scaling): recognising the factors
// and multiplying, for aten::mul (ops/elementwise/binary_arithmetic.cpp) and the convolutions that
// take the product as their input (ops/conv/onednn_conv.h).
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

#include "ops/core/worker_pool.h"

namespace srt::ops {

// The factors of a scale that multiplies each channel of a 2-D float32 image, per image or shared
// by the batch: image i's row of factors starts at factors + i * row_length (shared: rows == 1),
// one float per channel (row_length C), or for a channel-blocked image ([N, B, H, W, 16]) 16 per
// block (B * 16, its padding lanes included).
struct ChannelScale {
  const float* factors = nullptr;
  int64_t rows = 1;
  int64_t row_length = 0;
};

// `scale` as a ChannelScale for `image` (4-D, or 5-D channel-blocked): float32 on the CPU, of the
// image's rank, [N or 1, C, 1, 1] (blocked [N or 1, B, 1, 1, 16]) with its channels and rows dense,
// its pixel dims of one or broadcast (stride 0, as `y.expand_as(x)` gives); else nullopt.
std::optional<ChannelScale> channelScale(const at::Tensor& image, const at::Tensor& scale);

// out = image * scale over a dense float32 image (contiguous NCHW, channels last, or blocked),
// `out` laid out as the image; one product per element, so ATen's bits. Split over the intra-op
// threads as vec::map splits (`workers` as there).
void scaleChannels(const at::Tensor& image, const ChannelScale& scale, float* out,
                   WorkerPool* workers);

} // namespace srt::ops
