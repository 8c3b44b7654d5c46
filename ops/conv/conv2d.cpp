// aten::conv2d and srt::fused_conv2d (a convolution, a residual added to it, an activation; the
// conv_fusion pass makes them).
//
// With a constant weight, one factory decides how a node runs. Small convolutions (the stems and
// heads of small CNNs: few channels, small images) run as im2col into planned scratch plus one
// OpenBLAS sgemm per image, writing the NCHW output directly: ATen's path reorders the weight and
// the activations for oneDNN on every call, which at these sizes costs more than the arithmetic
// (SmallCNN's two 3x3 convs: 13.8 and 11.1 us through ATen). The rest run on oneDNN with the weight
// packed once (ops/conv/onednn_conv.h). A weight that is not constant keeps ATen's kernel, which
// LibTorch 1.13 exports without an out variant.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#include <cblas.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/conv/onednn_conv.h"
#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace {

constexpr const char* kConv2dSchema =
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
    "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor";
// activation: "none", or one of kActivations' names; act_a / act_b its parameters.
constexpr const char* kFusedConv2dSchema =
    "srt::fused_conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, "
    "int[2] dilation, int groups, Tensor? residual, str activation, Scalar act_a, Scalar act_b) "
    "-> Tensor";

// Inputs of both ops; the fused one has these after the first seven.
enum ConvInput { kInput = 0, kWeight, kBias, kStride, kPadding, kDilation, kGroups };
enum FusedInput { kResidual = 7, kActivation, kActA, kActB };

// Where im2col + sgemm stays ahead of oneDNN: a column matrix of at most this many floats per
// image (kept in L2), and at most this many output channels.
constexpr int64_t kMaxColumnFloats = int64_t{1} << 16;
constexpr int64_t kMaxOutChannels = 64;

// The activations srt::fused_conv2d applies, by name: the ATen op the conv_fusion pass took it
// from (the reference), and the element-wise formula with its parameters from act_a / act_b.
struct ConvActivation {
  const char* name;
  vec::UnaryOp formula;
  int parameters; // how many of act_a, act_b it takes (as the formula's a, b)
  at::Tensor (*aten)(const at::Tensor&, const at::Scalar&, const at::Scalar&);
};

const ConvActivation kActivations[] = {
    {"relu", vec::UnaryOp::kRelu, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::relu(x); }},
    {"hardtanh", vec::UnaryOp::kClamp, 2,
     [](const at::Tensor& x, const at::Scalar& a, const at::Scalar& b) {
       return at::hardtanh(x, a, b);
     }},
    {"leaky_relu", vec::UnaryOp::kLeakyRelu, 1,
     [](const at::Tensor& x, const at::Scalar& a, const at::Scalar&) {
       return at::leaky_relu(x, a);
     }},
    {"sigmoid", vec::UnaryOp::kSigmoid, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::sigmoid(x); }},
    {"tanh", vec::UnaryOp::kTanh, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::tanh(x); }},
    {"silu", vec::UnaryOp::kSilu, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::silu(x); }},
    {"gelu", vec::UnaryOp::kGelu, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::gelu(x); }},
    {"gelu_tanh", vec::UnaryOp::kGeluTanh, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::gelu(x, "tanh"); }},
    {"hardswish", vec::UnaryOp::kHardswish, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::hardswish(x); }},
    {"hardsigmoid", vec::UnaryOp::kHardsigmoid, 0,
     [](const at::Tensor& x, const at::Scalar&, const at::Scalar&) { return at::hardsigmoid(x); }},
};

const ConvActivation* findActivation(c10::string_view name) {
  for (const ConvActivation& activation : kActivations) {
    if (name == activation.name) {
      return &activation;
    }
  }
  return nullptr;
}

// What the JIT runs for srt::fused_conv2d, and what we run for what the kernels do not cover: the
// ops the node replaced, in their order.
at::Tensor fusedConv2dReference(const at::Tensor& input, const at::Tensor& weight,
                                const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                                const c10::optional<at::Tensor>& residual,
                                c10::string_view activation, const at::Scalar& act_a,
                                const at::Scalar& act_b) {
  at::Tensor y = at::conv2d(input, weight, bias, stride, padding, dilation, groups);
  if (residual) {
    y = at::add(y, *residual);
  }
  if (activation == "none") {
    return y;
  }
  const ConvActivation* found = findActivation(activation);
  TORCH_CHECK(found != nullptr, "srt::fused_conv2d: unknown activation '", std::string(activation),
              "'");
  return found->aten(y, act_a, act_b);
}

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kFusedConv2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        fusedConv2dReference);
}

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

at::Tensor atenConv2d(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  return at::native::conv2d(p.input(kInput).toTensor(), p.input(kWeight).toTensor(),
                            optionalTensor(p.input(kBias)), p.input(kStride).toDimVector(),
                            p.input(kPadding).toDimVector(), p.input(kDilation).toDimVector(),
                            p.input(kGroups).toInt());
}

void nativeConv2d(ProcessedNode& p) {
  p.output(0) = atenConv2d(p);
}

// ATen's result for the node (either op), copied into the node's output so the memory planner
// keeps owning it: for what the kernels below do not cover (other dtypes, layouts, invalid
// arguments, which ATen then reports).
void referenceIntoOutput(ProcessedNode& p) {
  at::Tensor result;
  if (p.numInputs() > kResidual) {
    const InferenceDispatch below_autograd;
    result = fusedConv2dReference(p.input(kInput).toTensor(), p.input(kWeight).toTensor(),
                                  optionalTensor(p.input(kBias)), p.input(kStride).toDimVector(),
                                  p.input(kPadding).toDimVector(), p.input(kDilation).toDimVector(),
                                  p.input(kGroups).toInt(), optionalTensor(p.input(kResidual)),
                                  p.input(kActivation).toStringRef(), p.input(kActA).toScalar(),
                                  p.input(kActB).toScalar());
  } else {
    result = atenConv2d(p);
  }
  at::Tensor& out = outputTensorLike(p, 0, result);
  at::native::resize_(out, result.sizes());
  out.copy_(result);
}

// One or two values as ATen reads int[2] arguments.
int64_t pairAt(const c10::IValue& value, size_t i) {
  const at::DimVector values = value.toDimVector();
  return values.empty() ? -1 : values[values.size() == 1 ? 0 : i];
}

struct ConvGeometry {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t out_h, out_w;

  int64_t columnRows() const { return in_channels * kernel_h * kernel_w; }
  int64_t pixels() const { return out_h * out_w; }
  // A 1x1 convolution over every pixel reads the image itself as its column matrix.
  bool isPointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 &&
           pad_w == 0;
  }
};

// The geometry when this kernel can run the call: contiguous float32 NCHW input whose channels
// match the weight, valid stride/padding/dilation, a non-empty output. Otherwise std::nullopt and
// ATen runs it (and reports what is wrong).
std::optional<ConvGeometry> geometry(ProcessedNode& p, const at::Tensor& x,
                                     const at::Tensor& weight) {
  if (x.scalar_type() != at::kFloat || x.dim() != 4 || !x.is_contiguous() ||
      x.size(1) != weight.size(1)) {
    return std::nullopt;
  }
  ConvGeometry g{x.size(0),
                 x.size(1),
                 x.size(2),
                 x.size(3),
                 weight.size(0),
                 weight.size(2),
                 weight.size(3),
                 pairAt(p.input(3), 0),
                 pairAt(p.input(3), 1),
                 pairAt(p.input(4), 0),
                 pairAt(p.input(4), 1),
                 pairAt(p.input(5), 0),
                 pairAt(p.input(5), 1),
                 0,
                 0};
  if (g.stride_h <= 0 || g.stride_w <= 0 || g.pad_h < 0 || g.pad_w < 0 || g.dilation_h <= 0 ||
      g.dilation_w <= 0) {
    return std::nullopt;
  }
  const int64_t span_h = g.dilation_h * (g.kernel_h - 1) + 1;
  const int64_t span_w = g.dilation_w * (g.kernel_w - 1) + 1;
  if (g.in_h + 2 * g.pad_h < span_h || g.in_w + 2 * g.pad_w < span_w) {
    return std::nullopt;
  }
  g.out_h = (g.in_h + 2 * g.pad_h - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - span_w) / g.stride_w + 1;
  if (g.batch == 0 || g.in_channels == 0 || g.columnRows() * g.pixels() > kMaxColumnFloats) {
    return std::nullopt;
  }
  return g;
}

// The [C*KH*KW, OH*OW] column matrix of one image: row (c, kh, kw) holds, for every output pixel,
// the input value under that kernel tap, or 0 in the padding.
void im2col(const float* image, const ConvGeometry& g, float* columns) {
  float* row = columns;
  for (int64_t c = 0; c < g.in_channels; ++c) {
    const float* plane = image + c * g.in_h * g.in_w;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw, row += g.pixels()) {
        const int64_t x_offset = kw * g.dilation_w - g.pad_w;
        // Output columns whose input column is inside the image: [ox_begin, ox_end).
        int64_t ox_begin = 0;
        while (ox_begin < g.out_w && ox_begin * g.stride_w + x_offset < 0) {
          ++ox_begin;
        }
        int64_t ox_end = g.out_w;
        while (ox_end > ox_begin && (ox_end - 1) * g.stride_w + x_offset >= g.in_w) {
          --ox_end;
        }
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          float* out = row + oy * g.out_w;
          const int64_t iy = oy * g.stride_h - g.pad_h + kh * g.dilation_h;
          if (iy < 0 || iy >= g.in_h) {
            std::fill(out, out + g.out_w, 0.f);
            continue;
          }
          const float* in = plane + iy * g.in_w + x_offset;
          std::fill(out, out + ox_begin, 0.f);
          if (g.stride_w == 1) {
            std::memcpy(out + ox_begin, in + ox_begin, (ox_end - ox_begin) * sizeof(float));
          } else {
            for (int64_t ox = ox_begin; ox < ox_end; ++ox) {
              out[ox] = in[ox * g.stride_w];
            }
          }
          std::fill(out + ox_end, out + g.out_w, 0.f);
        }
      }
    }
  }
}

// Applies `epilogue` to `out`, a contiguous float32 result of the convolution, in place: the
// residual (same shape, contiguous float32) added, then the activation, with the unfused kernels'
// formulas.
void applyEpilogue(const ConvEpilogue& epilogue, const at::Tensor* residual, at::Tensor& out) {
  float* o = floatData(out);
  if (residual != nullptr) {
    vec::map(vec::BinaryOp::kAdd, o, floatData(*residual), o, out.numel(), {1.f});
  }
  if (epilogue.activation) {
    vec::map(*epilogue.activation, o, o, out.numel(), epilogue.params);
  }
}

class SmallConv2d {
public:
  // `larger`: what runs an image too large for the column matrix (the oneDNN kernel).
  SmallConv2d(at::Tensor weight, at::Tensor bias, ConvEpilogue epilogue, KernelFunction larger)
      : weight_(std::move(weight)), bias_(std::move(bias)), epilogue_(epilogue),
        larger_(std::move(larger)) {}

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(kInput).toTensor();
    const std::optional<ConvGeometry> g = geometry(p, x, weight_);
    const at::Tensor* residual = epilogue_.has_residual ? &p.input(kResidual).toTensor() : nullptr;
    const bool residual_fits =
        residual == nullptr ||
        (g && isContiguousFloat(*residual) &&
         residual->sizes() == at::IntArrayRef{g->batch, g->out_channels, g->out_h, g->out_w});
    if (!g || !residual_fits) {
      larger_(p);
      return;
    }
    at::Tensor& out =
        contiguousOutput(p, 0, {g->batch, g->out_channels, g->out_h, g->out_w}, x.options());
    float* columns =
        g->isPointwise()
            ? nullptr
            : static_cast<float*>(p.scratch(g->columnRows() * g->pixels() * sizeof(float)));
    const float* in = x.data_ptr<float>();
    float* o = floatData(out);
    const float* w = weight_.data_ptr<float>();
    const float* b = bias_.defined() ? bias_.data_ptr<float>() : nullptr;
    useAtenThreadsForOpenBlas();
    for (int64_t n = 0; n < g->batch; ++n) {
      const float* image = in + n * g->in_channels * g->in_h * g->in_w;
      float* result = o + n * g->out_channels * g->pixels();
      if (columns != nullptr) {
        im2col(image, *g, columns);
      }
      // sgemm adds to C with beta 1: each output row starts as its channel's bias.
      if (b != nullptr) {
        for (int64_t oc = 0; oc < g->out_channels; ++oc) {
          std::fill(result + oc * g->pixels(), result + (oc + 1) * g->pixels(), b[oc]);
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g->out_channels),
                  static_cast<int>(g->pixels()), static_cast<int>(g->columnRows()), 1.f, w,
                  static_cast<int>(g->columnRows()), columns != nullptr ? columns : image,
                  static_cast<int>(g->pixels()), b != nullptr ? 1.f : 0.f, result,
                  static_cast<int>(g->pixels()));
    }
    applyEpilogue(epilogue_, residual, out);
  }

private:
  at::Tensor weight_; // [OC, C, KH, KW], contiguous float32: sgemm reads it as [OC, C*KH*KW]
  at::Tensor bias_;   // [OC] contiguous float32, or undefined
  ConvEpilogue epilogue_;
  KernelFunction larger_;
};

// A constant int list or int argument of the node, as aten::conv2d reads int[2] (one value for
// both dimensions).
std::optional<std::pair<int64_t, int64_t>> constantPair(const torch::jit::Value* value) {
  const auto list = torch::jit::toIValue(value);
  if (!list || !list->isIntList()) {
    return std::nullopt;
  }
  const std::vector<int64_t> values = list->toIntVector();
  if (values.empty() || values.size() > 2) {
    return std::nullopt;
  }
  return std::make_pair(values.front(), values.back());
}

// The node's constant convolution arguments, or std::nullopt (then ATen runs it).
std::optional<ConvArguments> constantArguments(const torch::jit::Node* node) {
  const auto stride = constantPair(node->input(kStride));
  const auto padding = constantPair(node->input(kPadding));
  const auto dilation = constantPair(node->input(kDilation));
  const auto groups = torch::jit::constant_as<int64_t>(node->input(kGroups));
  if (!stride || !padding || !dilation || !groups || stride->first <= 0 || stride->second <= 0 ||
      padding->first < 0 || padding->second < 0 || dilation->first <= 0 || dilation->second <= 0 ||
      *groups <= 0) {
    return std::nullopt;
  }
  ConvArguments arguments;
  arguments.stride[0] = stride->first;
  arguments.stride[1] = stride->second;
  arguments.padding[0] = padding->first;
  arguments.padding[1] = padding->second;
  arguments.dilation[0] = dilation->first;
  arguments.dilation[1] = dilation->second;
  arguments.groups = *groups;
  return arguments;
}

// srt::fused_conv2d's epilogue from its constant arguments, or std::nullopt when they are not
// constants or the residual may or may not be None at run time (the JIT operator then runs it).
std::optional<ConvEpilogue> constantEpilogue(const torch::jit::Node* node) {
  ConvEpilogue epilogue;
  if (node->inputs().size() <= kResidual) {
    return epilogue; // aten::conv2d
  }
  const c10::TypePtr& residual = node->input(kResidual)->type();
  if (residual->kind() != c10::TypeKind::NoneType &&
      !residual->isSubtypeOf(*c10::TensorType::get())) {
    return std::nullopt;
  }
  epilogue.has_residual = residual->kind() != c10::TypeKind::NoneType;
  const auto name = torch::jit::constant_as<std::string>(node->input(kActivation));
  const auto a = torch::jit::toIValue(node->input(kActA));
  const auto b = torch::jit::toIValue(node->input(kActB));
  if (!name || !a || !b || !a->isScalar() || !b->isScalar() || a->toScalar().isComplex() ||
      b->toScalar().isComplex()) {
    return std::nullopt;
  }
  if (*name == "none") {
    return epilogue;
  }
  const ConvActivation* activation = findActivation(*name);
  if (activation == nullptr) {
    return std::nullopt;
  }
  epilogue.activation = activation->formula;
  epilogue.params = {static_cast<float>(a->toScalar().toDouble()),
                     static_cast<float>(b->toScalar().toDouble())};
  if (activation->parameters < 2) {
    epilogue.params.b = 0.f;
  }
  if (activation->parameters < 1) {
    epilogue.params.a = 0.f;
  }
  return epilogue;
}

// One decision for every convolution with a constant weight: small ones as im2col + sgemm, the
// rest on oneDNN with the weight packed now. A weight that is not constant, or arguments that are
// not, decline (ATen's kernel, or the JIT operator of srt::fused_conv2d, runs them).
std::optional<KernelFunction> conv2dFactory(const torch::jit::Node* node,
                                            const KernelOptions& options) {
  if (!options.enable_out_variant ||
      !(node->matches(kConv2dSchema) || node->matches(kFusedConv2dSchema))) {
    return std::nullopt;
  }
  const std::optional<c10::IValue> weight = torch::jit::toIValue(node->input(kWeight));
  const std::optional<c10::IValue> bias = torch::jit::toIValue(node->input(kBias));
  const std::optional<ConvArguments> arguments = constantArguments(node);
  const std::optional<ConvEpilogue> epilogue = constantEpilogue(node);
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor()) ||
      !arguments || !epilogue) {
    return std::nullopt;
  }
  const at::Tensor& w = weight->toTensor();
  const at::Tensor b = bias->isNone() ? at::Tensor() : bias->toTensor();
  if (w.scalar_type() != at::kFloat || w.dim() != 4 || !w.device().is_cpu() || w.numel() == 0 ||
      (b.defined() && (b.scalar_type() != at::kFloat || b.dim() != 1 || b.size(0) != w.size(0)))) {
    return std::nullopt;
  }
  auto packed = packConvWeight(w, b, *arguments);
  const bool packable = packed != nullptr;
  KernelFunction onednn =
      packable ? makeOneDnnConvKernel(std::move(packed), *epilogue, kResidual, referenceIntoOutput)
               : KernelFunction(referenceIntoOutput);
  // Small weights: whether the image is small enough too is known at run time only.
  const bool small = arguments->groups == 1 && w.size(0) <= kMaxOutChannels &&
                     w.size(1) * w.size(2) * w.size(3) <= kMaxColumnFloats;
  if (small) {
    return KernelFunction(
        SmallConv2d(w.contiguous(), b.defined() ? b.contiguous() : b, *epilogue, onednn));
  }
  if (!packable) {
    return std::nullopt;
  }
  return onednn;
}

} // namespace

SRT_REGISTER_KERNEL("aten::conv2d", kOutVariant, conv2dFactory);
SRT_REGISTER_KERNEL("aten::conv2d", kNative, whenMatches(kConv2dSchema, nativeConv2d));
SRT_REGISTER_KERNEL("srt::fused_conv2d", kOutVariant, conv2dFactory);

} // namespace srt::ops
