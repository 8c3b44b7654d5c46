// 2-D convolution and pooling.
//
// conv2d is a native kernel calling at::native::conv2d: LibTorch 1.13 exports no out path for
// the oneDNN convolution ATen picks for most float shapes (only the im2col "slow" path has one,
// at::cpu::_slow_conv2d_forward_out, 1.5-2.5x slower here on 3x3 convs with batch >= 2), so an
// out-variant would trade speed for reuse. The real fix is a oneDNN primitive with the weight
// pre-packed at build time, next to the GEMM glue.
#include <ATen/CPUFunctions.h>
#include <ATen/NativeFunctions.h>
#include <ATen/native/Pool.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/inference_dispatch.h"
#include "ops/out_variant.h"
#include "ops/processed_node.h"
#include "ops/registry.h"
#include "ops/schema_match.h"

namespace srt::ops {
namespace {

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

void conv2d(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  p.output(0) =
      at::native::conv2d(p.input(0).toTensor(), p.input(1).toTensor(), optionalTensor(p.input(2)),
                         p.input(3).toDimVector(), p.input(4).toDimVector(),
                         p.input(5).toDimVector(), p.input(6).toInt());
}

// kernel_size, stride, padding or dilation of one or two elements, as ATen reads them (an empty
// stride means the kernel size).
int64_t pair(at::IntArrayRef values, size_t i, int64_t if_empty) {
  return values.empty() ? if_empty : values[values.size() == 1 ? 0 : i];
}

// max_pool2d on the CPU is max_pool2d_with_indices with the indices dropped, as in ATen. The
// indices are kernel scratch: their shape is the output's, computed here with ATen's formula.
// (Were it off, the out call could not grow the scratch-backed tensor and would throw; invalid
// arguments are rejected by ATen's own checks first.)
void maxPool2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector kernel = p.input(1).toDimVector();
  const at::DimVector stride = p.input(2).toDimVector();
  const at::DimVector padding = p.input(3).toDimVector();
  const at::DimVector dilation = p.input(4).toDimVector();
  const bool ceil_mode = p.input(5).toBool();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  const bool well_formed = (self.dim() == 3 || self.dim() == 4) && !kernel.empty() &&
                           kernel.size() <= 2 && stride.size() <= 2 && !padding.empty() &&
                           padding.size() <= 2 && !dilation.empty() && dilation.size() <= 2;
  if (well_formed) {
    for (size_t i = 0; i < 2; ++i) {
      const int64_t k = pair(kernel, i, 0);
      int64_t& extent = shape[shape.size() - 2 + i];
      if (k > 0 && pair(stride, i, k) > 0 && pair(dilation, i, 1) > 0) {
        extent = at::native::pooling_output_shape<int64_t>(
            extent, k, pair(padding, i, 0), pair(stride, i, k), pair(dilation, i, 1), ceil_mode);
      }
    }
  }
  const int64_t numel = c10::multiply_integers(shape);
  at::Tensor indices =
      at::from_blob(p.scratch(std::max<int64_t>(numel, 1) * sizeof(int64_t)), shape, at::kLong);
  at::cpu::max_pool2d_with_indices_outf(self, kernel, stride, padding, dilation, ceil_mode, out,
                                        indices);
}

void adaptiveAvgPool2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::cpu::adaptive_avg_pool2d_outf(self, p.input(1).toDimVector(), out);
}

} // namespace

SRT_REGISTER_KERNEL(
    "aten::conv2d", kNative,
    whenMatches("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] "
                "stride=1, int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
                conv2d));
SRT_REGISTER_KERNEL(
    "aten::max_pool2d", kOutVariant,
    whenMatches("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], "
                "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                maxPool2d));
SRT_REGISTER_KERNEL(
    "aten::adaptive_avg_pool2d", kOutVariant,
    whenMatches("aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
                adaptiveAvgPool2d));

} // namespace srt::ops
