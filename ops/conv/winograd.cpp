// The transformed weight of ops/conv/winograd.h, the bands a range of tile rows runs in, and the
// call of ops/conv/cpu/winograd_loops.cpp's AVX-512 build.
#include "ops/conv/winograd.h"

#include <algorithm>
#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::winograd {

namespace AVX512 {
void runWinogradLoop(const WinogradConv& conv, float* scratch, int64_t first_tile,
                     int64_t last_tile, int64_t band_tiles);
} // namespace AVX512

namespace {

constexpr int64_t kBlock = 16;
constexpr int64_t kPoints = 6;
// A band's transformed inputs and products together, in floats: 384 KiB, as the stride-2 loop's
// (ops/conv/strided_winograd.cpp), within a 1 MB L2 beside the transformed weight's working set.
constexpr int64_t kBandFloats = 96 * 1024;

// G of F(4, 3): row p is transformed point p's combination of a kernel row's 3 taps (points 0,
// 1, -1, 2, -2 and infinity; the loop's input and output transforms are B^T and A^T of the same).
constexpr double kG[kPoints][3] = {
    {1.0 / 4, 0.0, 0.0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0.0, 0.0, 1.0}};

int64_t roundUp(int64_t value) {
  return (value + kBlock - 1) / kBlock * kBlock;
}

// Tiles a band holds: as many as kBandFloats takes, at least one.
int64_t bandTiles(const WinogradConv& conv) {
  const int64_t tile_floats = kMatrices * (roundUp(conv.in_channels) + roundUp(conv.out_channels));
  return std::clamp<int64_t>(kBandFloats / tile_floats, 1, tiles(conv));
}

} // namespace

int64_t transformedWeightFloats(int64_t in_channels, int64_t out_channels) {
  return kMatrices * roundUp(out_channels) * roundUp(in_channels);
}

void transformWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out) {
  const int64_t in_padded = roundUp(in_channels);
  const int64_t matrix = roundUp(out_channels) * in_padded;
  std::fill(out, out + kMatrices * matrix, 0.f);
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < in_channels; ++c) {
      const float* w = weight + (o * in_channels + c) * 9;
      // G g: each kernel column transformed down its 3 rows.
      double columns[kPoints][3];
      for (int a = 0; a < kPoints; ++a) {
        for (int kw = 0; kw < 3; ++kw) {
          columns[a][kw] = kG[a][0] * w[kw] + kG[a][1] * w[3 + kw] + kG[a][2] * w[6 + kw];
        }
      }
      float* cell = out + (o / kBlock) * in_padded * kBlock + c * kBlock + o % kBlock;
      for (int a = 0; a < kPoints; ++a) {
        for (int b = 0; b < kPoints; ++b) { // (G g) G^T
          const double value =
              kG[b][0] * columns[a][0] + kG[b][1] * columns[a][1] + kG[b][2] * columns[a][2];
          cell[(a * kPoints + b) * matrix] = static_cast<float>(value);
        }
      }
    }
  }
}

int64_t scratchFloats(const WinogradConv& conv) {
  return kMatrices * bandTiles(conv) * (roundUp(conv.in_channels) + roundUp(conv.out_channels));
}

void runWinograd(const WinogradConv& conv, float* scratch, int64_t first_tile, int64_t last_tile) {
  AVX512::runWinogradLoop(conv, scratch, first_tile, last_tile, bandTiles(conv));
}

bool winogradAvailable() {
  static const bool available = std::string_view(vec::widestCapability()) == "AVX512";
  return available;
}

} // namespace srt::ops::winograd
