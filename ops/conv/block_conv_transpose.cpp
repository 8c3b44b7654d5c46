#include "ops/conv/block_conv_transpose.h"

#include <cstring>
#include <memory>

#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace {

class BlockConvTranspose {
public:
  BlockConvTranspose(std::shared_ptr<const OneDnnPackedWeight> weight, at::Tensor bias,
                     int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                     KernelFunction fallback)
      : weight_(std::move(weight)), bias_(std::move(bias)), in_channels_(in_channels),
        out_channels_(out_channels), kernel_h_(kernel_h), kernel_w_(kernel_w),
        fallback_(std::move(fallback)) {}

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(0).toTensor();
    if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.dim() != 4 || x.size(1) != in_channels_ ||
        x.numel() == 0 || !x.is_contiguous(at::MemoryFormat::ChannelsLast) || x.is_neg()) {
      fallback_(p);
      return;
    }
    const int64_t batch = x.size(0);
    const int64_t height = x.size(2);
    const int64_t width = x.size(3);
    const int64_t rows = batch * height * width; // one a pixel, its block's outputs
    const int64_t block = kernel_h_ * kernel_w_ * out_channels_;
    const OneDnnThreads threads(rows * in_channels_ * block);
    const std::optional<size_t> scratchpad =
        prepareOneDnnGemm(p, *weight_, rows, bias_.defined(), threads);
    if (!scratchpad) {
      fallback_(p);
      return;
    }
    const size_t blocks_bytes =
        alignScratchOffset(static_cast<size_t>(rows * block) * sizeof(float));
    auto* blocks = static_cast<float*>(p.scratch(blocks_bytes + *scratchpad));
    runOneDnnGemm(p, x.data_ptr<float>(), bias_.defined() ? bias_.data_ptr<float>() : nullptr,
                  blocks, reinterpret_cast<char*>(blocks) + blocks_bytes);

    // Pixel (n, h, w)'s block row i is output row h * kh + i's pixels w * kw ... w * kw + kw - 1:
    // kw * C_out contiguous floats on both sides.
    const int64_t out_height = height * kernel_h_;
    const int64_t out_width = width * kernel_w_;
    at::Tensor& out = outputTensor(p, 0, x.options());
    at::native::resize_(out, {batch, out_channels_, out_height, out_width},
                        at::MemoryFormat::ChannelsLast);
    float* o = out.data_ptr<float>();
    const int64_t run = kernel_w_ * out_channels_;
    const size_t run_bytes = static_cast<size_t>(run) * sizeof(float);
    const double cost = static_cast<double>(rows * block) * kNanosecondsPerCopiedElement;
    splitIfWorthIt(p.workers(), batch * height, 1, cost, [&](int64_t begin, int64_t end) {
      for (int64_t image_row = begin; image_row < end; ++image_row) {
        const int64_t n = image_row / height;
        const int64_t h = image_row % height;
        const float* source = blocks + image_row * width * block;
        for (int64_t i = 0; i < kernel_h_; ++i) {
          float* target = o + ((n * out_height + h * kernel_h_ + i) * out_width) * out_channels_;
          for (int64_t w = 0; w < width; ++w) {
            std::memcpy(target + w * run, source + w * block + i * run, run_bytes);
          }
        }
      }
    });
  }

private:
  std::shared_ptr<const OneDnnPackedWeight> weight_; // [C_in, kh * kw * C_out]
  at::Tensor bias_;                                  // the bias once per block position
  int64_t in_channels_;
  int64_t out_channels_;
  int64_t kernel_h_;
  int64_t kernel_w_;
  KernelFunction fallback_;
};

} // namespace

std::optional<KernelFunction> makeBlockConvTransposeKernel(const at::Tensor& weight,
                                                           const at::Tensor& bias,
                                                           const ConvArguments& arguments,
                                                           KernelFunction fallback) {
  const ConvArguments& a = arguments;
  if (a.spatial_dims != 2 || !a.transposed || a.groups != 1 || weight.dim() != 4 ||
      weight.scalar_type() != at::kFloat || weight.numel() == 0 ||
      (bias.defined() && (bias.scalar_type() != at::kFloat || bias.numel() != weight.size(1)))) {
    return std::nullopt;
  }
  for (int i = 0; i < 2; ++i) {
    if (a.stride[i] != weight.size(2 + i) || a.padding[i] != 0 || a.output_padding[i] != 0 ||
        a.dilation[i] != 1) {
      return std::nullopt;
    }
  }
  const int64_t in_channels = weight.size(0);
  const int64_t out_channels = weight.size(1);
  const int64_t kernel_h = weight.size(2);
  const int64_t kernel_w = weight.size(3);
  // Column (i * kw + j) * C_out + o of the GEMM's right operand is weight[:, o, i, j].
  auto packed = packOneDnnWeight(
      weight.permute({0, 2, 3, 1}).reshape({in_channels, kernel_h * kernel_w * out_channels}));
  if (packed == nullptr) {
    return std::nullopt;
  }
  at::Tensor block_bias = bias.defined() ? bias.contiguous().repeat({kernel_h * kernel_w}) : bias;
  return KernelFunction(BlockConvTranspose(std::move(packed), std::move(block_bias), in_channels,
                                           out_channels, kernel_h, kernel_w, std::move(fallback)));
}

} // namespace srt::ops
