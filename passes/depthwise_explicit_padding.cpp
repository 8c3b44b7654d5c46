// depthwise_explicit_padding: a depthwise convolution whose padding oneDNN's depthwise kernels do
// not take (ops::oneDnnDepthwiseWantsExplicitPadding: oneDNN 2.6 then computes it as im2col +
// GEMM, 5-6x slower) reads a zero-padded copy of its input instead:
//
//   conv2d(x, w, b, s, [ph, pw], d, C)  ->  conv2d(constant_pad_nd(x, [pw, pw, ph, ph], 0), w, b,
//                                                  s, [0, 0], d, C)
//
// The same sums over the same zeros; the copy costs one pass over the input (channels last is
// kept: passes/channels_last.cpp counts constant_pad_nd among the ops that keep the format).
// Temporal convolution networks write these: Conv-TasNet's dilated depthwise 1-D convolutions
// pad by their dilation, 1 ... 128.
#include <cstdint>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/convolution.h"
#include "ops/conv/onednn_conv.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

constexpr size_t kInput = 0;
constexpr size_t kWeight = 1;
constexpr size_t kPadding = 4;

bool wantsExplicitPadding(const Node* node) {
  if (node->kind() != c10::aten::conv2d) {
    return false;
  }
  const auto weight = torch::jit::constant_as<at::Tensor>(node->input(kWeight));
  const std::optional<ops::ConvArguments> arguments = ops::constantConvArguments(node, 2);
  const auto input = node->input(kInput)->type()->cast<c10::TensorType>();
  const bool batched = !input || !input->dim() || *input->dim() == 4; // pads count from the end
  return weight && arguments && batched &&
         ops::oneDnnDepthwiseWantsExplicitPadding(*weight, *arguments);
}

void padExplicitly(torch::jit::Graph& graph, Node* conv) {
  const std::optional<ops::ConvArguments> arguments = ops::constantConvArguments(conv, 2);
  torch::jit::WithInsertPoint insert(conv);
  const int64_t height = arguments->padding[0];
  const int64_t width = arguments->padding[1];
  Value* padded =
      graph.insert(c10::aten::constant_pad_nd,
                   {conv->input(kInput), std::vector<int64_t>{width, width, height, height}, 0.0});
  padded->setType(c10::TensorType::get());
  conv->replaceInput(kInput, padded);
  conv->replaceInput(kPadding, graph.insertConstant(std::vector<int64_t>{0, 0}));
}

} // namespace

bool padDepthwiseExplicitly(GraphPtr& graph) {
  bool changed = false;
  forEachNode(graph->block(), [&](Node* node) {
    if (wantsExplicitPadding(node)) {
      padExplicitly(*graph, node);
      changed = true;
    }
  });
  return changed;
}

} // namespace srt::passes
