// The packed weight of ops/conv/stem_conv.h and the call of ops/conv/cpu/stem_conv_loops.cpp's
// AVX-512 build.
#include "ops/conv/stem_conv.h"

#include <algorithm>
#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::stem_conv {

namespace AVX512 {
void runStemConvLoop(const StemConv& conv, int64_t first_row, int64_t last_row);
} // namespace AVX512

namespace {

constexpr int64_t kBlock = 16;

int64_t blocks(int64_t channels) {
  return (channels + kBlock - 1) / kBlock;
}

} // namespace

int64_t packedWeightFloats(int64_t in_channels, int64_t out_channels) {
  return blocks(out_channels) * in_channels * kKernel * kKernel * kBlock;
}

void packWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out) {
  constexpr int64_t kTaps = kKernel * kKernel;
  std::fill(out, out + packedWeightFloats(in_channels, out_channels), 0.f);
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < in_channels; ++c) {
      for (int64_t tap = 0; tap < kTaps; ++tap) {
        out[((o / kBlock * in_channels + c) * kTaps + tap) * kBlock + o % kBlock] =
            weight[(o * in_channels + c) * kTaps + tap];
      }
    }
  }
}

bool stemConvRuns(int64_t in_channels, int64_t stride, int64_t padding) {
  return in_channels >= 1 && in_channels <= kMaxInChannels && (stride == 1 || stride == 2) &&
         padding >= 0 && padding < kKernel;
}

void runStemConv(const StemConv& conv, int64_t first_row, int64_t last_row) {
  AVX512::runStemConvLoop(conv, first_row, last_row);
}

bool stemConvAvailable() {
  static const bool available = std::string_view(vec::widestCapability()) == "AVX512";
  return available;
}

} // namespace srt::ops::stem_conv
