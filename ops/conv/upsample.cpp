// 2-D upsampling as F.interpolate calls it (the .vec overloads: an output size or scale factors):
// nearest, bilinear and bicubic, ATen's kernels into the reused output. Segmentation heads
// (torchvision's FCN, DeepLab, LR-ASPP) and feature pyramids upsample this way.
#include <ATen/CPUFunctions.h>
#include <ATen/native/UpSample.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

struct Resize {
  c10::SmallVector<int64_t, 3> output_size;
  c10::optional<double> scale_h;
  c10::optional<double> scale_w;
};

// The output size and the scales ATen's .vec overloads derive from (output_size, scale_factors).
Resize resizeOf(const at::Tensor& self, const c10::IValue& size, const c10::IValue& scales) {
  const std::vector<int64_t> sizes = size.isNone() ? std::vector<int64_t>() : size.toIntVector();
  const at::OptionalIntArrayRef output_size =
      size.isNone() ? at::OptionalIntArrayRef() : at::OptionalIntArrayRef(sizes);
  const c10::optional<std::vector<double>> scale_factors =
      scales.isNone() ? c10::nullopt : c10::optional<std::vector<double>>(scales.toDoubleVector());
  const c10::optional<c10::ArrayRef<double>> factors =
      scale_factors ? c10::optional<c10::ArrayRef<double>>(*scale_factors) : c10::nullopt;
  namespace upsample = at::native::upsample;
  return {upsample::compute_output_size(self.sizes(), output_size, factors),
          upsample::get_scale_value(factors, 0), upsample::get_scale_value(factors, 1)};
}

void nearest2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const Resize r = resizeOf(self, p.input(1), p.input(2));
  at::cpu::upsample_nearest2d_outf(self, r.output_size, r.scale_h, r.scale_w,
                                   outputTensorLike(p, 0, self));
}

template <at::Tensor& (*Interpolate)(const at::Tensor&, at::IntArrayRef, bool,
                                     c10::optional<double>, c10::optional<double>, at::Tensor&)>
void interpolated2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const Resize r = resizeOf(self, p.input(1), p.input(3));
  Interpolate(self, r.output_size, p.input(2).toBool(), r.scale_h, r.scale_w,
              outputTensorLike(p, 0, self));
}

} // namespace

SRT_REGISTER_KERNEL("aten::upsample_nearest2d", kOutVariant,
                    whenMatches("aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, "
                                "float[]? scale_factors) -> Tensor",
                                nearest2d));
SRT_REGISTER_KERNEL(
    "aten::upsample_bilinear2d", kOutVariant,
    whenMatches("aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, "
                "bool align_corners, float[]? scale_factors) -> Tensor",
                interpolated2d<at::cpu::upsample_bilinear2d_outf>));
SRT_REGISTER_KERNEL("aten::upsample_bicubic2d", kOutVariant,
                    whenMatches("aten::upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, "
                                "bool align_corners, float[]? scale_factors) -> Tensor",
                                interpolated2d<at::cpu::upsample_bicubic2d_outf>));

} // namespace srt::ops
