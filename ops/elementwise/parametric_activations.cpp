// prelu and glu as out-variant kernels. prelu on contiguous float32 is the vectorized leaky-relu
// loop for one slope, a plain loop per channel plane for one slope per channel (ATen's formula
// either way: x > 0 ? x : weight * x); glu runs at::cpu::glu_out into the node's output.
#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// prelu(Tensor self, Tensor weight): one slope, or one per channel (dim 1; a 1-d input is one
// channel).
void prelu(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const at::Tensor& weight = p.input(1).toTensor();
  const int64_t slopes = weight.numel();
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  if (!isContiguousFloat(x) || !isContiguousFloat(weight) || (slopes != 1 && slopes != channels)) {
    // Other dtypes and layouts, and wrong weights (ATen's operator reports them).
    p.output(0) = at::prelu(x, weight);
    return;
  }
  at::Tensor& out = contiguousOutput(p, 0, x.sizes(), x.options());
  const float* w = floatData(weight);
  if (slopes == 1 || x.numel() == 0) {
    if (x.numel() > 0) {
      vec::map(vec::UnaryOp::kLeakyRelu, floatData(x), floatData(out), x.numel(), {w[0]});
    }
    return;
  }
  const int64_t image = x.numel() / (x.size(0) * channels);
  const float* in = floatData(x);
  float* o = floatData(out);
  const int64_t grain =
      std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(image, 1));
  splitIfWorthIt(x.size(0) * channels, grain,
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
