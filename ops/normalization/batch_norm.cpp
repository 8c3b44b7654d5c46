// Eval-mode batch_norm as an out-variant kernel, and srt::batch_norm_activation: batch_norm
// followed by an activation (passes/norm_activation.cpp: the BatchNorm + ReLU that pre-activation
// networks put before each convolution, DenseNet's on every concatenation), the activation
// applied to each row or plane right after it is normalized, in cache, with the fast formulas
// (vec::mapFast: they owe ATen no bits).
//
// The running statistics fold into one scale and shift per channel, applied with the vectorized
// loops as ATen's eval-mode kernel does: on contiguous float32 one affine pass per (sample,
// channel) plane; on float32 with channels innermost (channels last, what passes/channels_last.cpp
// keeps between convolutions) one multiply-add per row of channels, the output laid out as the
// input, as ATen lays it out. Anything else (other strides, float64) runs one at::cpu::addcmul_out
// with the scale and shift in scratch.
#include <ATen/CPUFunctions.h>
#include <ATen/Dispatch.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/native/Resize.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/library.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/epilogue.h"
#include "ops/shapes/transpose_copy.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// y = x * scale[c] + shift[c] with scale = weight / sqrt(var + eps) and shift = bias - mean *
// scale, computed in the parameters' dtype as ATen computes them.
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

// Floats of output a row kernel writes before it activates them (4096: 16 KB, well within L1).
constexpr int64_t kActivationBlockFloats = 4096;

// The activation on n floats of the output just written, in place.
void activate(Activation activation, float* data, int64_t n) {
  if (activation != Activation::kNone) {
    vec::mapFast(formulaOf(activation), data, n);
  }
}

// The arguments both ops share; momentum and cudnn_enabled only for ATen's checks on the
// reference path.
struct BatchNormArguments {
  const at::Tensor& weight;
  const at::Tensor& bias;
  const at::Tensor& mean;
  const at::Tensor& var;
  double eps;
  double momentum;
  bool cudnn_enabled;
};

void normalizeBatch(ProcessedNode& p, const at::Tensor& x, const BatchNormArguments& a,
                    Activation activation) {
  const at::ScalarType type = x.scalar_type();
  const int64_t channels = x.dim() >= 2 ? x.size(1) : -1;
  const bool supported = (type == at::kFloat || type == at::kDouble) && channels >= 0 &&
                         a.mean.defined() && a.var.defined() &&
                         isChannelVector(a.mean, type, channels) &&
                         isChannelVector(a.var, type, channels) &&
                         (!a.weight.defined() || isChannelVector(a.weight, type, channels)) &&
                         (!a.bias.defined() || isChannelVector(a.bias, type, channels));
  if (!supported) {
    // Missing statistics, 1-d input, mixed dtypes: ATen's operator checks and reports.
    at::Tensor y = at::batch_norm(x, a.weight, a.bias, a.mean, a.var, /*training=*/false,
                                  a.momentum, a.eps, a.cudnn_enabled);
    p.output(0) = activation == Activation::kNone ? y : applyActivation(activation, y);
    return;
  }
  if (isContiguousFloat(x) || (type == at::kFloat && isDenseFloat(x) && x.stride(1) == 1)) {
    float* scale = static_cast<float*>(p.scratch(2 * channels * sizeof(float)));
    float* shift = scale + channels;
    foldStatistics<float>(a.weight, a.bias, a.mean, a.var, a.eps, channels, scale, shift);
    at::Tensor& out = outputTensorLike(p, 0, x);
    resizePreservingLayout(out, x);
    const float* in = floatData(x);
    float* o = floatData(out);
    const int64_t batch = x.size(0);
    const int64_t image = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
    const double cost = static_cast<double>(x.numel()) * kNanosecondsPerElement;
    if (image == 1 || !x.is_contiguous()) {
      // Rows of channels: [N, C], or channels innermost (any order of the rows).
      const int64_t rows = channels == 0 ? 0 : x.numel() / channels;
      const int64_t grain =
          std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(channels, 1));
      // The activation once per block of rows (consecutive in memory), still in L1.
      const int64_t block_rows = std::max<int64_t>(1, kActivationBlockFloats / channels);
      splitIfWorthIt(p.workers(), rows, grain, cost, [&](int64_t begin, int64_t end) {
        for (int64_t first = begin; first < end; first += block_rows) {
          const int64_t last = std::min(end, first + block_rows);
          for (int64_t row = first; row < last; ++row) {
            vec::map(vec::TernaryOp::kMulAdd, in + row * channels, scale, shift, o + row * channels,
                     channels);
          }
          activate(activation, o + first * channels, (last - first) * channels);
        }
      });
      return;
    }
    const int64_t grain =
        std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(image, 1));
    splitIfWorthIt(p.workers(), batch * channels, grain, cost, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t c = plane % channels;
        float* y = o + plane * image;
        vec::map(vec::UnaryOp::kAffine, in + plane * image, y, image, {scale[c], shift[c]});
        activate(activation, y, image);
      }
    });
    return;
  }
  // Other layouts (strided) and float64: scale and shift shaped [1, C, 1, ...] in scratch and
  // one at::cpu::addcmul_out, which keeps the input's memory format as ATen does.
  at::DimVector shape(x.dim(), 1);
  shape[1] = channels;
  const at::TensorOptions options = x.options().dtype(type);
  void* scratch = p.scratch(2 * channels * c10::elementSize(type));
  at::Tensor scale = at::from_blob(scratch, shape, options);
  at::Tensor shift = at::from_blob(static_cast<char*>(scratch) + channels * c10::elementSize(type),
                                   shape, options);
  AT_DISPATCH_FLOATING_TYPES(type, "srt_batch_norm", [&] {
    foldStatistics<scalar_t>(a.weight, a.bias, a.mean, a.var, a.eps, channels,
                             scale.data_ptr<scalar_t>(), shift.data_ptr<scalar_t>());
  });
  at::Tensor& out = outputTensorLike(p, 0, x);
  at::cpu::addcmul_out(out, shift, x, scale, 1);
  if (activation != Activation::kNone) {
    out.copy_(applyActivation(activation, out));
  }
}

// batch_norm(input, weight?, bias?, running_mean?, running_var?, training=False, momentum, eps,
// cudnn_enabled)
void batchNormEval(ProcessedNode& p) {
  const BatchNormArguments arguments{tensorOrUndefined(p.input(1)),
                                     tensorOrUndefined(p.input(2)),
                                     tensorOrUndefined(p.input(3)),
                                     tensorOrUndefined(p.input(4)),
                                     p.input(7).toDouble(),
                                     p.input(6).toDouble(),
                                     p.input(8).toBool()};
  normalizeBatch(p, p.input(0).toTensor(), arguments, Activation::kNone);
}

std::optional<KernelFunction> batchNorm(const Node* node, const KernelOptions&) {
  // Training mode updates the running statistics in place; only a constant False is inference.
  const c10::optional<bool> training = torch::jit::constant_as<bool>(node->input(5));
  if (!training || *training) {
    return std::nullopt;
  }
  return kernelForOverload(node, {{"", batchNormEval}});
}

const char* const kBatchNormActivationSchema =
    "srt::batch_norm_activation(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
    "Tensor running_var, float eps, str activation) -> Tensor";

// ATen's batch_norm defaults for the arguments the fused op leaves out (eval mode: unused).
constexpr double kMomentum = 0.1;

// What the JIT runs: the ATen ops the node replaced.
at::Tensor batchNormActivationReference(const at::Tensor& input,
                                        const c10::optional<at::Tensor>& weight,
                                        const c10::optional<at::Tensor>& bias,
                                        const at::Tensor& mean, const at::Tensor& var, double eps,
                                        c10::string_view activation) {
  const Activation parsed = activationOrError(
      std::string_view(activation.data(), activation.size()), "srt::batch_norm_activation");
  return applyActivation(parsed, at::batch_norm(input, weight, bias, mean, var,
                                                /*training=*/false, kMomentum, eps,
                                                /*cudnn_enabled=*/false));
}

std::optional<KernelFunction> batchNormActivationFactory(const Node* node, const KernelOptions&) {
  if (!node->matches(kBatchNormActivationSchema)) {
    return std::nullopt;
  }
  const std::optional<Activation> activation = constantActivation(node->input(6));
  if (!activation) {
    return std::nullopt; // a run-time activation name: the JIT operator
  }
  return [activation = *activation](ProcessedNode& p) {
    const BatchNormArguments arguments{tensorOrUndefined(p.input(1)), tensorOrUndefined(p.input(2)),
                                       p.input(3).toTensor(),         p.input(4).toTensor(),
                                       p.input(5).toDouble(),         kMomentum,
                                       /*cudnn_enabled=*/false};
    normalizeBatch(p, p.input(0).toTensor(), arguments, activation);
  };
}

const char* const kCatBatchNormActivationSchema =
    "srt::cat_batch_norm_activation(Tensor[] tensors, int dim, Tensor? weight, Tensor? bias, "
    "Tensor running_mean, Tensor running_var, float eps, str activation) -> Tensor";

at::Tensor catBatchNormActivationReference(const at::TensorList tensors, int64_t dim,
                                           const c10::optional<at::Tensor>& weight,
                                           const c10::optional<at::Tensor>& bias,
                                           const at::Tensor& mean, const at::Tensor& var,
                                           double eps, c10::string_view activation) {
  return batchNormActivationReference(at::cat(tensors, dim), weight, bias, mean, var, eps,
                                      activation);
}

// The parts of a concatenation along channels that are float32 images (4-D or 5-D) of one batch
// and size, each channels last: their channel counts, or empty.
std::vector<int64_t> channelsLastParts(const c10::List<at::Tensor>& parts, int64_t dim) {
  std::vector<int64_t> channels;
  if (dim != 1 || parts.empty()) {
    return channels;
  }
  const at::Tensor first = parts.get(0);
  for (const at::Tensor& part : parts.vec()) {
    const bool same_image = part.dim() == first.dim() && (part.dim() == 4 || part.dim() == 5) &&
                            part.size(0) == first.size(0) &&
                            part.sizes().slice(2).equals(first.sizes().slice(2));
    if (!same_image || part.numel() == 0 || !isDenseFloat(part) ||
        !isChannelsInnermost(part, part.size(1), part.numel() / (part.size(0) * part.size(1)))) {
      return {};
    }
    channels.push_back(part.size(1));
  }
  return channels;
}

// DenseNet's layer input: its features concatenated along channels, normalized, activated. The
// concatenation is written once, normalized into its place part by part (vec::affineRows on
// each part's channel range of a block of pixels), and activated while in cache, where
// aten::cat then batch_norm wrote and read it twice. Channels-last parts of one image size (what
// passes/channels_last.cpp keeps between DenseNet's convolutions) into a channels-last result;
// anything else concatenated first and normalized as srt::batch_norm_activation.
void catBatchNormActivation(ProcessedNode& p, Activation activation) {
  const c10::List<at::Tensor> parts = p.input(0).toTensorList();
  const int64_t dim = p.input(1).toInt();
  const BatchNormArguments arguments{tensorOrUndefined(p.input(2)), tensorOrUndefined(p.input(3)),
                                     p.input(4).toTensor(),         p.input(5).toTensor(),
                                     p.input(6).toDouble(),         kMomentum,
                                     /*cudnn_enabled=*/false};
  const std::vector<int64_t> part_channels = channelsLastParts(parts, dim);
  int64_t channels = 0;
  for (const int64_t c : part_channels) {
    channels += c;
  }
  const auto fits = [&](const at::Tensor& t) {
    return !t.defined() || isChannelVector(t, at::kFloat, channels);
  };
  if (part_channels.empty() || !fits(arguments.weight) || !fits(arguments.bias) ||
      !isChannelVector(arguments.mean, at::kFloat, channels) ||
      !isChannelVector(arguments.var, at::kFloat, channels)) {
    normalizeBatch(p, at::cat(parts.vec(), dim), arguments, activation);
    return;
  }
  float* scale = static_cast<float*>(p.scratch(2 * channels * sizeof(float)));
  float* shift = scale + channels;
  foldStatistics<float>(arguments.weight, arguments.bias, arguments.mean, arguments.var,
                        arguments.eps, channels, scale, shift);
  const at::Tensor first = parts.get(0);
  std::vector<int64_t> sizes(first.sizes().begin(), first.sizes().end());
  sizes[1] = channels;
  at::Tensor& out = outputTensorLike(p, 0, first);
  at::native::resize_(out, sizes,
                      first.dim() == 5 ? at::MemoryFormat::ChannelsLast3d
                                       : at::MemoryFormat::ChannelsLast);
  const int64_t rows = out.numel() / channels; // pixels of every image
  float* o = floatData(out);
  std::vector<const float*> inputs;
  for (const at::Tensor& part : parts.vec()) {
    inputs.push_back(floatData(part));
  }
  const int64_t block_rows = std::max<int64_t>(1, kActivationBlockFloats / channels);
  splitIfWorthIt(p.workers(), rows, block_rows,
                 static_cast<double>(rows * channels) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t first_row = begin; first_row < end; first_row += block_rows) {
                     const int64_t count = std::min(end, first_row + block_rows) - first_row;
                     int64_t offset = 0;
                     for (size_t i = 0; i < inputs.size(); ++i) {
                       const int64_t c = part_channels[i];
                       vec::affineRows(inputs[i] + first_row * c, c, scale + offset, shift + offset,
                                       o + first_row * channels + offset, channels, count, c);
                       offset += c;
                     }
                     activate(activation, o + first_row * channels, count * channels);
                   }
                 });
}

std::optional<KernelFunction> catBatchNormActivationFactory(const Node* node,
                                                            const KernelOptions&) {
  if (!node->matches(kCatBatchNormActivationSchema)) {
    return std::nullopt;
  }
  const std::optional<Activation> activation = constantActivation(node->input(7));
  if (!activation) {
    return std::nullopt; // a run-time activation name: the JIT operator
  }
  return [activation = *activation](ProcessedNode& p) { catBatchNormActivation(p, activation); };
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kBatchNormActivationSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        batchNormActivationReference);
  m.def(torch::schema(kCatBatchNormActivationSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        catBatchNormActivationReference);
}

SRT_REGISTER_KERNEL("aten::batch_norm", kOutVariant, batchNorm);
SRT_REGISTER_KERNEL("srt::batch_norm_activation", kOutVariant, batchNormActivationFactory);
SRT_REGISTER_KERNEL("srt::cat_batch_norm_activation", kOutVariant, catBatchNormActivationFactory);

} // namespace srt::ops
