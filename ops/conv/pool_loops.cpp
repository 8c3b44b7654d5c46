// Picks the capability build of ops/conv/cpu/pool_loops.cpp: the widest the CPU has.
#include "ops/conv/pool_loops.h"

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::pooling {

#define SRT_DECLARE_POOL_LOOPS(capability)                                                         \
  namespace capability {                                                                           \
  void maxPoolChannelsLastRowsLoop(const float* image, int64_t in_h, int64_t in_w,                 \
                                   int64_t channels, const WindowAxis& height,                     \
                                   const WindowAxis& width, int64_t out_w, int64_t oy_begin,       \
                                   int64_t oy_end, float* out);                                    \
  void avgPoolChannelsLastRowsLoop(const float* image, int64_t in_h, int64_t in_w,                 \
                                   int64_t channels, const WindowAxis& height,                     \
                                   const WindowAxis& width, const AverageDivisor& divisor,         \
                                   int64_t out_w, int64_t oy_begin, int64_t oy_end, float* out);   \
  }
SRT_DECLARE_POOL_LOOPS(DEFAULT)
SRT_DECLARE_POOL_LOOPS(AVX2)
SRT_DECLARE_POOL_LOOPS(AVX512)
#undef SRT_DECLARE_POOL_LOOPS

namespace {

using MaxPoolRows = decltype(&DEFAULT::maxPoolChannelsLastRowsLoop);

// ResNet's stem pooling (64 x 112 x 112, 3x3 stride 2): 466 us with SSE2 select loops, ATen's
// channels-last kernel 568 us, ONNX Runtime's 270 us.
MaxPoolRows maxPoolRowsLoop() {
  static const MaxPoolRows chosen =
      vec::widestOf(&DEFAULT::maxPoolChannelsLastRowsLoop, &AVX2::maxPoolChannelsLastRowsLoop,
                    &AVX512::maxPoolChannelsLastRowsLoop);
  return chosen;
}

using AvgPoolRows = decltype(&DEFAULT::avgPoolChannelsLastRowsLoop);

AvgPoolRows avgPoolRowsLoop() {
  static const AvgPoolRows chosen =
      vec::widestOf(&DEFAULT::avgPoolChannelsLastRowsLoop, &AVX2::avgPoolChannelsLastRowsLoop,
                    &AVX512::avgPoolChannelsLastRowsLoop);
  return chosen;
}

} // namespace

void avgPoolChannelsLastRows(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
                             const WindowAxis& height, const WindowAxis& width,
                             const AverageDivisor& divisor, int64_t out_w, int64_t oy_begin,
                             int64_t oy_end, float* out) {
  avgPoolRowsLoop()(image, in_h, in_w, channels, height, width, divisor, out_w, oy_begin, oy_end,
                    out);
}

void maxPoolChannelsLastRows(const float* image, int64_t in_h, int64_t in_w, int64_t channels,
                             const WindowAxis& height, const WindowAxis& width, int64_t out_w,
                             int64_t oy_begin, int64_t oy_end, float* out) {
  maxPoolRowsLoop()(image, in_h, in_w, channels, height, width, out_w, oy_begin, oy_end, out);
}

} // namespace srt::ops::pooling
