#include "ops/conv/small_image_gemm.h"

#include <algorithm>
#include <cstring>

namespace srt::ops::conv_gemm {
namespace {

bool readsInputInPlace(const SmallImageConv& conv) {
  for (int i = 0; i < 2; ++i) {
    if (conv.kernel[i] != 1 || conv.stride[i] != 1 || conv.padding[i] != 0) {
      return false;
    }
  }
  return true;
}

int64_t depth(const SmallImageConv& conv) {
  return conv.kernel[0] * conv.kernel[1] * conv.channels;
}

// Image `image`'s windows as rows of `rows` ([out_height * out_width, depth], each in the
// weight's (kh, kw, c) order), zeros where a window reaches into the padding.
void gatherWindows(const SmallImageConv& conv, int64_t image, float* rows) {
  const int64_t c = conv.channels;
  const size_t bytes = static_cast<size_t>(c) * sizeof(float);
  const float* src = conv.src + image * conv.height * conv.width * c;
  for (int64_t oh = 0; oh < conv.out_height; ++oh) {
    for (int64_t ow = 0; ow < conv.out_width; ++ow) {
      for (int64_t kh = 0; kh < conv.kernel[0]; ++kh) {
        const int64_t ih = oh * conv.stride[0] - conv.padding[0] + kh * conv.dilation[0];
        for (int64_t kw = 0; kw < conv.kernel[1]; ++kw) {
          const int64_t iw = ow * conv.stride[1] - conv.padding[1] + kw * conv.dilation[1];
          if (ih < 0 || ih >= conv.height || iw < 0 || iw >= conv.width) {
            std::memset(rows, 0, bytes);
          } else {
            std::memcpy(rows, src + (ih * conv.width + iw) * c, bytes);
          }
          rows += c;
        }
      }
    }
  }
}

} // namespace

int64_t scratchFloats(const SmallImageConv& conv) {
  return readsInputInPlace(conv) ? 0 : conv.out_height * conv.out_width * depth(conv);
}

void run(const SmallImageConv& conv, float* scratch, WorkerPool* workers) {
  const int64_t pixels = conv.out_height * conv.out_width;
  const bool in_place = readsInputInPlace(conv);
  BlockedGemm gemm;
  gemm.lda = in_place ? conv.channels : depth(conv);
  gemm.m = pixels;
  gemm.w = conv.weight;
  gemm.k = depth(conv);
  gemm.n = conv.out_channels;
  gemm.block_stride = conv.block_stride;
  gemm.block_width = conv.block_width;
  gemm.bias = conv.bias;
  gemm.ldo = conv.out_channels;
  gemm.epilogue.activate = conv.activation.has_value();
  gemm.epilogue.activation = conv.activation.value_or(vec::UnaryOp::kRelu);
  gemm.epilogue.activation_params = conv.params;
  gemm.epilogue.residual_ld = conv.out_channels;
  gemm.epilogue.residual_before_activation = true;
  for (int64_t n = 0; n < conv.batch; ++n) {
    if (in_place) {
      gemm.a = conv.src + n * pixels * conv.channels;
    } else {
      gatherWindows(conv, n, scratch);
      gemm.a = scratch;
    }
    gemm.out = conv.out + n * pixels * conv.out_channels;
    gemm.epilogue.residual =
        conv.residual != nullptr ? conv.residual + n * pixels * conv.out_channels : nullptr;
    runBlockedGemm(gemm, workers);
  }
}

} // namespace srt::ops::conv_gemm
