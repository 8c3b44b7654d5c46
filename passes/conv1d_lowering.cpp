// conv1d_lowering: a 1-D convolution with a constant weight becomes a 2-D one over a height of
// one, so it runs on the oneDNN convolution kernel (ops/conv/) with its packed weight, channels-
// last activations and planned scratch, instead of ATen's allocating conv1d:
//
//   conv1d(x, w[O, I, K], b, s, p, d, g)
//     -> conv2d(x.unsqueeze(2), w.unsqueeze(2), b, [1, s], [0, p], [1, d], g).squeeze(2)
//
// which is also how ATen computes conv1d on oneDNN. The unsqueeze and squeeze are views. Taken
// with int-list padding only (padding="same"/"valid" strings stay ATen's).
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// A constant int[1] argument's value.
std::optional<int64_t> single(const Value* value) {
  const auto list = torch::jit::constant_as<std::vector<int64_t>>(value);
  if (!list || list->size() != 1) {
    return std::nullopt;
  }
  return list->front();
}

struct Conv1dArguments {
  at::Tensor weight; // [O, I, K] float32
  int64_t stride, padding, dilation;
};

std::optional<Conv1dArguments> lowerable(const Node* node) {
  if (!node->matches("aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, "
                     "int[1] stride=1, int[1] padding=0, int[1] dilation=1, int groups=1) "
                     "-> Tensor")) {
    return std::nullopt;
  }
  const auto weight = torch::jit::toIValue(node->input(1));
  const auto stride = single(node->input(3));
  const auto padding = single(node->input(4));
  const auto dilation = single(node->input(5));
  if (!weight || !weight->isTensor() || weight->toTensor().dim() != 3 ||
      weight->toTensor().scalar_type() != at::kFloat || !stride || !padding || !dilation ||
      !torch::jit::constant_as<int64_t>(node->input(6))) {
    return std::nullopt;
  }
  return Conv1dArguments{weight->toTensor(), *stride, *padding, *dilation};
}

void lower(torch::jit::Graph& graph, Node* conv, const Conv1dArguments& arguments) {
  torch::jit::WithInsertPoint insert(conv);
  Value* two = graph.insertConstant(int64_t{2});
  Value* image = graph.insert(c10::aten::unsqueeze, {conv->input(0), two});
  Value* weight = graph.insertConstant(arguments.weight.unsqueeze(2).contiguous());
  auto pair = [&](int64_t first, int64_t second) {
    return graph.insertConstant(std::vector<int64_t>{first, second});
  };
  Value* result = graph.insert(
      c10::aten::conv2d, {image, weight, conv->input(2), pair(1, arguments.stride),
                          pair(0, arguments.padding), pair(1, arguments.dilation), conv->input(6)});
  Value* squeezed = graph.insert(c10::aten::squeeze, {result, two});
  squeezed->setType(conv->output()->type());
  for (Value* value : {image, result}) {
    value->setType(c10::TensorType::get());
  }
  conv->output()->replaceAllUsesWith(squeezed);
  conv->destroy();
}

void lowerIn(torch::jit::Graph& graph, torch::jit::Block* block, bool& changed) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* node = *it++;
    for (torch::jit::Block* sub_block : node->blocks()) {
      lowerIn(graph, sub_block, changed);
    }
    if (const auto arguments = lowerable(node)) {
      lower(graph, node, *arguments);
      changed = true;
    }
  }
}

} // namespace

bool lowerConv1d(GraphPtr& graph) {
  bool changed = false;
  lowerIn(*graph, graph->block(), changed);
  return changed;
}

} // namespace srt::passes
