// The transformed weight of ops/conv/strided_winograd.h, the bands a range of tile rows runs in,
// and the call of ops/conv/cpu/strided_winograd_loops.cpp's AVX-512 build.
#include "ops/conv/strided_winograd.h"

#include <algorithm>
#include <string_view>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::strided_winograd {

namespace AVX512 {
void runStridedWinogradLoop(const StridedWinogradConv& conv, float* scratch, int64_t first_tile_row,
                            int64_t last_tile_row, int64_t band_rows);
} // namespace AVX512

namespace {

constexpr int64_t kBlock = 16;
// Products per tile, the rows of all the GEMMs per tile: 25 + 5 x 4 + 5 x 4 + 16.
constexpr int64_t kRowsPerTile = 81;
// A band's transformed inputs and products together, in floats: 384 KiB, within the 1 MB L2 of
// the AMD EPYC (Zen 5) and Intel Xeon cores measured, beside the transformed weight's working set.
constexpr int64_t kBandFloats = 96 * 1024;

// F(4, 2)'s weight transform, the 2-tap filter g (offset -1, offset 0 of the odd row pairs) at the
// points 0, 1, -1, 2 and infinity, each row scaled so that the input transform's (the loop's)
// coefficients are small integers.
constexpr double kG[5][2] = {
    {0.5, 0.0}, {0.5, 0.5}, {1.0 / 6.0, -1.0 / 6.0}, {1.0 / 6.0, 1.0 / 3.0}, {0.0, 1.0}};

int64_t roundUp(int64_t value) {
  return (value + kBlock - 1) / kBlock * kBlock;
}

// Tile rows a band holds: as many as kBandFloats takes, at least one.
int64_t bandRows(const StridedWinogradConv& conv) {
  const int64_t tiles_per_row = (outputSize(conv.width) + kTile - 1) / kTile;
  const int64_t row_floats =
      kRowsPerTile * tiles_per_row * (roundUp(conv.in_channels) + roundUp(conv.out_channels));
  return std::clamp<int64_t>(kBandFloats / row_floats, 1, strided_winograd::tileRows(conv));
}

} // namespace

int64_t transformedWeightFloats(int64_t in_channels, int64_t out_channels) {
  return kMatrices * roundUp(out_channels) * roundUp(in_channels);
}

void transformWeight(const float* weight, int64_t out_channels, int64_t in_channels, float* out) {
  const int64_t in_padded = roundUp(in_channels);
  const int64_t matrix = roundUp(out_channels) * in_padded;
  std::fill(out, out + kMatrices * matrix, 0.f);
  // The taps of a 2-tap direction: kernel index 0 (offset -1) and 2 (offset 0 of the odd rows).
  constexpr int kTap[2] = {0, 2};
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < in_channels; ++c) {
      const float* w = weight + (o * in_channels + c) * 9;
      auto at = [&](int kh, int kw) { return static_cast<double>(w[kh * 3 + kw]); };
      float* cell = out + (o / kBlock) * in_padded * kBlock + c * kBlock + o % kBlock;
      for (int a = 0; a < 5; ++a) {
        double rows = 0.0;    // odd rows, centre column
        double columns = 0.0; // centre row, odd columns
        for (int p = 0; p < 2; ++p) {
          rows += kG[a][p] * at(kTap[p], 1);
          columns += kG[a][p] * at(1, kTap[p]);
        }
        cell[(25 + a) * matrix] = static_cast<float>(rows);
        cell[(30 + a) * matrix] = static_cast<float>(columns);
        for (int b = 0; b < 5; ++b) {
          double both = 0.0;
          for (int p = 0; p < 2; ++p) {
            for (int q = 0; q < 2; ++q) {
              both += kG[a][p] * kG[b][q] * at(kTap[p], kTap[q]);
            }
          }
          cell[(a * 5 + b) * matrix] = static_cast<float>(both);
        }
      }
      cell[35 * matrix] = w[4];
    }
  }
}

int64_t scratchFloats(const StridedWinogradConv& conv) {
  const int64_t tiles_per_row = (outputSize(conv.width) + kTile - 1) / kTile;
  return kRowsPerTile * bandRows(conv) * tiles_per_row *
         (roundUp(conv.in_channels) + roundUp(conv.out_channels));
}

void runStridedWinograd(const StridedWinogradConv& conv, float* scratch, int64_t first_tile_row,
                        int64_t last_tile_row) {
  AVX512::runStridedWinogradLoop(conv, scratch, first_tile_row, last_tile_row, bandRows(conv));
}

bool stridedWinogradAvailable() {
  static const bool available = std::string_view(vec::widestCapability()) == "AVX512";
  return available;
}

} // namespace srt::ops::strided_winograd
