// Calls ops/conv/cpu/pointwise_blocked_loops.cpp's AVX-512 build on CPUs that have it.
#include "ops/conv/pointwise_blocked.h"

#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::pointwise {

namespace AVX512 {
void runBlockedPointwiseLoop(const BlockedPointwiseConv& conv, int64_t first_block,
                             int64_t last_block);
} // namespace AVX512

void runBlockedPointwise(const BlockedPointwiseConv& conv, int64_t first_block,
                         int64_t last_block) {
  AVX512::runBlockedPointwiseLoop(conv, first_block, last_block);
}

bool blockedPointwiseAvailable() {
  static const bool available = std::string_view(vec::widestCapability()) == "AVX512";
  return available;
}

} // namespace srt::ops::pointwise
