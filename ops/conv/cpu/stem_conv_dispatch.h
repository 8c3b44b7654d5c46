// What ops/conv/stem_conv.h's two loops (stem_conv_loops.cpp at stride 2, stem_winograd_loops.cpp
// at stride 1) share: their instantiation per input channel count, and an output block's lanes and
// bias. AVX-512 only, as the loops are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "ops/conv/stem_conv.h"

#if defined(CPU_CAPABILITY_AVX512)

namespace srt::ops::stem_conv {
inline namespace CPU_CAPABILITY {

// body(std::integral_constant<int, in_channels>{}): the loops keep every input channel's taps
// unrolled, so each channel count is its own instantiation.
template <typename Body> void withInChannels(int64_t in_channels, const Body& body) {
  static_assert(kMaxInChannels == 4, "an instantiation for every channel count");
  switch (in_channels) {
  case 1:
    body(std::integral_constant<int, 1>{});
    break;
  case 2:
    body(std::integral_constant<int, 2>{});
    break;
  case 3:
    body(std::integral_constant<int, 3>{});
    break;
  default:
    body(std::integral_constant<int, 4>{});
    break;
  }
}

// Output block `block` of 16 channels: the lanes a store writes (channels last: only the
// convolution's channels; blocked: all 16, padding lanes included) and its bias (zero without).
struct OutputBlock {
  __mmask16 lanes;
  __m512 bias;
};

inline OutputBlock outputBlock(const StemConv& conv, int64_t block) {
  constexpr int64_t kBlock = 16;
  const int64_t channel = block * kBlock;
  const auto channels =
      static_cast<__mmask16>((1u << std::min(kBlock, conv.out_channels - channel)) - 1u);
  return {conv.channels_last_out ? channels : static_cast<__mmask16>(0xffff),
          conv.bias != nullptr ? _mm512_maskz_loadu_ps(channels, conv.bias + channel)
                               : _mm512_setzero_ps()};
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::stem_conv

#endif // CPU_CAPABILITY_AVX512
