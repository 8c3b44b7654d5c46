// aten::conv2d and aten::conv3d, srt::fused_conv2d/3d (a convolution, a residual added to it, an
// activation; the conv_fusion pass makes them) and srt::packed_conv2d/3d (the same on a weight
// packed at build by the conv_weight_packing pass): one kernel for both ranks.
//
// Every convolution with a constant float32 weight runs on oneDNN with the weight packed once
// (ops/conv/onednn_conv.h). That includes the stems and heads of small CNNs, which an im2col +
// OpenBLAS path used to run: with channels-last activations and packed weights, oneDNN's AVX-512
// convolutions beat it from 16x16 images up (SmallCNN's three convolutions at 1x3x16x16: 3.3,
// 4.4, 4.1 us against 4.3, 11.3, 10.4). A weight that is not constant keeps ATen's kernel, which
// LibTorch 1.13 exports without an out variant.
#include <optional>
#include <string>

#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/conv/convolution.h"
#include "ops/conv/onednn_conv.h"
#include "ops/conv/packed_conv.h"
#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

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
constexpr const char* kConv3dSchema =
    "aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, "
    "int[3] padding=0, int[3] dilation=1, int groups=1) -> Tensor";
constexpr const char* kFusedConv3dSchema =
    "srt::fused_conv3d(Tensor input, Tensor weight, Tensor? bias, int[3] stride, int[3] padding, "
    "int[3] dilation, int groups, Tensor? residual, str activation, Scalar act_a, Scalar act_b) "
    "-> Tensor";

// Inputs of both ops; the fused one has these after the first seven.
enum ConvInput { kInput = 0, kWeight, kBias, kStride, kPadding, kDilation, kGroups };
enum FusedInput { kResidual = 7, kActivation, kActA, kActB };
// srt::scaled_packed_conv2d / scaled_blocked_conv2d: the factors the input is multiplied by.
constexpr int kScale = 11;

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

} // namespace

std::optional<ConvEpilogue> constantConvEpilogue(const torch::jit::Node* node) {
  return constantConvEpilogue(node->inputs());
}

std::optional<ConvEpilogue> constantConvEpilogue(ConvInputs inputs) {
  ConvEpilogue epilogue;
  if (inputs.size() <= kResidual) {
    return epilogue; // aten::conv2d/conv3d
  }
  const c10::TypePtr& residual = inputs[kResidual]->type();
  if (residual->kind() != c10::TypeKind::NoneType &&
      !residual->isSubtypeOf(*c10::TensorType::get())) {
    return std::nullopt;
  }
  epilogue.has_residual = residual->kind() != c10::TypeKind::NoneType;
  const auto name = torch::jit::constant_as<std::string>(inputs[kActivation]);
  const auto a = torch::jit::toIValue(inputs[kActA]);
  const auto b = torch::jit::toIValue(inputs[kActB]);
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

// What the JIT runs for srt::fused_conv2d/3d, and what we run for what the kernels do not cover:
// the ops the node replaced, in their order.
at::Tensor fusedConvReference(const at::Tensor& input, const at::Tensor& weight,
                              const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                              at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                              const c10::optional<at::Tensor>& residual,
                              c10::string_view activation, const at::Scalar& act_a,
                              const at::Scalar& act_b) {
  at::Tensor y = weight.dim() == 5
                     ? at::conv3d(input, weight, bias, stride, padding, dilation, groups)
                     : at::conv2d(input, weight, bias, stride, padding, dilation, groups);
  if (residual) {
    y = at::add(y, *residual);
  }
  if (activation == "none") {
    return y;
  }
  const ConvActivation* found = findActivation(activation);
  TORCH_CHECK(found != nullptr, "srt::fused_conv", weight.dim() - 2, "d: unknown activation '",
              std::string(activation), "'");
  return found->aten(y, act_a, act_b);
}

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kFusedConv2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA), fusedConvReference);
  m.def(torch::schema(kFusedConv3dSchema, c10::AliasAnalysisKind::FROM_SCHEMA), fusedConvReference);
}

namespace {

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

// aten::conv2d or aten::conv3d (by the node's op: a weight given at run time may have any rank,
// and the node must fail as the JIT's would).
template <int SpatialDims> at::Tensor atenConv(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  const at::Tensor& input = p.input(kInput).toTensor();
  const at::Tensor& weight = p.input(kWeight).toTensor();
  const c10::optional<at::Tensor> bias = optionalTensor(p.input(kBias));
  const at::DimVector stride = p.input(kStride).toDimVector();
  const at::DimVector padding = p.input(kPadding).toDimVector();
  const at::DimVector dilation = p.input(kDilation).toDimVector();
  const int64_t groups = p.input(kGroups).toInt();
  if constexpr (SpatialDims == 3) {
    return at::native::conv3d(input, weight, bias, stride, padding, dilation, groups);
  } else {
    return at::native::conv2d(input, weight, bias, stride, padding, dilation, groups);
  }
}

template <int SpatialDims> void nativeConv(ProcessedNode& p) {
  p.output(0) = atenConv<SpatialDims>(p);
}

// The convolution's input: input 0, times the scale of srt::scaled_*_conv2d.
at::Tensor convolvedInput(const ProcessedNode& p) {
  const at::Tensor& input = p.input(kInput).toTensor();
  return p.numInputs() > kScale ? at::mul(input, p.input(kScale).toTensor()) : input;
}

// ATen's result for the node (either op), copied into the node's output so the memory planner
// keeps owning it: for what the kernels below do not cover (other dtypes, layouts, invalid
// arguments, which ATen then reports).
void referenceIntoOutput(ProcessedNode& p) {
  at::Tensor result;
  const InferenceDispatch below_autograd;
  if (p.input(kWeight).isCustomClass()) {
    result = packedConvReference(
        convolvedInput(p), p.input(kWeight).toCustomClass<PackedConvWeight>(),
        optionalTensor(p.input(kBias)), p.input(kStride).toDimVector(),
        p.input(kPadding).toDimVector(), p.input(kDilation).toDimVector(), p.input(kGroups).toInt(),
        optionalTensor(p.input(kResidual)), p.input(kActivation).toStringRef(),
        p.input(kActA).toScalar(), p.input(kActB).toScalar());
  } else if (p.numInputs() > kResidual) {
    result = fusedConvReference(p.input(kInput).toTensor(), p.input(kWeight).toTensor(),
                                optionalTensor(p.input(kBias)), p.input(kStride).toDimVector(),
                                p.input(kPadding).toDimVector(), p.input(kDilation).toDimVector(),
                                p.input(kGroups).toInt(), optionalTensor(p.input(kResidual)),
                                p.input(kActivation).toStringRef(), p.input(kActA).toScalar(),
                                p.input(kActB).toScalar());
  } else if (p.input(kWeight).toTensor().dim() == 5) { // constant: the factory packed it as 3-D
    result = atenConv<3>(p);
  } else {
    result = atenConv<2>(p);
  }
  copyIntoOutput(p, result);
}

// referenceIntoOutput for srt::blocked_conv2d.
void blockedReferenceIntoOutput(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  const at::Tensor result = blockedConvReference(
      convolvedInput(p), p.input(kWeight).toCustomClass<PackedConvWeight>(),
      optionalTensor(p.input(kBias)), p.input(kStride).toDimVector(),
      p.input(kPadding).toDimVector(), p.input(kDilation).toDimVector(), p.input(kGroups).toInt(),
      optionalTensor(p.input(kResidual)), p.input(kActivation).toStringRef(),
      p.input(kActA).toScalar(), p.input(kActB).toScalar());
  copyIntoOutput(p, result);
}

// A constant int list argument of the node, as aten::conv2d reads int[2] (one value for every
// dimension, or one per dimension).
std::optional<std::vector<int64_t>> constantList(const torch::jit::Value* value, int dims) {
  const auto list = torch::jit::toIValue(value);
  if (!list || !list->isIntList()) {
    return std::nullopt;
  }
  std::vector<int64_t> values = list->toIntVector();
  if (values.size() == 1) {
    values.resize(dims, values.front());
  }
  if (values.size() != static_cast<size_t>(dims)) {
    return std::nullopt;
  }
  return values;
}

// The node's output layout: channel-blocked for srt::blocked_conv2d; channels last whatever its
// input's layout where passes/channels_last.cpp asked for it; else its input's.
ConvOutputLayout outputLayout(const torch::jit::Node* node) {
  if (node->matches(kBlockedConv2dSchema) || node->matches(kScaledBlockedConv2dSchema)) {
    return ConvOutputLayout::kBlocked;
  }
  const c10::Symbol attribute = c10::Symbol::attr(kChannelsLastOutput);
  return node->hasAttribute(attribute) && node->i(attribute) != 0 ? ConvOutputLayout::kChannelsLast
                                                                  : ConvOutputLayout::kAsInput;
}

// The kernel of a packed convolution whose inputs are `inputs` (srt::packed_conv2d/3d's
// positions), writing `layout`; std::nullopt when its arguments are not constants or not the
// packed weight's.
std::optional<KernelFunction> packedConvKernel(ConvInputs inputs, int spatial_dims,
                                               ConvOutputLayout layout, int scale_input) {
  const auto weight = torch::jit::toIValue(inputs[kWeight]);
  const std::optional<ConvArguments> arguments = constantConvArguments(inputs, spatial_dims);
  const std::optional<ConvEpilogue> epilogue = constantConvEpilogue(inputs);
  if (!weight || !weight->isCustomClass() || !arguments || !epilogue) {
    return std::nullopt;
  }
  const auto packed = weight->toCustomClass<PackedConvWeight>();
  if (!(convArguments(*packed->packed) == *arguments)) {
    return std::nullopt;
  }
  return makeOneDnnConvKernel(packed->packed, *epilogue, kResidual, scale_input, layout,
                              layout == ConvOutputLayout::kBlocked ? blockedReferenceIntoOutput
                                                                   : referenceIntoOutput);
}

// srt::packed_conv2d/3d: oneDNN with the weight packed by passes/conv_weight_packing.cpp.
std::optional<KernelFunction> packedConvKernel(const torch::jit::Node* node, int spatial_dims) {
  const int scale_input = node->inputs().size() > kScale ? kScale : -1;
  return packedConvKernel(node->inputs(), spatial_dims, outputLayout(node), scale_input);
}

// Every convolution with a constant weight runs on oneDNN with the weight packed now (when
// passes/conv_weight_packing.cpp has not packed it already). A weight that is not constant, or
// arguments that are not, decline (ATen's kernel, or the JIT operator of srt::fused_conv2d/3d,
// runs them).
std::optional<KernelFunction> convFactory(const torch::jit::Node* node,
                                          const KernelOptions& options) {
  if (!options.enable_out_variant) {
    return std::nullopt;
  }
  if (node->matches(kPackedConv2dSchema) || node->matches(kBlockedConv2dSchema) ||
      node->matches(kScaledPackedConv2dSchema) || node->matches(kScaledBlockedConv2dSchema)) {
    return packedConvKernel(node, 2);
  }
  if (node->matches(kPackedConv3dSchema)) {
    return packedConvKernel(node, 3);
  }
  int spatial_dims = 0;
  if (node->matches(kConv2dSchema) || node->matches(kFusedConv2dSchema)) {
    spatial_dims = 2;
  } else if (node->matches(kConv3dSchema) || node->matches(kFusedConv3dSchema)) {
    spatial_dims = 3;
  } else {
    return std::nullopt;
  }
  const auto weight = torch::jit::toIValue(node->input(kWeight));
  const auto bias = torch::jit::toIValue(node->input(kBias));
  const std::optional<ConvArguments> arguments = constantConvArguments(node, spatial_dims);
  const std::optional<ConvEpilogue> epilogue = constantConvEpilogue(node);
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor()) ||
      !arguments || !epilogue) {
    return std::nullopt;
  }
  // packConvWeight declines weights and biases it cannot take (nullptr).
  auto packed = packConvWeight(weight->toTensor(), bias->isNone() ? at::Tensor() : bias->toTensor(),
                               *arguments);
  if (packed == nullptr) {
    return std::nullopt;
  }
  return makeOneDnnConvKernel(std::move(packed), *epilogue, kResidual, /*scale_input=*/-1,
                              outputLayout(node), referenceIntoOutput);
}

// The residual a packed convolution's epilogue adds, which its kernel may write the output over
// (ops/conv/onednn_conv.h): every path reads a residual element before it writes the output's.
std::optional<size_t> residualInput(const torch::jit::Node* node) {
  const std::optional<ConvEpilogue> epilogue = constantConvEpilogue(node);
  return epilogue && epilogue->has_residual ? std::optional<size_t>(kResidual) : std::nullopt;
}

} // namespace

std::optional<ConvArguments> constantConvArguments(const torch::jit::Node* node, int spatial_dims) {
  return constantConvArguments(node->inputs(), spatial_dims);
}

std::optional<ConvArguments> constantConvArguments(ConvInputs inputs, int spatial_dims) {
  const auto stride = constantList(inputs[kStride], spatial_dims);
  const auto padding = constantList(inputs[kPadding], spatial_dims);
  const auto dilation = constantList(inputs[kDilation], spatial_dims);
  const auto groups = torch::jit::constant_as<int64_t>(inputs[kGroups]);
  if (!stride || !padding || !dilation || !groups || *groups <= 0) {
    return std::nullopt;
  }
  ConvArguments arguments;
  arguments.spatial_dims = spatial_dims;
  for (int i = 0; i < spatial_dims; ++i) {
    if ((*stride)[i] <= 0 || (*padding)[i] < 0 || (*dilation)[i] <= 0) {
      return std::nullopt;
    }
    arguments.stride[i] = (*stride)[i];
    arguments.padding[i] = (*padding)[i];
    arguments.dilation[i] = (*dilation)[i];
  }
  arguments.groups = *groups;
  return arguments;
}

std::optional<KernelFunction> blockedConvKernel(ConvInputs inputs) {
  return packedConvKernel(inputs, 2, ConvOutputLayout::kBlocked, /*scale_input=*/-1);
}

SRT_REGISTER_KERNEL("aten::conv2d", kOutVariant, convFactory);
SRT_REGISTER_KERNEL("aten::conv2d", kNative, whenMatches(kConv2dSchema, nativeConv<2>));
SRT_REGISTER_KERNEL("srt::fused_conv2d", kOutVariant, convFactory);
SRT_REGISTER_KERNEL_WRITING_OVER("srt::packed_conv2d", kOutVariant, convFactory, residualInput);
SRT_REGISTER_KERNEL_WRITING_OVER("srt::blocked_conv2d", kOutVariant, convFactory, residualInput);
SRT_REGISTER_KERNEL_WRITING_OVER("srt::scaled_packed_conv2d", kOutVariant, convFactory,
                                 residualInput);
SRT_REGISTER_KERNEL_WRITING_OVER("srt::scaled_blocked_conv2d", kOutVariant, convFactory,
                                 residualInput);
SRT_REGISTER_KERNEL("aten::conv3d", kOutVariant, convFactory);
SRT_REGISTER_KERNEL("aten::conv3d", kNative, whenMatches(kConv3dSchema, nativeConv<3>));
SRT_REGISTER_KERNEL("srt::fused_conv3d", kOutVariant, convFactory);
SRT_REGISTER_KERNEL("srt::packed_conv3d", kOutVariant, convFactory);

} // namespace srt::ops
