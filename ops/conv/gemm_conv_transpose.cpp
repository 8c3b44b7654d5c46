#include "ops/conv/gemm_conv_transpose.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/threads.h"
#include "ops/shapes/transpose_copy.h"

namespace srt::ops {
namespace {

// The products of a band of input rows at a time: at most this many floats of blocks in scratch
// (4 MB), so that a large image's blocks do not take a scratch block the size of their sum.
constexpr int64_t kMostBandFloats = int64_t{1} << 20;

// The layer's constant shape: kernel, stride, padding and output padding per spatial dim.
struct Geometry {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel[2] = {};
  int64_t stride[2] = {};
  int64_t padding[2] = {};
  int64_t output_padding[2] = {};
  // Each output pixel is one block's (kernel = stride, no padding): blocks are copied, the bias
  // added by the GEMM; else blocks are added onto the bias.
  bool disjoint = false;
};

// Per runtime: the GEMM of a full band of input rows, and of the last, shorter one.
struct GemmConvTransposeState final : NodeState {
  OneDnnGemmSlot full;
  OneDnnGemmSlot tail;
};

class GemmConvTranspose {
public:
  GemmConvTranspose(std::shared_ptr<const OneDnnPackedWeight> weight, at::Tensor bias,
                    at::Tensor block_bias, Geometry geometry, KernelFunction fallback)
      : weight_(std::move(weight)), bias_(std::move(bias)), block_bias_(std::move(block_bias)),
        g_(geometry), fallback_(std::move(fallback)) {}

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(0).toTensor();
    // Laid out as ATen lays out its result: channels last where the input suggests it (an input
    // contiguous both ways, [N, C, 1, 1], is taken as NCHW).
    const bool channels_last = x.dim() == 4 &&
                               x.suggest_memory_format() == at::MemoryFormat::ChannelsLast &&
                               x.is_contiguous(at::MemoryFormat::ChannelsLast);
    if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.dim() != 4 ||
        x.size(1) != g_.in_channels || x.numel() == 0 || x.is_neg() ||
        !(channels_last || x.is_contiguous())) {
      fallback_(p);
      return;
    }
    const int64_t batch = x.size(0);
    const int64_t in_size[2] = {x.size(2), x.size(3)};
    int64_t out_size[2];
    for (int d = 0; d < 2; ++d) {
      out_size[d] =
          (in_size[d] - 1) * g_.stride[d] - 2 * g_.padding[d] + g_.kernel[d] + g_.output_padding[d];
      if (out_size[d] <= 0) {
        fallback_(p); // ATen's error
        return;
      }
    }
    const int64_t width = in_size[1];
    const int64_t block = g_.kernel[0] * g_.kernel[1] * g_.out_channels; // one input pixel's
    // Bands of the batch's input rows (image after image: a band may end one image and start
    // the next, so a batch of small images is one GEMM, reading the weight once).
    const int64_t input_rows = batch * in_size[0];
    const int64_t band = std::clamp<int64_t>(kMostBandFloats / (width * block), 1, input_rows);
    const int64_t tail = input_rows % band;
    const bool has_bias = g_.disjoint && block_bias_.defined();
    auto& state = p.state<GemmConvTransposeState>();
    // One thread count for both GEMMs, which share the scratchpad.
    const OneDnnThreads threads(band * width * g_.in_channels * block);
    const std::optional<size_t> full_pad =
        state.full.prepare(*weight_, band * width, has_bias, threads);
    const std::optional<size_t> tail_pad =
        tail > 0 ? state.tail.prepare(*weight_, tail * width, has_bias, threads) : size_t{0};
    if (!full_pad || !tail_pad) {
      fallback_(p);
      return;
    }
    // Scratch: [blocks | oneDNN's scratchpad | for an NCHW input, it and the result channels
    // last], the input transposed before and the result after (as ATen's, the output is laid out
    // as the input).
    const int64_t out_pixels = out_size[0] * out_size[1];
    const size_t blocks_bytes =
        alignScratchOffset(static_cast<size_t>(band * width * block) * sizeof(float));
    const size_t pad_bytes = alignScratchOffset(std::max(*full_pad, *tail_pad));
    const size_t input_bytes =
        channels_last ? 0 : alignScratchOffset(static_cast<size_t>(x.numel()) * sizeof(float));
    const size_t result_bytes =
        channels_last ? 0
                      : static_cast<size_t>(batch * out_pixels * g_.out_channels) * sizeof(float);
    char* scratch =
        static_cast<char*>(p.scratch(blocks_bytes + pad_bytes + input_bytes + result_bytes));
    auto* blocks = reinterpret_cast<float*>(scratch);
    void* scratchpad = scratch + blocks_bytes;

    at::Tensor& out = outputTensor(p, 0, x.options());
    at::native::resize_(out, {batch, g_.out_channels, out_size[0], out_size[1]},
                        channels_last ? at::MemoryFormat::ChannelsLast
                                      : at::MemoryFormat::Contiguous);
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    if (!channels_last) {
      auto* input = reinterpret_cast<float*>(scratch + blocks_bytes + pad_bytes);
      transposeMatrices(in, input, batch, g_.in_channels, in_size[0] * width, p.workers());
      in = input;
      o = reinterpret_cast<float*>(scratch + blocks_bytes + pad_bytes + input_bytes);
    }
    const int64_t out_row = out_size[1] * g_.out_channels; // floats
    if (!g_.disjoint) {
      fillWithBias(o, batch * out_size[0] * out_size[1], p.workers());
    }
    const float* gemm_bias = has_bias ? block_bias_.data_ptr<float>() : nullptr;
    for (int64_t band_first = 0; band_first < input_rows; band_first += band) {
      const int64_t band_rows = std::min(band, input_rows - band_first);
      OneDnnGemmSlot& gemm = band_rows == band ? state.full : state.tail;
      gemm.run(p, in + band_first * width * g_.in_channels, gemm_bias, blocks, scratchpad);
      // The band's rows of each image it holds.
      for (int64_t n = band_first / in_size[0]; n * in_size[0] < band_first + band_rows; ++n) {
        const int64_t first = std::max(band_first, n * in_size[0]);
        const int64_t last = std::min(band_first + band_rows, (n + 1) * in_size[0]);
        const float* image_blocks = blocks + (first - band_first) * width * block;
        float* image = o + n * out_size[0] * out_row;
        if (g_.disjoint) {
          copyBlocks(image_blocks, first - n * in_size[0], last - first, width, image, out_size[1],
                     p.workers());
        } else {
          addBlocks(image_blocks, first - n * in_size[0], last - first, width, image, out_size,
                    p.workers());
        }
      }
    }
    if (!channels_last) {
      transposeMatrices(o, out.data_ptr<float>(), batch, out_pixels, g_.out_channels, p.workers());
    }
  }

private:
  // Every output pixel set to the bias (or zero).
  void fillWithBias(float* out, int64_t pixels, WorkerPool* workers) const {
    const int64_t c = g_.out_channels;
    const float* bias = bias_.defined() ? bias_.data_ptr<float>() : nullptr;
    const double cost = static_cast<double>(pixels * c) * kNanosecondsPerCopiedElement;
    splitIfWorthIt(workers, pixels, 1, cost, [&](int64_t begin, int64_t end) {
      for (int64_t pixel = begin; pixel < end; ++pixel) {
        if (bias != nullptr) {
          std::memcpy(out + pixel * c, bias, static_cast<size_t>(c) * sizeof(float));
        } else {
          std::fill_n(out + pixel * c, c, 0.f);
        }
      }
    });
  }

  // Disjoint blocks: input pixel (h, w)'s block row i is output row h * kh + i's pixels w * kw
  // ... w * kw + kw - 1, kw * C_out contiguous floats on both sides.
  void copyBlocks(const float* blocks, int64_t first, int64_t rows, int64_t width, float* image,
                  int64_t out_width, WorkerPool* workers) const {
    const int64_t block = g_.kernel[0] * g_.kernel[1] * g_.out_channels;
    const int64_t run = g_.kernel[1] * g_.out_channels;
    const size_t run_bytes = static_cast<size_t>(run) * sizeof(float);
    const double cost = static_cast<double>(rows * width * block) * kNanosecondsPerCopiedElement;
    splitIfWorthIt(workers, rows, 1, cost, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* source = blocks + r * width * block;
        for (int64_t i = 0; i < g_.kernel[0]; ++i) {
          float* target = image + ((first + r) * g_.kernel[0] + i) * out_width * g_.out_channels;
          for (int64_t w = 0; w < width; ++w) {
            std::memcpy(target + w * run, source + w * block + i * run, run_bytes);
          }
        }
      }
    });
  }

  // Overlapping blocks, added into the output rows the band's input rows [first, first + rows)
  // reach, split over those output rows (two input rows may reach one output row, never two
  // threads).
  void addBlocks(const float* blocks, int64_t first, int64_t rows, int64_t width, float* image,
                 const int64_t* out_size, WorkerPool* workers) const {
    const int64_t c = g_.out_channels;
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1];
    const int64_t sh = g_.stride[0], sw = g_.stride[1];
    const int64_t ph = g_.padding[0], pw = g_.padding[1];
    const int64_t block = kh * kw * c;
    const int64_t y_begin = std::max<int64_t>(first * sh - ph, 0);
    const int64_t y_end = std::min<int64_t>((first + rows - 1) * sh - ph + kh, out_size[0]);
    if (y_end <= y_begin) {
      return;
    }
    const double cost = static_cast<double>(rows * width * block) * kNanosecondsPerElement;
    splitIfWorthIt(workers, y_end - y_begin, 1, cost, [&](int64_t begin, int64_t end) {
      for (int64_t y = y_begin + begin; y < y_begin + end; ++y) {
        float* target_row = image + y * out_size[1] * c;
        // Input rows h with y = h * sh - ph + i for a kernel row i in [0, kh).
        const int64_t h_last = std::min(first + rows - 1, (y + ph) / sh);
        for (int64_t h = h_last; h >= first && y + ph - h * sh < kh; --h) {
          const int64_t i = y + ph - h * sh;
          const float* source_row = blocks + (h - first) * width * block + i * kw * c;
          for (int64_t w = 0; w < width; ++w) {
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t x = w * sw - pw + j;
              if (x < 0 || x >= out_size[1]) {
                continue;
              }
              float* target = target_row + x * c;
              const float* source = source_row + w * block + j * c;
              for (int64_t k = 0; k < c; ++k) {
                target[k] += source[k];
              }
            }
          }
        }
      }
    });
  }

  std::shared_ptr<const OneDnnPackedWeight> weight_; // [C_in, kh * kw * C_out]
  at::Tensor bias_;                                  // [C_out] or undefined
  at::Tensor block_bias_;                            // the bias once per block position
  Geometry g_;
  KernelFunction fallback_;
};

} // namespace

std::optional<KernelFunction> makeGemmConvTransposeKernel(const at::Tensor& weight,
                                                          const at::Tensor& bias,
                                                          const ConvArguments& arguments,
                                                          MultiplyPrecision precision,
                                                          KernelFunction fallback) {
  const ConvArguments& a = arguments;
  if (a.spatial_dims != 2 || !a.transposed || a.groups != 1 || weight.dim() != 4 ||
      weight.scalar_type() != at::kFloat || weight.numel() == 0 ||
      (bias.defined() && (bias.scalar_type() != at::kFloat || bias.numel() != weight.size(1)))) {
    return std::nullopt;
  }
  Geometry g;
  g.in_channels = weight.size(0);
  g.out_channels = weight.size(1);
  g.disjoint = true;
  for (int d = 0; d < 2; ++d) {
    if (a.dilation[d] != 1) {
      return std::nullopt;
    }
    g.kernel[d] = weight.size(2 + d);
    g.stride[d] = a.stride[d];
    g.padding[d] = a.padding[d];
    g.output_padding[d] = a.output_padding[d];
    g.disjoint =
        g.disjoint && g.kernel[d] == g.stride[d] && g.padding[d] == 0 && g.output_padding[d] == 0;
  }
  // Column (i * kw + j) * C_out + o of the GEMM's right operand is weight[:, o, i, j].
  auto packed =
      packOneDnnWeight(weight.permute({0, 2, 3, 1})
                           .reshape({g.in_channels, g.kernel[0] * g.kernel[1] * g.out_channels}));
  if (packed == nullptr) {
    return std::nullopt;
  }
  if (precision != MultiplyPrecision::kFloat32) {
    if (auto repacked = repackOneDnnWeight(*packed, precision)) {
      packed = std::move(repacked);
    }
  }
  const at::Tensor plain_bias = bias.defined() ? bias.contiguous() : at::Tensor();
  const at::Tensor block_bias =
      bias.defined() ? plain_bias.repeat({g.kernel[0] * g.kernel[1]}) : at::Tensor();
  return KernelFunction(
      GemmConvTranspose(std::move(packed), plain_bias, block_bias, g, std::move(fallback)));
}

} // namespace srt::ops
