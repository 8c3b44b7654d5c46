// Activations in oneDNN's channel-blocked layout between the convolutions of a network
// (passes/blocked_layout.cpp): a blocked tensor of the NCHW tensor x [N, C, H, W] is the
// contiguous [N, ceil(C / 16), H, W, 16] holding channel c at block c / 16, lane c % 16 (nChw16c).
// The lanes past C are padding: zeros where a conversion made them, whatever a convolution's
// epilogue makes of zeros elsewhere (always finite), and never read as channels. Element-wise ops
// compute on blocked tensors lane by lane as ATen's on any tensor, so only convolutions, the
// conversions, global pooling and size queries need ops of their own:
//   srt::to_blocked(Tensor x) -> Tensor                      [N, C, H, W] -> blocked
//   srt::from_blocked(Tensor x, int channels) -> Tensor      blocked -> [N, C, H, W], channels last
//   srt::blocked_sizes(Tensor x, int channels) -> int[]      [N, C, H, W] of a blocked tensor
//   srt::blocked_global_avg_pool(Tensor x) -> Tensor          x.mean([2, 3], keepdim=True)
//   srt::blocked_max_pool2d(Tensor x, kernel, ...) -> Tensor  max_pool2d (ops/conv/pooling.cpp)
// and a concatenation along channels of blocked tensors of whole blocks (all but the last) is
// srt::variadic_cat(..., 1) on them as they are.
//   srt::blocked_conv2d(...)                                  ops/conv/packed_conv.h
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace srt::ops {

// [N, C, H, W] -> [N, ceil(C / 16), H, W, 16].
std::vector<int64_t> blockedSizes(at::IntArrayRef plain_sizes);

// Whether `x` is a float32 blocked tensor of `channels` channels that kernels can read directly.
bool isBlocked(const at::Tensor& x, int64_t channels);

// The conversions as ATen computes them: the ops' reference (what the JIT runs).
at::Tensor toBlocked(const at::Tensor& x);
at::Tensor fromBlocked(const at::Tensor& x, int64_t channels);

// NCHW (any number of spatial dims, `pixels` per channel) float32 images, each dense and
// `image_stride` floats after the one before (channels * pixels, or more for a range of a larger
// batch's channels), into the blocked layout at `out` ([images][ceil(channels / 16)][pixels][16],
// padding lanes zeroed), on the calling thread: each block a tiled transpose of its 16 planes
// (ops/shapes/transpose_copy.h). oneDNN's reorder between these layouts ran at a third of the
// speed (ShuffleNet's channel halves, [1, 58, 28, 28]: 10 against 3 us; [8, 116, 14, 14] read
// from its [8, 232, 14, 14] batch: 44 us).
void planesIntoBlocks(const float* in, float* out, int64_t images, int64_t channels, int64_t pixels,
                      int64_t image_stride);

} // namespace srt::ops
