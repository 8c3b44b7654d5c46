// Batched matrix transposition into another buffer: the copy between channels-last and
// contiguous layouts, per image a [pixels, channels] <-> [channels, pixels] transpose.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace srt::ops {

class WorkerPool;

// Whether `t` is laid out batch outermost, channels innermost, the other dims in order between
// (NHWC, NDHWC, a 1-D convolution's [N, C, L] with channel stride 1), `channels` x `pixels` per
// image. Size-1 dims may have any stride.
inline bool isChannelsInnermost(const at::Tensor& t, int64_t channels, int64_t pixels) {
  if ((t.size(0) != 1 && t.stride(0) != channels * pixels) || t.stride(1) != 1) {
    return false;
  }
  int64_t expected = channels;
  for (int64_t d = t.dim() - 1; d >= 2; --d) {
    if (t.size(d) != 1 && t.stride(d) != expected) {
      return false;
    }
    expected *= t.size(d);
  }
  return true;
}

// out[b][c][r] = in[b][r][c] for `batch` matrices of `rows` x `cols` float32, walked in square
// tiles (16 x 16, transposed in registers on AVX-512) so that reads and writes both stay within a
// few cache lines per row: a strided copy that walks one side in order strides through the other
// a page per element once both sides are large (ATen's copy_ of [1, 512, 1, 2001] channels last
// into contiguous: 7.2 ms).
void transposeMatrices(const float* in, float* out, int64_t batch, int64_t rows, int64_t cols,
                       WorkerPool* workers);

// out[c][r] = in[r][c] for one rows x cols matrix whose rows are ld_in floats apart, into rows
// ld_out floats apart, on the calling thread, in the same tiles (attention packs each head's keys
// transposed with it).
void transposeMatrix(const float* in, int64_t ld_in, float* out, int64_t ld_out, int64_t rows,
                     int64_t cols);

} // namespace srt::ops
