// softmax, log_softmax, layer_norm and eval-mode batch_norm as out-variant kernels.
// softmax runs at::cpu::_softmax_out; layer_norm calls ATen's CPU layer-norm kernel (its dispatch
// stub, which picks a vectorized implementation by CPU capability, not the operator dispatcher);
// batch_norm folds the running statistics into one scale and shift per channel and applies them
// with the vectorized loops, as ATen's eval-mode kernel does.
// Debian's libtorch_cpu has AVX2 and AVX-512 kernels behind its dispatch stubs; the stub's
// declarations (and so the symbols we call) depend on these, as when ATen itself was built.
#define HAVE_AVX2_CPU_DEFINITION
#define HAVE_AVX512_CPU_DEFINITION

#include <ATen/CPUFunctions.h>
#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/native/layer_norm.h>
#include <torch/csrc/jit/ir/constants.h>

#include "ops/core/parallelism.h"
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

const at::Tensor& tensorOrUndefined(const c10::IValue& value) {
  static const at::Tensor undefined;
  return value.isNone() ? undefined : value.toTensor();
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

// batch_norm(input, weight?, bias?, running_mean?, running_var?, training=False, momentum, eps,
// cudnn_enabled): y = x * scale[c] + shift[c] with scale = weight / sqrt(var + eps) and
// shift = bias - mean * scale, computed in the parameters' dtype as ATen computes them.
template <typename T>
void foldStatistics(const at::Tensor& weight, const at::Tensor& bias, const at::Tensor& mean,
                    const at::Tensor& var, double eps, int64_t channels, T* scale, T* shift) {
  const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
  const T* m = mean.data_ptr<T>();
  const T* v = var.data_ptr<T>();
  for (int64_t c = 0; c < channels; ++c) {
    const T invstd = 1 / std::sqrt(v[c] + static_cast<T>(eps));
    scale[c] = invstd * (w ? w[c] : T(1));
    shift[c] = (b ? b[c] : T(0)) - m[c] * scale[c];
  }
}

bool isChannelVector(const at::Tensor& t, at::ScalarType type, int64_t channels) {
  return t.scalar_type() == type && t.dim() == 1 && t.size(0) == channels && t.is_contiguous();
}

void batchNormEval(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const at::Tensor& weight = tensorOrUndefined(p.input(1));
  const at::Tensor& bias = tensorOrUndefined(p.input(2));
  const at::Tensor& mean = tensorOrUndefined(p.input(3));
  const at::Tensor& var = tensorOrUndefined(p.input(4));
  const double eps = p.input(7).toDouble();
  const at::ScalarType type = x.scalar_type();
  const int64_t channels = x.dim() >= 2 ? x.size(1) : -1;
  const bool supported = (type == at::kFloat || type == at::kDouble) && channels >= 0 &&
                         mean.defined() && var.defined() && isChannelVector(mean, type, channels) &&
                         isChannelVector(var, type, channels) &&
                         (!weight.defined() || isChannelVector(weight, type, channels)) &&
                         (!bias.defined() || isChannelVector(bias, type, channels));
  if (!supported) {
    // Missing statistics, 1-d input, mixed dtypes: ATen's operator checks and reports.
    p.output(0) = at::batch_norm(x, weight, bias, mean, var, /*training=*/false,
                                 p.input(6).toDouble(), eps, p.input(8).toBool());
    return;
  }
  if (isContiguousFloat(x)) {
    float* scale = static_cast<float*>(p.scratch(2 * channels * sizeof(float)));
    float* shift = scale + channels;
    foldStatistics<float>(weight, bias, mean, var, eps, channels, scale, shift);
    at::Tensor& out = contiguousOutput(p, 0, x.sizes(), x.options());
    const float* in = floatData(x);
    float* o = floatData(out);
    const int64_t batch = x.size(0);
    const int64_t image = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
    if (image == 1) { // [N, C]: one row of channels per sample
      for (int64_t n = 0; n < batch; ++n) {
        vec::map(vec::TernaryOp::kMulAdd, in + n * channels, scale, shift, o + n * channels,
                 channels);
      }
      return;
    }
    const int64_t grain =
        std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(image, 1));
    splitIfWorthIt(p.workers(), batch * channels, grain,
                   static_cast<double>(x.numel()) * kNanosecondsPerElement,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t plane = begin; plane < end; ++plane) {
                       const int64_t c = plane % channels;
                       vec::map(vec::UnaryOp::kAffine, in + plane * image, o + plane * image, image,
                                {scale[c], shift[c]});
                     }
                   });
    return;
  }
  // Other layouts (channels-last, strided) and float64: scale and shift shaped [1, C, 1, ...]
  // and one at::cpu::addcmul_out, which keeps the input's memory format as ATen does.
  at::DimVector shape(x.dim(), 1);
  shape[1] = channels;
  at::Tensor scale = at::detail::empty_cpu(shape, type);
  at::Tensor shift = at::detail::empty_cpu(shape, type);
  AT_DISPATCH_FLOATING_TYPES(type, "srt_batch_norm", [&] {
    foldStatistics<scalar_t>(weight, bias, mean, var, eps, channels, scale.data_ptr<scalar_t>(),
                             shift.data_ptr<scalar_t>());
  });
  at::cpu::addcmul_out(outputTensorLike(p, 0, x), shift, x, scale, 1);
}

std::optional<KernelFunction> batchNorm(const Node* node, const KernelOptions&) {
  // Training mode updates the running statistics in place; only a constant False is inference.
  const c10::optional<bool> training = torch::jit::constant_as<bool>(node->input(5));
  if (!training || *training) {
    return std::nullopt;
  }
  return kernelForOverload(node, {{"", batchNormEval}});
}

} // namespace

SRT_REGISTER_KERNEL("aten::softmax", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"int", softmax<false>}});
});
SRT_REGISTER_KERNEL("aten::log_softmax", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"int", softmax<true>}});
});
SRT_REGISTER_KERNEL("aten::layer_norm", kOutVariant, tensorOverload<layerNorm>);
SRT_REGISTER_KERNEL("aten::batch_norm", kOutVariant, batchNorm);

} // namespace srt::ops
