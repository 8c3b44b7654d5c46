// Convolutions (2-D and 3-D) with a constant weight become srt::packed_conv2d/3d, whose weight
// input is one constant holding the weight and bias already packed for oneDNN
// (ops/conv/packed_conv.h). The plain weight constants then have no use left and the dead-code pass
// drops them: a module holds its convolution weights once, in the layout its kernels read
// (resnet18: 45 MB instead of 90).
#include <algorithm>
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/convolution.h"
#include "ops/conv/packed_conv.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The convolution's spatial dimensions (2 or 3), or 0 for any other node.
int convolutionDims(const Node* node) {
  if (node->kind() == c10::Symbol::fromQualString("aten::conv2d") ||
      node->kind() == c10::Symbol::fromQualString("srt::fused_conv2d")) {
    return 2;
  }
  if (node->kind() == c10::Symbol::fromQualString("aten::conv3d") ||
      node->kind() == c10::Symbol::fromQualString("srt::fused_conv3d")) {
    return 3;
  }
  return 0;
}

// The packed weight for a convolution oneDNN runs, or nullptr.
c10::intrusive_ptr<ops::PackedConvWeight> packedWeightFor(const Node* node, int dims) {
  const auto weight = torch::jit::toIValue(node->input(1));
  const auto bias = torch::jit::toIValue(node->input(2));
  const auto arguments = ops::constantConvArguments(node, dims);
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor()) ||
      !arguments) {
    return {};
  }
  const at::Tensor& w = weight->toTensor();
  if (w.dim() != dims + 2 || w.scalar_type() != at::kFloat) {
    return {};
  }
  return ops::packConvWeightConstant(w, bias->isNone() ? at::Tensor() : bias->toTensor(),
                                     *arguments);
}

void replaceWithPacked(torch::jit::Graph& graph, Node* conv, int dims,
                       const c10::intrusive_ptr<ops::PackedConvWeight>& packed) {
  torch::jit::WithInsertPoint insert(conv);
  Value* weight = graph.insertConstant(c10::IValue(packed));
  Value* none = graph.insertConstant(c10::IValue());
  std::vector<Value*> inputs = {conv->input(0), weight, none};
  for (size_t i = 3; i < 7; ++i) {
    inputs.push_back(conv->input(i));
  }
  if (conv->inputs().size() > 7) { // srt::fused_conv2d/3d: residual and activation as they are
    for (size_t i = 7; i < conv->inputs().size(); ++i) {
      inputs.push_back(conv->input(i));
    }
  } else {
    inputs.push_back(none);
    inputs.push_back(graph.insertConstant(std::string("none")));
    inputs.push_back(graph.insertConstant(c10::Scalar(0.0)));
    inputs.push_back(graph.insertConstant(c10::Scalar(0.0)));
  }
  const char* op = dims == 3 ? "srt::packed_conv3d" : "srt::packed_conv2d";
  Node* packed_conv = graph.insertNode(graph.create(c10::Symbol::fromQualString(op), inputs, 1));
  packed_conv->copyMetadata(conv);    // source range, inlined call stack, scope: for error messages
  packed_conv->copyAttributes(*conv); // the layout pass's (ops::kChannelsLastOutput)
  packed_conv->output()->copyMetadata(conv->output());
  conv->output()->replaceAllUsesWith(packed_conv->output());
  conv->destroy();
}

} // namespace

bool packConvWeights(GraphPtr& graph) {
  std::vector<Node*> convolutions;
  for (Node* node : graph->nodes()) {
    if (convolutionDims(node) != 0) {
      convolutions.push_back(node);
    }
  }
  // A layer applied more than once (the same weight and bias constants, the same arguments)
  // shares one packed weight.
  struct PackedLayer {
    int dims;
    std::vector<c10::IValue> arguments; // the weight, bias, stride, padding, dilation, groups
    c10::intrusive_ptr<ops::PackedConvWeight> packed;
  };
  const auto layerArguments = [](const Node* conv) {
    std::vector<c10::IValue> arguments;
    for (size_t i = 1; i < 7; ++i) {
      arguments.push_back(torch::jit::toIValue(conv->input(i)).value_or(c10::IValue()));
    }
    return arguments;
  };
  const auto same = [](const c10::IValue& a, const c10::IValue& b) {
    return a.isTensor() ? b.isTensor() && a.toTensor().is_same(b.toTensor()) : a == b;
  };
  std::vector<PackedLayer> layers;
  bool changed = false;
  for (Node* conv : convolutions) {
    const int dims = convolutionDims(conv);
    const std::vector<c10::IValue> arguments = layerArguments(conv);
    c10::intrusive_ptr<ops::PackedConvWeight> packed;
    for (const PackedLayer& layer : layers) {
      if (layer.dims == dims &&
          std::equal(arguments.begin(), arguments.end(), layer.arguments.begin(), same)) {
        packed = layer.packed;
      }
    }
    if (!packed) {
      packed = packedWeightFor(conv, dims);
      if (!packed) {
        continue;
      }
      layers.push_back({dims, arguments, packed});
    }
    replaceWithPacked(*graph, conv, dims, packed);
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
