// conv1d_lowering: a 1-D convolution or transposed convolution with a constant weight becomes a
// 2-D one over a height of one, so it runs on the oneDNN kernels (ops/conv/) with its packed
// weight, channels-last activations and planned scratch, instead of ATen's allocating ops:
//
//   conv1d(x, w[O, I, K], b, s, p, d, g)
//     -> conv2d(x.unsqueeze(-2), w.unsqueeze(2), b, [1, s], [0, p], [1, d], g).squeeze(-2)
//   conv_transpose1d(x, w[I, O, K], b, s, p, op, g, d)
//     -> conv_transpose2d(x.unsqueeze(-2), w.unsqueeze(2), b, [1, s], [0, p], [0, op], g,
//                         [1, d]).squeeze(-2)
//
// which is also how ATen computes them on oneDNN. The unsqueeze and squeeze are views; counted
// from the end, they also take an unbatched [C, L] input. Taken with int-list padding only
// (conv_padding_modes spells padding="same"/"valid" out before).
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

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

constexpr const char* kConv1dSchema =
    "aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, "
    "int[1] padding=0, int[1] dilation=1, int groups=1) -> Tensor";
constexpr const char* kConvTranspose1dSchema =
    "aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, "
    "int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor";

// Where each op has its arguments, and what it becomes.
struct Form {
  const char* schema;
  c10::Symbol lowered;
  int stride, padding, output_padding, groups, dilation; // input positions; -1: none
};

const Form kForms[] = {
    {kConv1dSchema, c10::aten::conv2d, 3, 4, -1, 6, 5},
    {kConvTranspose1dSchema, c10::aten::conv_transpose2d, 3, 4, 5, 6, 7},
};

struct Conv1dArguments {
  const Form* form;
  at::Tensor weight; // [O, I, K] or, transposed, [I, O, K]; float32
  int64_t stride, padding, output_padding, dilation;
};

std::optional<Conv1dArguments> lowerable(const Node* node) {
  const Form* form = nullptr;
  for (const Form& candidate : kForms) {
    if (node->matches(candidate.schema)) {
      form = &candidate;
    }
  }
  if (form == nullptr) {
    return std::nullopt;
  }
  const auto weight = torch::jit::toIValue(node->input(1));
  const auto stride = single(node->input(form->stride));
  const auto padding = single(node->input(form->padding));
  const auto output_padding = form->output_padding < 0 ? std::optional<int64_t>(0)
                                                       : single(node->input(form->output_padding));
  const auto dilation = single(node->input(form->dilation));
  if (!weight || !weight->isTensor() || weight->toTensor().dim() != 3 ||
      weight->toTensor().scalar_type() != at::kFloat || !stride || !padding || !output_padding ||
      !dilation || !torch::jit::constant_as<int64_t>(node->input(form->groups))) {
    return std::nullopt;
  }
  return Conv1dArguments{form, weight->toTensor(), *stride, *padding, *output_padding, *dilation};
}

void lower(torch::jit::Graph& graph, Node* conv, const Conv1dArguments& arguments) {
  torch::jit::WithInsertPoint insert(conv);
  Value* height = graph.insertConstant(int64_t{-2});
  Value* image = graph.insert(c10::aten::unsqueeze, {conv->input(0), height});
  Value* weight = graph.insertConstant(arguments.weight.unsqueeze(2).contiguous());
  auto pair = [&](int64_t first, int64_t second) {
    return graph.insertConstant(std::vector<int64_t>{first, second});
  };
  const Form& form = *arguments.form;
  // The 2-D op's inputs at the 1-D op's positions.
  std::vector<Value*> inputs(conv->inputs().size());
  inputs[0] = image;
  inputs[1] = weight;
  inputs[2] = conv->input(2);
  inputs[form.stride] = pair(1, arguments.stride);
  inputs[form.padding] = pair(0, arguments.padding);
  if (form.output_padding >= 0) {
    inputs[form.output_padding] = pair(0, arguments.output_padding);
  }
  inputs[form.groups] = conv->input(form.groups);
  inputs[form.dilation] = pair(1, arguments.dilation);
  Value* result =
      graph.insert(form.lowered, std::vector<torch::jit::NamedValue>(inputs.begin(), inputs.end()));
  Value* squeezed = graph.insert(c10::aten::squeeze, {result, height});
  squeezed->setType(conv->output()->type());
  for (Value* value : {image, result}) {
    value->setType(c10::TensorType::get());
  }
  conv->output()->replaceAllUsesWith(squeezed);
  conv->destroy();
}

} // namespace

bool lowerConv1d(GraphPtr& graph) {
  bool changed = false;
  forEachNode(graph->block(), [&](Node* node) {
    if (const auto arguments = lowerable(node)) {
      lower(*graph, node, *arguments);
      changed = true;
    }
  });
  return changed;
}

} // namespace srt::passes
