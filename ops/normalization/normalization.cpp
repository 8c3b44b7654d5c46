// softmax, log_softmax and layer_norm as out-variant kernels (batch_norm: batch_norm.cpp).
// softmax runs at::cpu::_softmax_out; layer_norm calls ATen's CPU layer-norm kernel (its dispatch
// stub, which picks a vectorized implementation by CPU capability, not the operator dispatcher).
// Debian's libtorch_cpu has AVX2 and AVX-512 kernels behind its dispatch stubs; the stub's
// declarations (and so the symbols we call) depend on these, as when ATen itself was built.
#define HAVE_AVX2_CPU_DEFINITION
#define HAVE_AVX512_CPU_DEFINITION

#include <ATen/CPUFunctions.h>
#include <ATen/native/layer_norm.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// softmax.int / log_softmax.int(Tensor self, int dim, ScalarType? dtype=None)
template <bool kLog> void softmax(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const int64_t dim = p.input(1).toInt();
  const auto dtype = p.input(2).toOptional<at::ScalarType>();
  // ATen converts first when asked for another dtype; the conversion goes through the dispatcher.
  const at::Tensor converted = dtype && *dtype != x.scalar_type() ? x.to(*dtype) : at::Tensor();
  const at::Tensor& in = converted.defined() ? converted : x;
  at::Tensor& out = outputTensorLike(p, 0, in);
  if constexpr (kLog) {
    at::cpu::_log_softmax_out(out, in, dim, /*half_to_float=*/false);
  } else {
    at::cpu::_softmax_out(out, in, dim, /*half_to_float=*/false);
  }
}

c10::MaybeOwned<at::Tensor> contiguousOrUndefined(const at::Tensor& t) {
  return t.defined() ? t.expect_contiguous() : c10::MaybeOwned<at::Tensor>::borrowed(t);
}

// layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None,
//            float eps=1e-05, bool cudnn_enable=True)
void layerNorm(ProcessedNode& p) {
  const at::Tensor& input = p.input(0).toTensor();
  const at::DimVector normalized_shape = p.input(1).toDimVector();
  const at::Tensor& weight = tensorOrUndefined(p.input(2));
  const at::Tensor& bias = tensorOrUndefined(p.input(3));
  const double eps = p.input(4).toDouble();
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  const at::ScalarType type = input.scalar_type();
  const bool same_types = (!weight.defined() || weight.scalar_type() == type) &&
                          (!bias.defined() || bias.scalar_type() == type);
  if (!(type == at::kFloat || type == at::kDouble) || !same_types) {
    // Reduced-precision and mixed-dtype inputs: ATen's own operator (not an out variant).
    p.output(0) = at::layer_norm(input, normalized_shape, weight, bias, eps);
    return;
  }
  const c10::MaybeOwned<at::Tensor> x = input.expect_contiguous();
  const c10::MaybeOwned<at::Tensor> gamma = contiguousOrUndefined(weight);
  const c10::MaybeOwned<at::Tensor> beta = contiguousOrUndefined(bias);
  at::Tensor& out = contiguousOutput(p, 0, input.sizes(), input.options());
  if (M > 0 && type == at::kFloat) {
    vec::layerNormRows(x->data_ptr<float>(), gamma->defined() ? gamma->data_ptr<float>() : nullptr,
                       beta->defined() ? beta->data_ptr<float>() : nullptr, static_cast<float>(eps),
                       out.data_ptr<float>(), M, N);
  } else if (M > 0) {
    // No mean / rstd outputs: inference needs neither (PyTorch's Static Runtime does the same).
    at::native::LayerNormKernel(at::kCPU, *x, *gamma, *beta, M, N, eps, &out, /*mean=*/nullptr,
                                /*rstd=*/nullptr);
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::softmax", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"int", softmax<false>}});
});
SRT_REGISTER_KERNEL("aten::log_softmax", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"int", softmax<true>}});
});
SRT_REGISTER_KERNEL("aten::layer_norm", kOutVariant, tensorOverload<layerNorm>);

} // namespace srt::ops
