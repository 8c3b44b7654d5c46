// Picks the capability build of ops/shapes/cpu/interleave_loops.cpp: the widest the CPU has.
#include "ops/shapes/interleave.h"

#include <cstring>

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

namespace {

using InterleaveLoop = decltype(&DEFAULT::interleavePlanesLoop);

InterleaveLoop interleaveLoop() {
  static const InterleaveLoop chosen = [] {
    const char* name = vec::widestCapability();
    if (std::strcmp(name, "AVX512") == 0) {
      return &AVX512::interleavePlanesLoop;
    }
    if (std::strcmp(name, "AVX2") == 0) {
      return &AVX2::interleavePlanesLoop;
    }
    return &DEFAULT::interleavePlanesLoop;
  }();
  return chosen;
}

} // namespace

void interleavePlanes(const float* planes, float* pixels, int64_t channels, int64_t plane,
                      int64_t begin, int64_t end) {
  TORCH_CHECK(channels >= 2 && channels <= 4, "interleavePlanes: 2 to 4 channels, got ", channels);
  interleaveLoop()(planes, pixels, channels, plane, begin, end);
}

} // namespace srt::ops
