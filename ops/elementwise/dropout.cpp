// aten::dropout as an out-variant kernel: the result is always the node's own tensor.
//
// ATen returns the input itself when nothing is dropped (train=False, p == 0, an empty input),
// while the operator's schema calls the result fresh: left to the JIT operator, a kept dropout
// (a run-time probability or flag) let the memory planner hand its input's bytes to a later value
// still read through the dropout's result. Here that case is a copy; in training mode the noise is
// drawn into the output exactly as ATen draws it (bernoulli_(1 - p), div_(1 - p), then times the
// input), so a seeded run gives ATen's values.
#include <ATen/core/Tensor.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

// dropout(Tensor input, float p, bool train)
void dropout(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const double probability = p.input(1).toDouble();
  const bool train = p.input(2).toBool();
  TORCH_CHECK(probability >= 0 && probability <= 1,
              "dropout probability has to be between 0 and 1, but got ", probability);
  at::Tensor& out = outputTensorLike(p, 0, x);
  if (probability == 0 || !train || x.numel() == 0) {
    resizePreservingLayout(out, x);
    out.copy_(x);
    return;
  }
  at::native::resize_(out, x.sizes()); // contiguous, as ATen's noise tensor
  if (probability == 1) {
    out.zero_(); // ATen multiplies by zero: NaN and inf inputs stay NaN
  } else {
    out.bernoulli_(1 - probability);
    out.div_(1 - probability);
  }
  out.mul_(x);
}

} // namespace

SRT_REGISTER_KERNEL("aten::dropout", kOutVariant, tensorOverload<dropout>);

} // namespace srt::ops
