// The packed weight of ops/conv/stem_conv.h and the call of its AVX-512 loops: stride 1's
// (ops/conv/cpu/stem_winograd_loops.cpp) or stride 2's (stem_conv_loops.cpp).
#include "ops/conv/stem_conv.h"

#include <algorithm>
#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::stem_conv {

namespace AVX512 {
void runStemConvLoop(const StemConv& conv, int64_t first_row, int64_t last_row);
void runStemWinogradLoop(const StemConv& conv, int64_t first_row, int64_t last_row);
} // namespace AVX512

namespace {

constexpr int64_t kBlock = 16;

int64_t blocks(int64_t channels) {
  return (channels + kBlock - 1) / kBlock;
}

} // namespace

int64_t winogradWeightOffset(int64_t in_channels, int64_t out_channels) {
  return blocks(out_channels) * in_channels * kKernel * kKernel * kBlock;
}

int64_t packedWeightFloats(int64_t in_channels, int64_t out_channels) {
  return winogradWeightOffset(in_channels, out_channels) +
         blocks(out_channels) * in_channels * kKernel * kWinogradPoints * kBlock;
}

void packWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out) {
  // G of F(4, 3): row p is transformed point p's combination of a kernel row's 3 taps.
  static constexpr float kG[kWinogradPoints][kKernel] = {
      {1.f / 4, 0.f, 0.f},           {-1.f / 6, -1.f / 6, -1.f / 6}, {-1.f / 6, 1.f / 6, -1.f / 6},
      {1.f / 24, 1.f / 12, 1.f / 6}, {1.f / 24, -1.f / 12, 1.f / 6}, {0.f, 0.f, 1.f}};
  std::fill(out, out + packedWeightFloats(in_channels, out_channels), 0.f);
  float* winograd = out + winogradWeightOffset(in_channels, out_channels);
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < in_channels; ++c) {
      const int64_t block_channel = o / kBlock * in_channels + c;
      for (int64_t kh = 0; kh < kKernel; ++kh) {
        const float* taps = weight + ((o * in_channels + c) * kKernel + kh) * kKernel;
        for (int64_t kw = 0; kw < kKernel; ++kw) {
          out[((block_channel * kKernel + kh) * kKernel + kw) * kBlock + o % kBlock] = taps[kw];
        }
        for (int64_t p = 0; p < kWinogradPoints; ++p) {
          winograd[((block_channel * kKernel + kh) * kWinogradPoints + p) * kBlock + o % kBlock] =
              kG[p][0] * taps[0] + kG[p][1] * taps[1] + kG[p][2] * taps[2];
        }
      }
    }
  }
}

bool stemConvRuns(int64_t in_channels, int64_t stride, int64_t padding) {
  return in_channels >= 1 && in_channels <= kMaxInChannels && (stride == 1 || stride == 2) &&
         padding >= 0 && padding < kKernel;
}

void runStemConv(const StemConv& conv, int64_t first_row, int64_t last_row) {
  if (conv.stride == 1) {
    AVX512::runStemWinogradLoop(conv, first_row, last_row);
  } else {
    AVX512::runStemConvLoop(conv, first_row, last_row);
  }
}

bool stemConvAvailable() {
  static const bool available = std::string_view(vec::widestCapability()) == "AVX512";
  return available;
}

} // namespace srt::ops::stem_conv
