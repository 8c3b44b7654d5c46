// aten::one_hot (F.one_hot) writing into last run's output: ATen's checks and errors, then one
// pass that zeroes each row and sets its class, where ATen allocates a zero tensor and scatters.
#include <algorithm>

#include <ATen/ATen.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

void oneHot(ProcessedNode& p) {
  const at::Tensor& indices = p.input(0).toTensor();
  int64_t num_classes = p.input(1).toInt();
  TORCH_CHECK(indices.scalar_type() == at::kLong, "one_hot is only applicable to index tensor.");
  const at::Tensor contiguous = indices.contiguous();
  const int64_t* index = contiguous.data_ptr<int64_t>();
  const int64_t count = contiguous.numel();
  if (count == 0) {
    TORCH_CHECK(num_classes > 0, "Can not infer total number of classes from empty tensor.");
  } else {
    const auto [smallest, largest] = std::minmax_element(index, index + count);
    TORCH_CHECK(*smallest >= 0, "Class values must be non-negative.");
    if (num_classes == -1) {
      num_classes = *largest + 1;
    } else {
      TORCH_CHECK(num_classes > *largest, "Class values must be smaller than num_classes.");
    }
  }
  at::DimVector shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(num_classes);
  at::Tensor& out = outputTensorLike(p, 0, indices);
  at::native::resize_(out, shape, c10::nullopt);
  int64_t* row = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i, row += num_classes) {
    std::fill(row, row + num_classes, int64_t{0});
    row[index[i]] = 1;
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::one_hot", kOutVariant,
                    whenMatches("aten::one_hot(Tensor self, int num_classes=-1) -> Tensor",
                                oneHot));

} // namespace srt::ops
