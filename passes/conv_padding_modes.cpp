// conv_padding_modes: `nn.Conv1d/2d/3d(..., padding="same" | "valid")` call the string overload
// `aten::convNd.padding`, which no pattern or kernel of ours takes. With a constant weight (so its
// kernel size is known) the padding is spelled out as numbers, as ATen's _convolution_mode does
// it at every call:
//
//   "valid"                                  -> padding 0
//   "same", dilation * (kernel - 1) even      -> padding dilation * (kernel - 1) / 2 on both sides
//   "same", odd (an even kernel, odd dilation) -> constant_pad_nd(x, one more on the right) first,
//                                                then the left padding on both sides
//
// after which conv_bn_folding, conv1d_lowering, conv_fusion and the oneDNN kernels see an ordinary
// convolution. "same" with a stride other than 1 stays as written: ATen refuses it with its own
// message at run time.
#include <algorithm>
#include <optional>
#include <string>
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

struct PaddingForm {
  const char* schema;
  c10::Symbol op;
  size_t spatial_dims;
};

const PaddingForm kForms[] = {
    {"aten::conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, "
     "str padding=\"valid\", int[1] dilation=1, int groups=1) -> Tensor",
     c10::aten::conv1d, 1},
    {"aten::conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
     "str padding=\"valid\", int[2] dilation=1, int groups=1) -> Tensor",
     c10::aten::conv2d, 2},
    {"aten::conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, "
     "str padding=\"valid\", int[3] dilation=1, int groups=1) -> Tensor",
     c10::aten::conv3d, 3},
};

enum Input : size_t { kInput, kWeight, kBias, kStride, kPadding, kDilation, kGroups };

// Per spatial dimension: the padding on both sides, and what constant_pad_nd adds on the right
// first (0 where "same" is symmetric).
struct NumericPadding {
  std::vector<int64_t> both_sides;
  std::vector<int64_t> extra_right;
};

// A constant int list of `dims` entries, or of one entry meaning all of them (ATen's
// expand_param_if_needed).
std::optional<std::vector<int64_t>> perDimension(const Value* value, size_t dims) {
  const auto list = torch::jit::constant_as<std::vector<int64_t>>(value);
  if (!list || (list->size() != 1 && list->size() != dims)) {
    return std::nullopt;
  }
  return list->size() == 1 ? std::vector<int64_t>(dims, list->front()) : *list;
}

std::optional<NumericPadding> numericPadding(const Node* node, const PaddingForm& form) {
  const auto mode = torch::jit::constant_as<std::string>(node->input(kPadding));
  const auto weight = torch::jit::constant_as<at::Tensor>(node->input(kWeight));
  const auto stride = perDimension(node->input(kStride), form.spatial_dims);
  const auto dilation = perDimension(node->input(kDilation), form.spatial_dims);
  if (!mode || !weight || !stride || !dilation ||
      weight->dim() != static_cast<int64_t>(form.spatial_dims) + 2) {
    return std::nullopt;
  }
  NumericPadding padding{std::vector<int64_t>(form.spatial_dims, 0),
                         std::vector<int64_t>(form.spatial_dims, 0)};
  if (*mode == "valid") {
    return padding;
  }
  if (*mode != "same") {
    return std::nullopt;
  }
  for (size_t dim = 0; dim < form.spatial_dims; ++dim) {
    if ((*stride)[dim] != 1) {
      return std::nullopt;
    }
    const int64_t total = (*dilation)[dim] * (weight->size(static_cast<int64_t>(dim) + 2) - 1);
    padding.both_sides[dim] = total / 2;
    padding.extra_right[dim] = total - 2 * (total / 2);
  }
  return padding;
}

// constant_pad_nd's list runs from the last dimension to the first, (left, right) each.
std::vector<int64_t> padList(const std::vector<int64_t>& extra_right) {
  std::vector<int64_t> pad;
  for (auto it = extra_right.rbegin(); it != extra_right.rend(); ++it) {
    pad.push_back(0);
    pad.push_back(*it);
  }
  return pad;
}

void spellOut(torch::jit::Graph& graph, Node* conv, const PaddingForm& form,
              const NumericPadding& padding) {
  torch::jit::WithInsertPoint insert(conv);
  Value* input = conv->input(kInput);
  const bool symmetric = std::all_of(padding.extra_right.begin(), padding.extra_right.end(),
                                     [](int64_t extra) { return extra == 0; });
  if (!symmetric) {
    input = graph.insert(c10::aten::constant_pad_nd, {input, padList(padding.extra_right), 0.0});
    input->setType(c10::TensorType::get());
  }
  Value* result =
      graph.insert(form.op, {input, conv->input(kWeight), conv->input(kBias), conv->input(kStride),
                             graph.insertConstant(padding.both_sides), conv->input(kDilation),
                             conv->input(kGroups)});
  result->setType(conv->output()->type());
  conv->output()->replaceAllUsesWith(result);
  conv->destroy();
}

} // namespace

bool spellOutConvPaddingModes(GraphPtr& graph) {
  bool changed = false;
  forEachNode(graph->block(), [&](Node* node) {
    for (const PaddingForm& form : kForms) {
      if (!node->matches(form.schema)) {
        continue;
      }
      if (const auto padding = numericPadding(node, form)) {
        spellOut(*graph, node, form, *padding);
        changed = true;
      }
      break;
    }
  });
  return changed;
}

} // namespace srt::passes
