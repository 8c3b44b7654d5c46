#include "ops/elementwise/channel_scale.h"

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

std::optional<ChannelScale> channelScale(const at::Tensor& image, const at::Tensor& scale) {
  const bool blocked = image.dim() == 5;
  if (scale.scalar_type() != at::kFloat || !scale.device().is_cpu() || scale.is_neg() ||
      scale.dim() != image.dim() || (image.dim() != 4 && !blocked) ||
      scale.size(1) != image.size(1)) {
    return std::nullopt;
  }
  // Channels dense: one after the other, or blocks of 16 lanes.
  const int64_t lanes = blocked ? image.size(4) : 1;
  if ((scale.size(1) > 1 && scale.stride(1) != lanes) ||
      (blocked && (scale.size(4) != lanes || scale.stride(4) != 1))) {
    return std::nullopt;
  }
  for (int d = 2; d < 4; ++d) {
    if (scale.size(d) != 1 && (scale.size(d) != image.size(d) || scale.stride(d) != 0)) {
      return std::nullopt;
    }
  }
  ChannelScale factors;
  factors.factors = static_cast<const float*>(scale.data_ptr());
  factors.row_length = image.size(1) * lanes;
  if (scale.size(0) > 1 && scale.stride(0) != 0) {
    if (scale.size(0) != image.size(0) || scale.stride(0) != factors.row_length) {
      return std::nullopt;
    }
    factors.rows = scale.size(0);
  } else if (scale.size(0) != 1 && scale.size(0) != image.size(0)) {
    return std::nullopt;
  }
  return factors;
}

void scaleChannels(const at::Tensor& image, const ChannelScale& scale, float* out,
                   WorkerPool* workers) {
  const float* x = static_cast<const float*>(image.data_ptr());
  const int64_t images = image.size(0);
  const int64_t pixels = image.size(2) * image.size(3);
  if (image.dim() == 5) { // [N, B, H, W, 16]: per image and block, rows of 16 lanes
    const int64_t blocks = image.size(1);
    vec::scaleRows(x, scale.factors, scale.rows * blocks, out, images * blocks, pixels,
                   image.size(4), workers);
  } else if (!image.is_contiguous()) { // channels last: per image, rows of C channels
    vec::scaleRows(x, scale.factors, scale.rows, out, images, pixels, image.size(1), workers);
  } else { // NCHW: a plane per image and channel
    const int64_t channels = image.size(1);
    for (int64_t plane = 0; plane < images * channels; ++plane) {
      const int64_t row = scale.rows > 1 ? plane / channels : 0;
      vec::map(vec::UnaryOp::kMulScalar, x + plane * pixels, out + plane * pixels, pixels,
               {scale.factors[row * scale.row_length + plane % channels]}, workers);
    }
  }
}

} // namespace srt::ops
