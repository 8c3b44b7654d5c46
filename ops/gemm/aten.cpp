#include "ops/gemm/aten.h"

#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/linear_native.h>
#include <ATen/ops/matmul_native.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <ATen/ops/resize_native.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/gemm/problem.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace {

const at::Tensor& tensorInput(ProcessedNode& p, size_t i) {
  return p.input(i).toTensor();
}

} // namespace

// ATen's own linear takes the dispatcher and allocates; on the [M, K] view of the input it is one
// addmm / mm into the output's [M, N] view.
void atenLinear(ProcessedNode& p) {
  const at::Tensor& input = tensorInput(p, 0);
  const at::Tensor& weight = tensorInput(p, 1);
  const at::Tensor bias = p.input(2).isNone() ? at::Tensor() : tensorInput(p, 2);
  useAtenThreadsForOpenBlas();
  at::Tensor& out = outputTensorLike(p, 0, input);
  if (auto problem = lowerLinear(input, weight, bias)) {
    at::Tensor out_2d = resizeForGemm(out, *problem);
    if (bias.defined()) {
      at::cpu::addmm_out(out_2d, bias, problem->a, problem->b);
    } else {
      at::cpu::mm_out(out_2d, problem->a, problem->b);
    }
    return;
  }
  // A 1-D weight, mixed dtypes, bad shapes: ATen's composite computes it or raises its error.
  at::native::linear_out(input, weight, bias, out);
}

void atenAddmm(ProcessedNode& p) {
  const at::Tensor& self = tensorInput(p, 0);
  useAtenThreadsForOpenBlas();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::cpu::addmm_out(out, self, tensorInput(p, 1), tensorInput(p, 2), p.input(3).toScalar(),
                     p.input(4).toScalar());
}

void atenMm(ProcessedNode& p) {
  const at::Tensor& self = tensorInput(p, 0);
  useAtenThreadsForOpenBlas();
  at::cpu::mm_out(outputTensorLike(p, 0, self), self, tensorInput(p, 1));
}

// matmul is composite in ATen (it picks dot / mv / mm / bmm by rank and broadcasts); its native
// out-variant writes into (and resizes) the reused output.
void atenMatmul(ProcessedNode& p) {
  const at::Tensor& self = tensorInput(p, 0);
  useAtenThreadsForOpenBlas();
  at::native::matmul_out(self, tensorInput(p, 1), outputTensorLike(p, 0, self));
}

void atenBmm(ProcessedNode& p) {
  const at::Tensor& self = tensorInput(p, 0);
  useAtenThreadsForOpenBlas();
  at::cpu::bmm_out(outputTensorLike(p, 0, self), self, tensorInput(p, 1));
}

void atenBaddbmm(ProcessedNode& p) {
  const at::Tensor& self = tensorInput(p, 0);
  const at::Tensor& batch1 = tensorInput(p, 1);
  const at::Tensor& batch2 = tensorInput(p, 2);
  const at::Scalar beta = p.input(3).toScalar();
  useAtenThreadsForOpenBlas();
  at::Tensor& out = outputTensorLike(p, 0, self);
  // ATen 1.13's small-size baddbmm kernel computes beta * out + alpha * product even for beta = 0,
  // so last run's values (NaN, inf) would leak in: with zeros there, the product is all that is
  // left.
  if (beta.equal(0) && batch1.dim() == 3 && batch2.dim() == 3) {
    at::native::resize_(out, {batch1.size(0), batch1.size(1), batch2.size(2)});
    out.zero_();
  }
  at::cpu::baddbmm_out(out, self, batch1, batch2, beta, p.input(4).toScalar());
}

} // namespace srt::ops
