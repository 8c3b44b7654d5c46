// Calls ops/conv/cpu/depthwise_blocked_loops.cpp's AVX-512 build on CPUs that have it.
#include "ops/conv/depthwise_blocked.h"

#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::depthwise {

namespace AVX512 {
bool blockedDepthwiseLoopRuns(int64_t kernel, int64_t stride, int64_t width);
void runBlockedDepthwiseLoop(const BlockedDepthwiseConv& conv, int64_t first_block,
                             int64_t last_block);
} // namespace AVX512

bool blockedDepthwiseRuns(int64_t kernel, int64_t stride, int64_t width) {
  static const bool avx512 = std::string_view(vec::widestCapability()) == "AVX512";
  return avx512 && AVX512::blockedDepthwiseLoopRuns(kernel, stride, width);
}

void runBlockedDepthwise(const BlockedDepthwiseConv& conv, int64_t first_block,
                         int64_t last_block) {
  AVX512::runBlockedDepthwiseLoop(conv, first_block, last_block);
}

} // namespace srt::ops::depthwise
