// aten::grid_sampler (F.grid_sample: spatial transformers, flow warping) as an out-variant: ATen's
// composite picks the 2-D or the 3-D sampler by the input's rank; here that sampler writes into
// last run's output.
#include <ATen/ATen.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

void gridSampler(ProcessedNode& p) {
  const at::Tensor& input = p.input(0).toTensor();
  const at::Tensor& grid = p.input(1).toTensor();
  const int64_t interpolation = p.input(2).toInt();
  const int64_t padding = p.input(3).toInt();
  const bool align_corners = p.input(4).toBool();
  TORCH_CHECK((input.dim() == 4 || input.dim() == 5) && input.dim() == grid.dim(),
              "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
              "but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  at::Tensor& out = outputTensorLike(p, 0, input);
  const InferenceDispatch below_autograd;
  if (input.dim() == 4) {
    at::grid_sampler_2d_outf(input, grid, interpolation, padding, align_corners, out);
  } else {
    at::grid_sampler_3d_outf(input, grid, interpolation, padding, align_corners, out);
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::grid_sampler", kOutVariant,
                    whenMatches("aten::grid_sampler(Tensor input, Tensor grid, int "
                                "interpolation_mode, int padding_mode, bool align_corners) -> "
                                "Tensor",
                                gridSampler));

} // namespace srt::ops
