// Convolutions with a constant weight become srt::packed_conv2d, whose weight input is one
// constant holding the weight and bias already packed for oneDNN (ops/conv/packed_conv.h). The
// plain weight constants then have no use left and the dead-code pass drops them: a module holds
// its convolution weights once, in the layout its kernels read (resnet18: 45 MB instead of 90).
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/packed_conv.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool isConvolution(const Node* node) {
  return node->kind() == c10::Symbol::fromQualString("aten::conv2d") ||
         node->kind() == c10::Symbol::fromQualString("srt::fused_conv2d");
}

std::optional<std::vector<int64_t>> constantPair(const Value* value) {
  auto list = torch::jit::constant_as<std::vector<int64_t>>(value);
  if (!list || list->empty() || list->size() > 2) {
    return std::nullopt;
  }
  return std::vector<int64_t>{list->front(), list->back()};
}

// The node's stride, padding, dilation and groups when all are constants.
std::optional<ops::ConvArguments> constantArguments(const Node* node) {
  const auto stride = constantPair(node->input(3));
  const auto padding = constantPair(node->input(4));
  const auto dilation = constantPair(node->input(5));
  const auto groups = torch::jit::constant_as<int64_t>(node->input(6));
  if (!stride || !padding || !dilation || !groups) {
    return std::nullopt;
  }
  ops::ConvArguments arguments;
  for (int i = 0; i < 2; ++i) {
    arguments.stride[i] = (*stride)[i];
    arguments.padding[i] = (*padding)[i];
    arguments.dilation[i] = (*dilation)[i];
  }
  arguments.groups = *groups;
  return arguments;
}

// The packed weight for a convolution oneDNN runs, or nullptr.
c10::intrusive_ptr<ops::PackedConvWeight> packedWeightFor(const Node* node) {
  const auto weight = torch::jit::toIValue(node->input(1));
  const auto bias = torch::jit::toIValue(node->input(2));
  const auto arguments = constantArguments(node);
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor()) ||
      !arguments) {
    return {};
  }
  const at::Tensor& w = weight->toTensor();
  if (w.dim() != 4 || w.scalar_type() != at::kFloat) {
    return {};
  }
  return ops::packConvWeightConstant(w, bias->isNone() ? at::Tensor() : bias->toTensor(),
                                     *arguments);
}

void replaceWithPacked(torch::jit::Graph& graph, Node* conv,
                       const c10::intrusive_ptr<ops::PackedConvWeight>& packed) {
  torch::jit::WithInsertPoint insert(conv);
  Value* weight = graph.insertConstant(c10::IValue(packed));
  Value* none = graph.insertConstant(c10::IValue());
  std::vector<Value*> inputs = {conv->input(0), weight, none};
  for (size_t i = 3; i < 7; ++i) {
    inputs.push_back(conv->input(i));
  }
  if (conv->inputs().size() > 7) { // srt::fused_conv2d: residual and activation as they are
    for (size_t i = 7; i < conv->inputs().size(); ++i) {
      inputs.push_back(conv->input(i));
    }
  } else {
    inputs.push_back(none);
    inputs.push_back(graph.insertConstant(std::string("none")));
    inputs.push_back(graph.insertConstant(c10::Scalar(0.0)));
    inputs.push_back(graph.insertConstant(c10::Scalar(0.0)));
  }
  Node* packed_conv =
      graph.insertNode(graph.create(c10::Symbol::fromQualString("srt::packed_conv2d"), inputs, 1));
  packed_conv->setSourceRange(conv->sourceRange());
  packed_conv->output()->setType(conv->output()->type());
  conv->output()->replaceAllUsesWith(packed_conv->output());
  conv->destroy();
}

} // namespace

bool packConvWeights(GraphPtr& graph) {
  std::vector<Node*> convolutions;
  for (Node* node : graph->nodes()) {
    if (isConvolution(node)) {
      convolutions.push_back(node);
    }
  }
  bool changed = false;
  for (Node* conv : convolutions) {
    if (const auto packed = packedWeightFor(conv)) {
      replaceWithPacked(*graph, conv, packed);
      changed = true;
    }
  }
  return changed;
}

} // namespace srt::passes
