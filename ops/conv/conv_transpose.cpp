// aten::conv_transpose2d/3d: transposed convolutions with a constant weight on oneDNN's
// deconvolution, the weight packed once when the module is built (ops/conv/onednn_conv.h); the
// ungrouped, undilated 2-D ones as one GEMM (ops/conv/gemm_conv_transpose.h).
// (Freezing already turns a traced aten::_convolution(transposed=True) into these.)
// conv_transpose1d reaches here as a 2-D one (passes/conv1d_lowering.cpp). A weight or arguments
// that are not constants keep ATen's op.
#include <optional>
#include <vector>

#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/gemm_conv_transpose.h"
#include "ops/conv/onednn_conv.h"
#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

constexpr const char* kConvTranspose2dSchema =
    "aten::conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, "
    "int[2] stride=1, int[2] padding=0, int[2] output_padding=0, int groups=1, "
    "int[2] dilation=1) -> Tensor";
constexpr const char* kConvTranspose3dSchema =
    "aten::conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, "
    "int[3] stride=1, int[3] padding=0, int[3] output_padding=0, int groups=1, "
    "int[3] dilation=1) -> Tensor";
// Where each op has its arguments (input, weight and bias are inputs 0, 1, 2 in all).
struct Positions {
  int stride, padding, output_padding, groups, dilation;
};
constexpr Positions kConvTransposePositions{3, 4, 5, 6, 7};

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

// aten::conv_transpose2d or 3d on the node's inputs.
at::Tensor convTranspose(int64_t spatial_dims, ProcessedNode& p) {
  const at::Tensor& input = p.input(0).toTensor();
  const at::Tensor& weight = p.input(1).toTensor();
  const c10::optional<at::Tensor> bias = optionalTensor(p.input(2));
  const at::DimVector stride = p.input(3).toDimVector();
  const at::DimVector padding = p.input(4).toDimVector();
  const at::DimVector output_padding = p.input(5).toDimVector();
  const int64_t groups = p.input(6).toInt();
  const at::DimVector dilation = p.input(7).toDimVector();
  if (spatial_dims == 3) {
    return at::conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                dilation);
  }
  return at::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                              dilation);
}

// ATen's result for the node, copied into the node's output so the memory planner keeps owning
// it: for what oneDNN does not take (other dtypes, layouts, invalid inputs, which ATen reports).
void referenceIntoOutput(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  // The weight is the constant the factory packed: its rank is the node's.
  const at::Tensor result = convTranspose(p.input(1).toTensor().dim() - 2, p);
  copyIntoOutput(p, result);
}

// A constant int list of one value (for every dimension) or one per dimension.
std::optional<std::vector<int64_t>> constantList(const torch::jit::Value* value, int dims) {
  auto list = torch::jit::constant_as<std::vector<int64_t>>(value);
  if (!list || (list->size() != 1 && list->size() != static_cast<size_t>(dims))) {
    return std::nullopt;
  }
  list->resize(dims, list->front());
  return *list;
}

std::optional<ConvArguments> constantArguments(const torch::jit::Node* node, int dims,
                                               const Positions& at) {
  const auto stride = constantList(node->input(at.stride), dims);
  const auto padding = constantList(node->input(at.padding), dims);
  const auto output_padding = constantList(node->input(at.output_padding), dims);
  const auto dilation = constantList(node->input(at.dilation), dims);
  const auto groups = torch::jit::constant_as<int64_t>(node->input(at.groups));
  if (!stride || !padding || !output_padding || !dilation || !groups || *groups <= 0) {
    return std::nullopt;
  }
  ConvArguments arguments;
  arguments.spatial_dims = dims;
  arguments.transposed = true;
  arguments.groups = *groups;
  for (int i = 0; i < dims; ++i) {
    // ATen's own checks: output_padding smaller than stride or dilation.
    if ((*stride)[i] <= 0 || (*padding)[i] < 0 || (*dilation)[i] <= 0 || (*output_padding)[i] < 0 ||
        ((*output_padding)[i] >= (*stride)[i] && (*output_padding)[i] >= (*dilation)[i])) {
      return std::nullopt;
    }
    arguments.stride[i] = (*stride)[i];
    arguments.padding[i] = (*padding)[i];
    arguments.output_padding[i] = (*output_padding)[i];
    arguments.dilation[i] = (*dilation)[i];
  }
  return arguments;
}

std::optional<KernelFunction> convTransposeFactory(const torch::jit::Node* node,
                                                   const KernelOptions& options) {
  if (!options.enable_out_variant) {
    return std::nullopt;
  }
  const auto weight = torch::jit::toIValue(node->input(1));
  const auto bias = torch::jit::toIValue(node->input(2));
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor())) {
    return std::nullopt;
  }
  const int dims = static_cast<int>(weight->toTensor().dim()) - 2;
  std::optional<ConvArguments> arguments;
  if ((dims == 2 && node->matches(kConvTranspose2dSchema)) ||
      (dims == 3 && node->matches(kConvTranspose3dSchema))) {
    arguments = constantArguments(node, dims, kConvTransposePositions);
  }
  if (!arguments) {
    return std::nullopt;
  }
  const at::Tensor bias_tensor = bias->isNone() ? at::Tensor() : bias->toTensor();
  if (auto gemm = makeGemmConvTransposeKernel(weight->toTensor(), bias_tensor, *arguments,
                                              options.weight_precision, referenceIntoOutput)) {
    return gemm;
  }
  auto packed = packConvWeight(weight->toTensor(), bias_tensor, *arguments);
  if (packed == nullptr) {
    return std::nullopt;
  }
  return makeOneDnnConvKernel(std::move(packed), ConvEpilogue{}, /*residual_input=*/-1,
                              /*scale_input=*/-1, ConvOutputLayout::kAsInput, referenceIntoOutput);
}

// A weight given at run time: ATen's op (by the node's op, whatever the weight's rank), whose
// result the runtime adopts.
template <int SpatialDims> void nativeConvTranspose(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  p.output(0) = convTranspose(SpatialDims, p);
}

} // namespace

SRT_REGISTER_KERNEL("aten::conv_transpose2d", kOutVariant, convTransposeFactory);
SRT_REGISTER_KERNEL("aten::conv_transpose3d", kOutVariant, convTransposeFactory);
SRT_REGISTER_KERNEL("aten::conv_transpose2d", kNative,
                    whenMatches(kConvTranspose2dSchema, nativeConvTranspose<2>));
SRT_REGISTER_KERNEL("aten::conv_transpose3d", kNative,
                    whenMatches(kConvTranspose3dSchema, nativeConvTranspose<3>));

} // namespace srt::ops
