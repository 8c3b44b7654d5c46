// Picks the capability build of ops/shapes/cpu/interleave_loops.cpp: the widest the CPU has.
#include "ops/shapes/interleave.h"

#include <c10/util/Exception.h>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

#define SRT_DECLARE_INTERLEAVE_LOOPS(capability)                                                   \
  namespace capability {                                                                           \
  void interleavePlanesLoop(const float* planes, float* pixels, int64_t channels, int64_t plane,   \
                            int64_t begin, int64_t end);                                           \
  }
SRT_DECLARE_INTERLEAVE_LOOPS(DEFAULT)
SRT_DECLARE_INTERLEAVE_LOOPS(AVX2)
SRT_DECLARE_INTERLEAVE_LOOPS(AVX512)
#undef SRT_DECLARE_INTERLEAVE_LOOPS

void interleavePlanes(const float* planes, float* pixels, int64_t channels, int64_t plane,
                      int64_t begin, int64_t end) {
  TORCH_CHECK(channels >= 2 && channels <= 4, "interleavePlanes: 2 to 4 channels, got ", channels);
  static const auto loop = vec::widestOf(
      &DEFAULT::interleavePlanesLoop, &AVX2::interleavePlanesLoop, &AVX512::interleavePlanesLoop);
  loop(planes, pixels, channels, plane, begin, end);
}

} // namespace srt::ops
