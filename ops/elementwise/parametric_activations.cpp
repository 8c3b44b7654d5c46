// prelu and glu as out-variant kernels. prelu on dense float32 is the vectorized leaky-relu
// loop for one slope, and for one slope per channel a loop per channel plane (contiguous) or per
// row of channels (channels innermost), ATen's formula either way: x > 0 ? x : weight * x; glu runs
// at::cpu::glu_out into the node's output.
#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// One slope per channel over tensors whose channels are innermost in memory (channels last, a
// 1-D convolution's [N, C, L] output read through conv1d_lowering's squeeze): rows of `channels`.
void preluChannelRows(WorkerPool* workers, const float* in, const float* w, float* out,
                      int64_t rows, int64_t channels) {
  const int64_t grain = std::max<int64_t>(1, at::internal::GRAIN_SIZE / channels);
  splitIfWorthIt(workers, rows, grain,
                 static_cast<double>(rows * channels) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t row = begin; row < end; ++row) {
                     const float* x = in + row * channels;
                     float* o = out + row * channels;
                     // ATen's formula; a plain loop the compiler vectorizes.
                     for (int64_t c = 0; c < channels; ++c) {
                       o[c] = x[c] > 0.f ? x[c] : w[c] * x[c];
                     }
                   }
                 });
}

// prelu(Tensor self, Tensor weight): one slope, or one per channel (dim 1; a 1-d input is one
// channel). The output is laid out as the input, as ATen's TensorIterator lays it out.
void prelu(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const at::Tensor& weight = p.input(1).toTensor();
  const int64_t slopes = weight.numel();
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  const bool channels_innermost = x.dim() >= 2 && (x.stride(1) == 1 || channels == 1);
  if (!isDenseFloat(x) || !isContiguousFloat(weight) || (slopes != 1 && slopes != channels) ||
      (slopes != 1 && !x.is_contiguous() && !channels_innermost)) {
    // Other dtypes and layouts, and wrong weights (ATen's operator reports them).
    p.output(0) = at::prelu(x, weight);
    return;
  }
  const float* w = floatData(weight);
  if (slopes == 1 || x.numel() == 0) {
    mapToOutput(p, vec::UnaryOp::kLeakyRelu, x, {w[0]});
    return;
  }
  if (!x.is_contiguous()) {
    at::Tensor& out = outputTensorLike(p, 0, x);
    resizePreservingLayout(out, x);
    preluChannelRows(p.workers(), floatData(x), w, floatData(out), x.numel() / channels, channels);
    return;
  }
  at::Tensor& out = contiguousOutput(p, 0, x.sizes(), x.options());
  const int64_t image = x.numel() / (x.size(0) * channels);
  const float* in = floatData(x);
  float* o = floatData(out);
  const int64_t grain =
      std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(image, 1));
  splitIfWorthIt(p.workers(), x.size(0) * channels, grain,
                 static_cast<double>(x.numel()) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t plane = begin; plane < end; ++plane) {
                     vec::map(vec::UnaryOp::kLeakyRelu, in + plane * image, o + plane * image,
                              image, {w[plane % channels]});
                   }
                 });
}

// glu(Tensor self, int dim=-1)
void glu(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  at::cpu::glu_out(outputTensorLike(p, 0, x), x, p.input(1).toInt());
}

} // namespace

SRT_REGISTER_KERNEL("aten::prelu", kOutVariant, tensorOverload<prelu>);
SRT_REGISTER_KERNEL("aten::glu", kOutVariant, tensorOverload<glu>);

} // namespace srt::ops
