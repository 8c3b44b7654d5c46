// 2-D convolution and pooling.
//
// conv2d is a native kernel calling at::native::conv2d: LibTorch 1.13 exports no out path for
// the oneDNN convolution ATen picks for most float shapes (only the im2col "slow" path has one,
// at::cpu::_slow_conv2d_forward_out, 1.5-2.5x slower here on 3x3 convs with batch >= 2), so an
// out-variant would trade speed for reuse. The real fix is a oneDNN primitive with the weight
// pre-packed at build time, next to the GEMM glue.
#include <ATen/CPUFunctions.h>
#include <ATen/NativeFunctions.h>
#include <torch/csrc/jit/ir/ir.h>

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
  p.output(0) =
      at::native::conv2d(p.input(0).toTensor(), p.input(1).toTensor(), optionalTensor(p.input(2)),
                         p.input(3).toDimVector(), p.input(4).toDimVector(),
                         p.input(5).toDimVector(), p.input(6).toInt());
}

// max_pool2d on the CPU is max_pool2d_with_indices with the indices dropped (as in ATen); the
// indices are this node's own tensor, reused run after run like the output.
struct PoolIndices : NodeState {
  at::Tensor indices = at::empty({0}, at::kLong);
};

void maxPool2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::Tensor& indices = p.state<PoolIndices>().indices;
  indices.unsafeGetTensorImpl()->set_sizes_contiguous({0});
  at::cpu::max_pool2d_with_indices_outf(self, p.input(1).toDimVector(), p.input(2).toDimVector(),
                                        p.input(3).toDimVector(), p.input(4).toDimVector(),
                                        p.input(5).toBool(), out, indices);
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
