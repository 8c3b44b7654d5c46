// channel_shuffle_fusion: the channel shuffle as ShuffleNet writes it (torchvision's
// shufflenetv2.channel_shuffle),
//
//   batchsize, num_channels, height, width = x.size()
//   x = x.view(batchsize, groups, num_channels // groups, height, width)
//   x = torch.transpose(x, 1, 2).contiguous()
//   x = x.view(batchsize, -1, height, width)
//
// becomes aten::channel_shuffle(x, groups), ATen's op for exactly that permutation of the
// channels (and its error where they do not divide into the groups). Written out, it is three
// copies once the layout passes see it: the views observe strides, so a channels-last x was
// converted to NCHW for them and the shuffled result back to channels last for the next
// convolution; our aten::channel_shuffle reads either layout and writes NCHW, whose channel halves
// ShuffleNet's next convolutions read as whole planes (ops/shapes/rearrangements.cpp).
// Only the exact form is taken: the sizes from one x.size() unpacked, the middle size that
// channel count floor-divided by the constant groups, the transposed dims 1 and 2, and no other
// reader of the intermediate views.
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

std::optional<int64_t> constantInt(const Value* value) {
  const auto constant = torch::jit::constant_as<int64_t>(value);
  return constant ? std::optional<int64_t>(*constant) : std::nullopt;
}

// The node producing `value` if it is of `kind` and `value` has no reader but one.
Node* onlyReadProducer(Value* value, c10::Symbol kind) {
  return value->node()->kind() == kind && value->uses().size() == 1 ? value->node() : nullptr;
}

// %sizes = aten::size(%x); %b, %c, %h, %w = prim::ListUnpack(%sizes): the unpack node, or nullptr.
Node* sizesUnpack(Value* any_size) {
  Node* unpack = any_size->node();
  if (unpack->kind() != c10::prim::ListUnpack || unpack->outputs().size() != 4) {
    return nullptr;
  }
  Node* size = unpack->input(0)->node();
  return size->matches("aten::size(Tensor self) -> int[]") ? unpack : nullptr;
}

// The x and groups of a channel shuffle ending at `view` (the last view), or std::nullopt.
std::optional<std::pair<Value*, Value*>> channelShuffle(Node* view) {
  if (!view->matches("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)")) {
    return std::nullopt;
  }
  Node* merged = view->input(1)->node();
  Node* contiguous = onlyReadProducer(view->input(0), c10::aten::contiguous);
  if (merged->kind() != c10::prim::ListConstruct || merged->inputs().size() != 4 ||
      contiguous == nullptr) {
    return std::nullopt;
  }
  Node* transpose = onlyReadProducer(contiguous->input(0), c10::aten::transpose);
  if (transpose == nullptr ||
      !transpose->matches("aten::transpose.int(Tensor(a) self, int dim0, "
                          "int dim1) -> Tensor(a)") ||
      constantInt(transpose->input(1)) != 1 || constantInt(transpose->input(2)) != 2) {
    return std::nullopt;
  }
  Node* split = onlyReadProducer(transpose->input(0), c10::aten::view);
  if (split == nullptr ||
      !split->matches("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)")) {
    return std::nullopt;
  }
  Node* split_sizes = split->input(1)->node();
  if (split_sizes->kind() != c10::prim::ListConstruct || split_sizes->inputs().size() != 5) {
    return std::nullopt;
  }
  Node* unpack = sizesUnpack(split_sizes->input(0));
  if (unpack == nullptr) {
    return std::nullopt;
  }
  // view(b, groups, c // groups, h, w) of the tensor whose sizes these are.
  Value* groups = split_sizes->input(1);
  Node* per_group = split_sizes->input(2)->node();
  const std::optional<int64_t> group_count = constantInt(groups);
  const bool split_form =
      split_sizes->input(0) == unpack->output(0) && split_sizes->input(3) == unpack->output(2) &&
      split_sizes->input(4) == unpack->output(3) && group_count && *group_count > 0 &&
      per_group->matches("aten::floordiv.int(int a, int b) -> int") &&
      per_group->input(0) == unpack->output(1) && per_group->input(1) == groups;
  // view(b, -1, h, w) (or the channel count itself).
  const bool merge_form =
      merged->input(0) == unpack->output(0) && merged->input(2) == unpack->output(2) &&
      merged->input(3) == unpack->output(3) &&
      (constantInt(merged->input(1)) == -1 || merged->input(1) == unpack->output(1));
  Value* x = unpack->input(0)->node()->input(0);
  if (!split_form || !merge_form || split->input(0) != x) {
    return std::nullopt;
  }
  return std::make_pair(x, groups);
}

} // namespace

bool fuseChannelShuffles(GraphPtr& graph) {
  const std::vector<Node*> views =
      nodesWhere(graph->block(), [](Node* node) { return node->kind() == c10::aten::view; });
  bool changed = false;
  for (Node* view : views) {
    const auto shuffle = channelShuffle(view);
    if (!shuffle) {
      continue;
    }
    torch::jit::WithInsertPoint insert(view);
    Value* shuffled = graph->insert(c10::Symbol::fromQualString("aten::channel_shuffle"),
                                    {shuffle->first, shuffle->second}, {}, view->sourceRange());
    shuffled->setType(view->output()->type());
    view->output()->replaceAllUsesWith(shuffled);
    changed = true;
  }
  if (changed) {
    // The views, the transpose and the contiguous now have no reader.
    torch::jit::EliminateDeadCode(graph);
  }
  return changed;
}

} // namespace srt::passes
