// Picks the capability build of ops/conv/cpu/pointwise_blocked_loops.cpp: the widest the CPU has.
#include "ops/conv/pointwise_blocked.h"

#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::pointwise {

#define SRT_DECLARE_POINTWISE_LOOPS(capability)                                                    \
  namespace capability {                                                                           \
  void runBlockedPointwiseLoop(const BlockedPointwiseConv& conv, int64_t first_block,              \
                               int64_t last_block);                                                \
  }
SRT_DECLARE_POINTWISE_LOOPS(DEFAULT)
SRT_DECLARE_POINTWISE_LOOPS(AVX2)
SRT_DECLARE_POINTWISE_LOOPS(AVX512)
#undef SRT_DECLARE_POINTWISE_LOOPS

void runBlockedPointwise(const BlockedPointwiseConv& conv, int64_t first_block,
                         int64_t last_block) {
  static const auto loop =
      vec::widestOf(&DEFAULT::runBlockedPointwiseLoop, &AVX2::runBlockedPointwiseLoop,
                    &AVX512::runBlockedPointwiseLoop);
  loop(conv, first_block, last_block);
}

bool blockedPointwiseAvailable() {
  static const bool available = std::string_view(vec::widestCapability()) == "AVX512";
  return available;
}

} // namespace srt::ops::pointwise
