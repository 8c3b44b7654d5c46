// An inverted residual block's expansion and depthwise convolutions as one node: a channel-blocked
// 1x1 convolution (stride 1, no residual) whose one reader is a depthwise one (3x3 or 5x5, "same"
// padding, stride 1 or 2, no residual) becomes srt::blocked_conv2d_dw of both. Its kernel
// (ops/conv/onednn_conv_fused_depthwise.cpp) convolves each band of the expanded image while it
// is in cache where that image is too large to stay there (a batch of mobile-network images),
// and otherwise runs the two convolutions as before. mobilenet_v2, efficientnet_b0, mnasnet and
// mobilenet_v3 are chains of such blocks.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/convolution.h"
#include "ops/conv/packed_conv.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;

// The node's packed weight when it is an srt::blocked_conv2d of float32 products, direct, with
// constant arguments matching it and no residual; nullptr otherwise.
const ops::OneDnnConvWeight* fusableConv(const Node* node) {
  if (!node->matches(ops::kBlockedConv2dSchema)) {
    return nullptr;
  }
  const auto epilogue = ops::constantConvEpilogue(node);
  const auto arguments = ops::constantConvArguments(node, 2);
  const auto weight = torch::jit::toIValue(node->input(1));
  if (!epilogue || epilogue->has_residual || !arguments || !weight || !weight->isCustomClass()) {
    return nullptr;
  }
  const auto& packed = *weight->toCustomClass<ops::PackedConvWeight>()->packed;
  if (!(ops::convArguments(packed) == *arguments) ||
      ops::convAlgorithm(packed) != ops::ConvAlgorithm::kDirect ||
      ops::multiplyPrecision(packed) != ops::MultiplyPrecision::kFloat32) {
    return nullptr;
  }
  return &packed;
}

bool isPointwise(const ops::OneDnnConvWeight& w) {
  const ops::ConvArguments& a = ops::convArguments(w);
  for (int i = 0; i < 2; ++i) {
    if (ops::convKernelSize(w, i) != 1 || a.stride[i] != 1 || a.padding[i] != 0) {
      return false;
    }
  }
  return a.groups == 1;
}

// A depthwise convolution of `channels` channels that oneDNN's fused kernel takes.
bool isDepthwiseOf(const ops::OneDnnConvWeight& w, int64_t channels) {
  const ops::ConvArguments& a = ops::convArguments(w);
  const int64_t k = ops::convKernelSize(w, 0);
  if (a.groups != channels || ops::convInChannels(w) != channels ||
      ops::convOutChannels(w) != channels || (k != 3 && k != 5) ||
      (a.stride[0] != 1 && a.stride[0] != 2)) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (ops::convKernelSize(w, i) != k || a.stride[i] != a.stride[0] || a.padding[i] != k / 2 ||
        a.dilation[i] != 1) {
      return false;
    }
  }
  return true;
}

bool isPointwiseConv(const Node* node) {
  const ops::OneDnnConvWeight* w = fusableConv(node);
  return w != nullptr && isPointwise(*w) && node->output()->uses().size() == 1;
}

} // namespace

bool fusePointwiseDepthwise(GraphPtr& graph) {
  bool changed = false;
  for (Node* pointwise : nodesWhere(graph->block(), isPointwiseConv)) {
    const torch::jit::Use& use = pointwise->output()->uses().front();
    Node* depthwise = use.user;
    const ops::OneDnnConvWeight* dw = fusableConv(depthwise);
    if (use.offset != 0 || dw == nullptr || depthwise->owningBlock() != pointwise->owningBlock() ||
        !isDepthwiseOf(*dw, ops::convOutChannels(*fusableConv(pointwise)))) {
      continue;
    }
    std::vector<torch::jit::Value*> inputs(pointwise->inputs().begin(), pointwise->inputs().end());
    inputs.insert(inputs.end(), depthwise->inputs().begin() + 1, depthwise->inputs().end());
    Node* fused = graph->create(c10::Symbol::fromQualString("srt::blocked_conv2d_dw"), inputs);
    fused->insertBefore(depthwise);
    fused->copyMetadata(depthwise);
    fused->output()->setType(depthwise->output()->type());
    depthwise->output()->replaceAllUsesWith(fused->output());
    depthwise->destroy();
    pointwise->destroy();
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
