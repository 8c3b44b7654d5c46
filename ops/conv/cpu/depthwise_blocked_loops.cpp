// ops/conv/depthwise_blocked.h's loop. cmake/CpuKernels.cmake builds every ops/*/cpu/ file once
// per capability; this loop keeps a 16-channel block in one vector, so only the AVX-512 build
// defines it (ops/conv/depthwise_blocked.cpp calls it on AVX-512 CPUs only).
#include <algorithm>
#include <array>
#include <utility>

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/cpu/blocked_activation.h"
#include "ops/conv/depthwise_blocked.h"
#include "ops/elementwise/cpu/partial_vectors.h"

#if defined(CPU_CAPABILITY_AVX512)

// GCC 12 flags the _mm512_undefined_ps inside _mm512_max_ps once inlined into these loops (as
// cmake/CpuKernels.cmake says of ATen's headers).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace srt::ops::depthwise {
inline namespace CPU_CAPABILITY {

namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kBlock = 16;
static_assert(Vec::size() == kBlock, "one 16-channel block a vector");

using BlockLoop = void (*)(const BlockedDepthwiseConv&, const float*, const float*, Vec, float*);

// One channel block of one image, input rows W wide, stride S, kernel K: each output row's
// accumulators in registers, taps outside the image dropped at compile time along the row.
template <int K, int S, int W>
void blockRows(const BlockedDepthwiseConv& conv, const float* src, const float* weight, Vec bias,
               float* out) {
  constexpr int P = K / 2;
  constexpr int OW = (W + 2 * P - K) / S + 1;
  const int64_t height = conv.height;
  const int64_t out_height = (height + 2 * P - K) / S + 1;
  for (int64_t oh = 0; oh < out_height; ++oh) {
    Vec acc[OW];
    for (int ow = 0; ow < OW; ++ow) {
      acc[ow] = bias;
    }
    for (int kh = 0; kh < K; ++kh) {
      const int64_t ih = oh * S + kh - P;
      if (ih < 0 || ih >= height) {
        continue;
      }
      const float* row = src + ih * W * kBlock;
      for (int kw = 0; kw < K; ++kw) {
        const Vec w = Vec::loadu(weight + (kh * K + kw) * kBlock);
        for (int ow = 0; ow < OW; ++ow) {
          const int iw = ow * S + kw - P;
          if (iw >= 0 && iw < W) {
            acc[ow] = at::vec::fmadd(Vec::loadu(row + iw * kBlock), w, acc[ow]);
          }
        }
      }
    }
    const pointwise::PointwiseActivation activation = conv.activation;
    for (int ow = 0; ow < OW; ++ow) {
      pointwise::activate(acc[ow], activation).store(out + (oh * OW + ow) * kBlock);
    }
  }
}

// Input widths 1 ... kMaxWidth<S>: output rows of at most kMaxOutputWidth.
template <int S> constexpr int kMaxWidth = static_cast<int>(kMaxOutputWidth) * S;

template <int K, int S, int... Widths>
constexpr std::array<BlockLoop, sizeof...(Widths)> loopsOf(std::integer_sequence<int, Widths...>) {
  return {&blockRows<K, S, Widths + 1>...};
}

template <int K, int S> BlockLoop loopFor(int64_t width) {
  static constexpr auto loops = loopsOf<K, S>(std::make_integer_sequence<int, kMaxWidth<S>>());
  return width >= 1 && width <= kMaxWidth<S> ? loops[width - 1] : nullptr;
}

BlockLoop blockLoop(int64_t kernel, int64_t stride, int64_t width) {
  if (kernel == 3) {
    return stride == 1 ? loopFor<3, 1>(width) : stride == 2 ? loopFor<3, 2>(width) : nullptr;
  }
  if (kernel == 5) {
    return stride == 1 ? loopFor<5, 1>(width) : stride == 2 ? loopFor<5, 2>(width) : nullptr;
  }
  return nullptr;
}

} // namespace

bool blockedDepthwiseLoopRuns(int64_t kernel, int64_t stride, int64_t width) {
  return blockLoop(kernel, stride, width) != nullptr;
}

void runBlockedDepthwiseLoop(const BlockedDepthwiseConv& conv, int64_t first_block,
                             int64_t last_block) {
  const BlockLoop loop = blockLoop(conv.kernel, conv.stride, conv.width);
  const int64_t pad = conv.kernel / 2;
  const int64_t out_height = (conv.height + 2 * pad - conv.kernel) / conv.stride + 1;
  const int64_t out_width = (conv.width + 2 * pad - conv.kernel) / conv.stride + 1;
  for (int64_t block = first_block; block < last_block; ++block) {
    const int64_t first = block * kBlock;
    const int64_t count = std::min<int64_t>(conv.channels - first, kBlock);
    const Vec bias = conv.bias == nullptr ? Vec(0.f) : vec::loadUpTo(conv.bias + first, count);
    loop(conv, conv.src + block * conv.height * conv.width * kBlock,
         conv.weight + block * conv.kernel * conv.kernel * kBlock, bias,
         conv.out + block * out_height * out_width * kBlock);
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::depthwise

#endif
