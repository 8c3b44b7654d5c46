// aten::bilinear (nn.Bilinear) as an out-variant: ATen's composite (its checks, the inputs'
// leading dimensions flattened, one _trilinear contraction, the bias added) with the contraction
// and the bias written into last run's output, so the same bits as ATen's.
#include <ATen/ATen.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

void checkBilinearShapes(const at::Tensor& input1, const at::Tensor& input2,
                         const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  TORCH_CHECK(input1.dim() == input2.dim(), "bilinear(): input dimensions do not match: got ",
              input1.dim(), " and ", input2.dim());
  TORCH_CHECK(input1.dim() >= 1, "bilinear(): inputs must have at least one dimension");
  TORCH_CHECK(weight.dim() == 3, "bilinear(): weight must be 3-D, got ", weight.dim(), "-D");
  for (int64_t i = 0; i + 1 < input1.dim(); ++i) {
    TORCH_CHECK(input1.size(i) == input2.size(i),
                "bilinear(): input batch dimensions do not match: got ", input1.size(i), " and ",
                input2.size(i));
  }
  TORCH_CHECK(input1.size(-1) == weight.size(1),
              "bilinear(): input1 size does not match weight size: got ", input1.size(-1),
              " but expected ", weight.size(1));
  TORCH_CHECK(input2.size(-1) == weight.size(2),
              "bilinear(): input2 size does not match weight size: got ", input2.size(-1),
              " but expected ", weight.size(2));
  TORCH_CHECK(!bias || bias->size(0) == weight.size(0),
              "bilinear(): bias size does not match weight size: got ", bias ? bias->size(0) : 0,
              " but expected ", weight.size(0));
}

void bilinear(ProcessedNode& p) {
  const at::Tensor& input1 = p.input(0).toTensor();
  const at::Tensor& input2 = p.input(1).toTensor();
  const at::Tensor& weight = p.input(2).toTensor();
  const c10::optional<at::Tensor> bias = p.input(3).toOptional<at::Tensor>();
  checkBilinearShapes(input1, input2, weight, bias);

  at::DimVector output_size(input1.sizes().begin(), input1.sizes().end() - 1);
  output_size.push_back(weight.size(0));
  at::Tensor& out = outputTensorLike(p, 0, input1);
  const InferenceDispatch below_autograd;
  at::_trilinear_outf(input1.reshape({-1, input1.size(-1)}), weight,
                      input2.reshape({-1, input2.size(-1)}), {1, 3}, {0}, {1, 2}, {2, 3},
                      /*unroll_dim=*/1, out);
  out.unsafeGetTensorImpl()->set_sizes_contiguous(output_size);
  if (bias) {
    at::add_outf(out, *bias, /*alpha=*/1, out);
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::bilinear", kOutVariant,
                    whenMatches("aten::bilinear(Tensor input1, Tensor input2, Tensor weight, "
                                "Tensor? bias=None) -> Tensor",
                                bilinear));

} // namespace srt::ops
