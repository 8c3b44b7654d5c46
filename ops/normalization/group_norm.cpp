// group_norm and instance_norm (with the input's own statistics) as out-variant kernels, and
// srt::group_norm_activation: group_norm followed by an activation (passes/norm_activation.cpp;
// GroupNorm + SiLU in diffusion U-Nets, GroupNorm + GELU in wav2vec2's feature extractor), the
// activation applied to each slice of the output right after it is normalized, in cache, with
// the fast formulas (vec::mapFast: they owe ATen no bits). On
// contiguous float32 each (sample, group) is one row of the vectorized layer-norm loop, then each
// channel's weight and bias one affine pass; float32 with channels innermost (channels last, a
// 1-D convolution's squeezed output) is normalized row by row in its own layout
// (normalizeChannelRows); anything else (other strides, float64,
// bfloat16) runs ATen's CPU group-norm kernel (its dispatch stub, not the operator dispatcher)
// into the node's output, with its per-group statistics in scratch.
// Debian's libtorch_cpu has AVX2 and AVX-512 kernels behind its dispatch stubs; the stub's
// declarations (and so the symbols we call) depend on these, as when ATen itself was built.
#define HAVE_AVX2_CPU_DEFINITION
#define HAVE_AVX512_CPU_DEFINITION

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/native/group_norm.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/library.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/epilogue.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// The activation of srt::group_norm_activation on n floats of its output, in place: a row or a
// plane just written, still in cache (a pass of its own over a wav2vec2 feature map, 6.5 MB,
// cost as much again as the activation).
void activate(Activation activation, float* data, int64_t n) {
  if (activation != Activation::kNone) {
    vec::mapFast(formulaOf(activation), data, n);
  }
}

bool isChannelVector(const at::Tensor& t, at::ScalarType type, int64_t channels) {
  return !t.defined() ||
         (t.scalar_type() == type && t.dim() == 1 && t.size(0) == channels && t.is_contiguous());
}

// Rows of `channels` floats (a sample whose channels are innermost in memory: channels last, a
// 1-D convolution's output read through conv1d_lowering's squeeze; the order of the rows does not
// matter to the statistics), normalized per group of channels in two passes: one for the
// statistics, one for y = (x - mean) * scale[c] + bias[c] (scale = rstd * weight). The statistics
// in one pass without cancellation: each channel's values are summed shifted by the channel's first
// value (a pivot near its mean), in float over blocks of rows and in double over the blocks; the
// group's mean and centred sum of squares follow exactly from those sums. `scratch`:
// channelRowsScratchBytes.
size_t channelRowsScratchBytes(int64_t channels) {
  return 2 * channels * sizeof(double) + 3 * channels * sizeof(float);
}

void normalizeChannelRows(const float* x, int64_t rows, int64_t channels, int64_t groups,
                          const float* weight, const float* bias, double eps, float* out,
                          Activation activation, void* scratch, WorkerPool* workers) {
  constexpr int64_t kRowsPerBlock = 256;
  const int64_t per_group = channels / groups;
  auto* sums = static_cast<double*>(scratch); // per channel: sum of (x - pivot)
  double* squares = sums + channels;          // per channel: sum of (x - pivot)^2
  auto* block_sums = reinterpret_cast<float*>(squares + channels);
  float* block_squares = block_sums + channels;
  // Once the sums are done, the blocks' space holds each channel's scale and bias.
  float* scale = block_squares;
  float* shift = block_sums;
  float* center = block_squares + channels; // the group's mean
  const float* pivot = x;                   // the first row
  std::fill(sums, sums + 2 * channels, 0.0);
  for (int64_t begin = 0; begin < rows; begin += kRowsPerBlock) {
    std::fill(block_sums, block_sums + 2 * channels, 0.f);
    const int64_t end = std::min(rows, begin + kRowsPerBlock);
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x + r * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float d = row[c] - pivot[c];
        block_sums[c] += d;
        block_squares[c] += d * d;
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      sums[c] += block_sums[c];
      squares[c] += block_squares[c];
    }
  }
  const double count = static_cast<double>(rows * per_group);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t first = g * per_group;
    double total = 0.0;
    for (int64_t c = first; c < first + per_group; ++c) {
      total += static_cast<double>(pivot[c]) * static_cast<double>(rows) + sums[c];
    }
    const double mean = total / count;
    // Sum over the group of (x - mean)^2 = sum of ((x - p) + (p - mean))^2 per channel.
    double centred = 0.0;
    for (int64_t c = first; c < first + per_group; ++c) {
      const double offset = static_cast<double>(pivot[c]) - mean;
      centred += squares[c] + 2.0 * offset * sums[c] + static_cast<double>(rows) * offset * offset;
    }
    const double rstd = 1.0 / std::sqrt(std::max(centred, 0.0) / count + eps);
    for (int64_t c = first; c < first + per_group; ++c) {
      scale[c] = static_cast<float>(rstd) * (weight ? weight[c] : 1.f);
      center[c] = static_cast<float>(mean);
      shift[c] = bias ? bias[c] : 0.f;
    }
  }
  const int64_t grain = std::max<int64_t>(1, at::internal::GRAIN_SIZE / channels);
  splitIfWorthIt(workers, rows, grain,
                 static_cast<double>(rows * channels) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     const float* in = x + r * channels;
                     float* o = out + r * channels;
                     for (int64_t c = 0; c < channels; ++c) {
                       o[c] = (in[c] - center[c]) * scale[c] + shift[c];
                     }
                     activate(activation, o, channels);
                   }
                 });
}

// act(y), y = (x - mean) * rstd * weight[c] + bias[c] over groups of channels, into the node's
// output.
void normalizeGroups(ProcessedNode& p, const at::Tensor& x, int64_t groups,
                     const at::Tensor& weight, const at::Tensor& bias, double eps,
                     Activation activation = Activation::kNone) {
  TORCH_CHECK(x.dim() >= 2, "static_runtime: group_norm expects an input of at least 2 dims ",
              "(N, C, *), got ", x.sizes());
  const int64_t batch = x.size(0);
  const int64_t channels = x.size(1);
  TORCH_CHECK(groups > 0 && channels % groups == 0, "static_runtime: group_norm expects the ",
              channels, " channels to divide into num_groups=", groups);
  const at::ScalarType type = x.scalar_type();
  const bool supported = (type == at::kFloat || type == at::kDouble || type == at::kBFloat16) &&
                         isChannelVector(weight, type, channels) &&
                         isChannelVector(bias, type, channels);
  if (!supported) {
    // Mixed dtypes, a weight of the wrong size: ATen's operator checks and reports.
    p.output(0) = applyActivation(activation, at::group_norm(x, groups, weight, bias, eps));
    return;
  }
  const int64_t image = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  if (isContiguousFloat(x)) {
    at::Tensor& out = contiguousOutput(p, 0, x.sizes(), x.options());
    if (x.numel() == 0) {
      return;
    }
    float* o = floatData(out);
    vec::layerNormRows(floatData(x), nullptr, nullptr, static_cast<float>(eps), o, batch * groups,
                       channels / groups * image);
    if (!weight.defined() && !bias.defined()) {
      splitIfWorthIt(
          p.workers(), x.numel(), at::internal::GRAIN_SIZE,
          static_cast<double>(x.numel()) * kNanosecondsPerElement,
          [&](int64_t begin, int64_t end) { activate(activation, o + begin, end - begin); });
      return;
    }
    const float* w = weight.defined() ? weight.data_ptr<float>() : nullptr;
    const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
    const int64_t grain =
        std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(image, 1));
    splitIfWorthIt(p.workers(), batch * channels, grain,
                   static_cast<double>(x.numel()) * kNanosecondsPerElement,
                   [&](int64_t begin, int64_t end) {
                     // A plain loop the compiler vectorizes: planes are often a few hundred floats,
                     // where a vec::map call per plane costs more than the plane.
                     for (int64_t plane = begin; plane < end; ++plane) {
                       const int64_t c = plane % channels;
                       const float scale = w ? w[c] : 1.f;
                       const float shift = b ? b[c] : 0.f;
                       float* row = o + plane * image;
                       for (int64_t i = 0; i < image; ++i) {
                         row[i] = row[i] * scale + shift;
                       }
                       activate(activation, row, image);
                     }
                   });
    return;
  }
  // Channels innermost, each sample one block of rows: normalized in place, the output laid out
  // as the input (passes/channels_last.cpp counts on it, as for element-wise ops).
  if (type == at::kFloat && isDenseFloat(x) && x.stride(1) == 1 &&
      (batch == 1 || x.stride(0) == image * channels)) {
    at::Tensor& out = outputTensorLike(p, 0, x);
    resizePreservingLayout(out, x);
    if (x.numel() == 0) {
      return;
    }
    void* scratch = p.scratch(channelRowsScratchBytes(channels));
    const float* w = weight.defined() ? weight.data_ptr<float>() : nullptr;
    const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
    for (int64_t n = 0; n < batch; ++n) {
      normalizeChannelRows(floatData(x) + n * image * channels, image, channels, groups, w, b, eps,
                           floatData(out) + n * image * channels, activation, scratch, p.workers());
    }
    return;
  }
  // ATen's kernel reads X contiguous or channels-last and writes Y in X's format.
  const at::MemoryFormat format = x.suggest_memory_format();
  const c10::MaybeOwned<at::Tensor> in = x.expect_contiguous(format);
  at::Tensor& out = outputTensorLike(p, 0, x);
  at::native::resize_(out, x.sizes(), format);
  if (x.numel() == 0) {
    return;
  }
  // Statistics in the accumulation type ATen uses (float for bfloat16).
  const at::ScalarType stats_type = type == at::kDouble ? at::kDouble : at::kFloat;
  const int64_t stats = batch * groups;
  void* scratch = p.scratch(2 * stats * c10::elementSize(stats_type));
  at::Tensor mean = at::from_blob(scratch, {batch, groups}, at::TensorOptions().dtype(stats_type));
  at::Tensor rstd =
      at::from_blob(static_cast<char*>(scratch) + stats * c10::elementSize(stats_type),
                    {batch, groups}, at::TensorOptions().dtype(stats_type));
  at::native::GroupNormKernel(at::kCPU, *in, weight, bias, batch, channels, image, groups, eps, out,
                              mean, rstd);
  if (activation != Activation::kNone) {
    out.copy_(applyActivation(activation, out));
  }
}

// group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None,
//            float eps=1e-05, bool cudnn_enabled=True)
void groupNorm(ProcessedNode& p) {
  normalizeGroups(p, p.input(0).toTensor(), p.input(1).toInt(), tensorOrUndefined(p.input(2)),
                  tensorOrUndefined(p.input(3)), p.input(4).toDouble());
}

// instance_norm(input, weight?, bias?, running_mean?, running_var?, use_input_stats, momentum,
// eps, cudnn_enabled) with the input's statistics: group_norm with one group per channel.
void instanceNorm(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  TORCH_CHECK(x.dim() >= 2, "static_runtime: instance_norm expects an input of at least 2 dims ",
              "(N, C, *), got ", x.sizes());
  normalizeGroups(p, x, x.size(1), tensorOrUndefined(p.input(1)), tensorOrUndefined(p.input(2)),
                  p.input(7).toDouble());
}

std::optional<KernelFunction> instanceNormFactory(const Node* node, const KernelOptions&) {
  // Running statistics are either used (eval with track_running_stats: a batch norm) or updated
  // in place; only use_input_stats=True without them is the pure function above.
  const c10::optional<bool> use_input_stats = torch::jit::constant_as<bool>(node->input(5));
  if (!use_input_stats || !*use_input_stats || !node->input(3)->type()->cast<c10::NoneType>() ||
      !node->input(4)->type()->cast<c10::NoneType>()) {
    return std::nullopt;
  }
  return kernelForOverload(node, {{"", instanceNorm}});
}

const char* const kGroupNormActivationSchema =
    "srt::group_norm_activation(Tensor input, int num_groups, Tensor? weight=None, "
    "Tensor? bias=None, float eps=1e-05, str activation=\"none\") -> Tensor";

// What the JIT runs: the ATen ops the node replaced.
at::Tensor groupNormActivationReference(const at::Tensor& input, int64_t groups,
                                        const c10::optional<at::Tensor>& weight,
                                        const c10::optional<at::Tensor>& bias, double eps,
                                        c10::string_view activation) {
  const Activation parsed = activationOrError(
      std::string_view(activation.data(), activation.size()), "srt::group_norm_activation");
  return applyActivation(parsed, at::group_norm(input, groups, weight, bias, eps));
}

std::optional<KernelFunction> groupNormActivationFactory(const Node* node, const KernelOptions&) {
  if (!node->matches(kGroupNormActivationSchema)) {
    return std::nullopt;
  }
  const std::optional<Activation> activation = constantActivation(node->input(5));
  if (!activation) {
    return std::nullopt; // a run-time activation name: the JIT operator
  }
  return [activation = *activation](ProcessedNode& p) {
    normalizeGroups(p, p.input(0).toTensor(), p.input(1).toInt(), tensorOrUndefined(p.input(2)),
                    tensorOrUndefined(p.input(3)), p.input(4).toDouble(), activation);
  };
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kGroupNormActivationSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        groupNormActivationReference);
}

SRT_REGISTER_KERNEL("aten::group_norm", kOutVariant, tensorOverload<groupNorm>);
SRT_REGISTER_KERNEL("srt::group_norm_activation", kOutVariant, groupNormActivationFactory);
SRT_REGISTER_KERNEL("aten::instance_norm", kOutVariant, instanceNormFactory);

} // namespace srt::ops
