// multi_head_attention_fusion: a whole multi-head attention block, from the normalized input x to
// the merged heads out_proj reads, becomes srt::multi_head_attention (ops/attention/attention.cpp):
//
//   q = linear(x, Wq, bq).view(batch, seq, H, Dh).permute(0, 2, 1, 3)     (and k, v alike)
//   a = srt::attention(q, k, v, mask, scale)                              (attention_fusion)
//   a.permute(0, 2, 1, 3).reshape(batch, seq, D)
//     ->  srt::multi_head_attention(x, cat(Wq, Wk, Wv), cat(bq, bk, bv), H, mask, scale)
//
// so the projection is one [B*S, D] x [D, 3D] GEMM whose result the kernel reads in place.
// Runs after attention_fusion and builds on its srt::attention node. Declines (the graph keeps
// the srt::attention) unless: the weights are constants of one shape [D, Din] with D >= 2 and the
// three linears share x; batch and seq in the view/reshape sizes are x's (or a linear output's)
// own sizes; H * Dh == D; head split/merge are permute(0, 2, 1, 3) (or transpose(1, 2)); every
// intermediate is used only by the next step, in one block; nothing writes x or the weights.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include <ATen/Functions.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

const char* const kView = "aten::view(Tensor(a) self, int[] size) -> Tensor(a)";
const char* const kReshape = "aten::reshape(Tensor(a) self, int[] shape) -> Tensor(a)";
const char* const kPermute = "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)";
const char* const kTranspose =
    "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)";
const char* const kContiguous = "aten::contiguous(Tensor(a) self, *, MemoryFormat "
                                "memory_format=contiguous_format) -> Tensor(a)";
const char* const kLinear =
    "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor";
const char* const kSize = "aten::size.int(Tensor self, int dim) -> int";

std::optional<int64_t> constantInt(const Value* value) {
  const std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant || !constant->isInt()) {
    return std::nullopt;
  }
  return constant->toInt();
}

bool usedOnlyBy(const Value* value, const Node* user) {
  return value->uses().size() == 1 && value->uses()[0].user == user;
}

// A constant tensor input (frozen weights are prim::Constant tensors).
std::optional<at::Tensor> constantTensor(const Value* value) {
  const std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant || !constant->isTensor()) {
    return std::nullopt;
  }
  return constant->toTensor();
}

// permute(0, 2, 1, 3) of a 4-D tensor, or transpose(1, 2), the same thing; returns its input.
Value* swappedHeadsAndSeq(Node* node) {
  if (node->matches(kPermute)) {
    const std::optional<c10::IValue> dims = torch::jit::toIValue(node->input(1));
    if (!dims || !dims->isIntList()) {
      return nullptr;
    }
    std::vector<int64_t> list = dims->toIntVector();
    if (list.size() != 4) {
      return nullptr;
    }
    for (int64_t& d : list) {
      d = d < 0 ? d + 4 : d;
    }
    return list == std::vector<int64_t>{0, 2, 1, 3} ? node->input(0) : nullptr;
  }
  if (node->matches(kTranspose)) {
    // Only called on 4-D values (a 4-entry view, or srt::attention of 4-D heads).
    auto d0 = constantInt(node->input(1));
    auto d1 = constantInt(node->input(2));
    if (!d0 || !d1) {
      return nullptr;
    }
    *d0 = *d0 < 0 ? *d0 + 4 : *d0;
    *d1 = *d1 < 0 ? *d1 + 4 : *d1;
    return std::min(*d0, *d1) == 1 && std::max(*d0, *d1) == 2 ? node->input(0) : nullptr;
  }
  return nullptr;
}

// The size list of a view/reshape, as values (a prim::ListConstruct), else empty.
std::vector<Value*> sizeEntries(Value* list) {
  if (list->node()->kind() != c10::prim::ListConstruct) {
    return {};
  }
  const auto inputs = list->node()->inputs();
  return {inputs.begin(), inputs.end()};
}

// One of q, k, v: linear(x, W, b).view(batch, seq, H, Dh).permute(0, 2, 1, 3).
struct HeadSplit {
  Node* linear = nullptr;
  Node* view = nullptr;
  Node* permute = nullptr;
  at::Tensor weight;
  std::optional<at::Tensor> bias;
  std::vector<Value*> sizes; // the view's 4 entries
};

std::optional<HeadSplit> matchHeadSplit(Value* heads, const Node* attention) {
  const Block* block = attention->owningBlock();
  HeadSplit split;
  split.permute = heads->node();
  Value* viewed = swappedHeadsAndSeq(split.permute);
  if (viewed == nullptr || !usedOnlyBy(heads, attention) || split.permute->owningBlock() != block) {
    return std::nullopt;
  }
  split.view = viewed->node();
  if (!(split.view->matches(kView) || split.view->matches(kReshape)) ||
      !usedOnlyBy(viewed, split.permute) || split.view->owningBlock() != block) {
    return std::nullopt;
  }
  split.sizes = sizeEntries(split.view->input(1));
  Value* projected = split.view->input(0);
  split.linear = projected->node();
  if (split.sizes.size() != 4 || !split.linear->matches(kLinear) ||
      split.linear->owningBlock() != block) {
    return std::nullopt;
  }
  // Besides the view, only size(projected, 0 or 1), which equal x's and are retargeted to x.
  for (const torch::jit::Use& use : projected->uses()) {
    if (use.user == split.view) {
      continue;
    }
    const std::optional<int64_t> dim =
        use.user->matches(kSize) ? constantInt(use.user->input(1)) : std::nullopt;
    if (!dim || (*dim != 0 && *dim != 1)) {
      return std::nullopt;
    }
  }
  const std::optional<at::Tensor> weight = constantTensor(split.linear->input(1));
  if (!weight || weight->dim() != 2) {
    return std::nullopt;
  }
  split.weight = *weight;
  const Value* bias = split.linear->input(2);
  if (bias->type()->kind() != c10::TypeKind::NoneType) {
    const std::optional<at::Tensor> bias_tensor = constantTensor(bias);
    if (!bias_tensor || bias_tensor->dim() != 1 || bias_tensor->size(0) != weight->size(0) ||
        bias_tensor->scalar_type() != weight->scalar_type()) {
      return std::nullopt;
    }
    split.bias = *bias_tensor;
  }
  return split;
}

struct MhaMatch {
  Node* attention = nullptr;
  Node* merge_permute = nullptr;
  Node* contiguous = nullptr; // between the permute and a merging view; may be absent
  Node* merge = nullptr;
  std::array<HeadSplit, 3> splits; // q, k, v
  Value* x = nullptr;
  int64_t d_model = 0;
  int64_t heads = 0;
};

// Which size of x an int value provably is: size(t, dim) with t x or one of the projections.
std::optional<int64_t> sizeDimOf(const Value* value, const MhaMatch& match) {
  const Node* node = value->node();
  if (!node->matches(kSize)) {
    return std::nullopt;
  }
  const Value* of = node->input(0);
  bool known = of == match.x;
  for (const HeadSplit& split : match.splits) {
    known = known || of == split.linear->output();
  }
  return known ? constantInt(node->input(1)) : std::nullopt;
}

bool isBatchAndSeq(const std::vector<Value*>& sizes, const MhaMatch& match) {
  return sizeDimOf(sizes[0], match) == 0 && sizeDimOf(sizes[1], match) == 1;
}

// (H, Dh) of a head split's view sizes, with at most one of them -1.
std::optional<std::pair<int64_t, int64_t>> headsAndHeadDim(const std::vector<Value*>& sizes,
                                                           int64_t d_model) {
  const std::optional<int64_t> h = constantInt(sizes[2]);
  const std::optional<int64_t> dh = constantInt(sizes[3]);
  if (!h || !dh || (*h == -1 && *dh == -1)) {
    return std::nullopt;
  }
  if (*h == -1 && *dh > 0 && d_model % *dh == 0) {
    return std::make_pair(d_model / *dh, *dh);
  }
  if (*dh == -1 && *h > 0 && d_model % *h == 0) {
    return std::make_pair(*h, d_model / *h);
  }
  if (*h > 0 && *dh > 0 && *h * *dh == d_model) {
    return std::make_pair(*h, *dh);
  }
  return std::nullopt;
}

// The merge's last size: D itself, -1 (which then resolves to D), or a size that is D.
bool isModelDim(const Value* value, const MhaMatch& match, int64_t d_in) {
  if (const std::optional<int64_t> constant = constantInt(value)) {
    return *constant == match.d_model || *constant == -1;
  }
  const Node* node = value->node();
  if (!node->matches(kSize)) {
    return false;
  }
  const std::optional<int64_t> dim = constantInt(node->input(1));
  if (!dim || (*dim != 2 && *dim != -1)) {
    return false;
  }
  if (node->input(0) == match.x) {
    return d_in == match.d_model;
  }
  for (const HeadSplit& split : match.splits) {
    if (node->input(0) == split.linear->output()) {
      return true;
    }
  }
  return false;
}

std::optional<MhaMatch> matchMultiHeadAttention(Node* attention, torch::jit::AliasDb& alias_db) {
  MhaMatch match;
  match.attention = attention;
  const Block* block = attention->owningBlock();
  Value* context = attention->output();
  if (context->uses().size() != 1) {
    return std::nullopt;
  }
  // Merge: permute(0, 2, 1, 3) then reshape, or contiguous then view.
  match.merge_permute = context->uses()[0].user;
  if (swappedHeadsAndSeq(match.merge_permute) != context ||
      match.merge_permute->owningBlock() != block ||
      match.merge_permute->output()->uses().size() != 1) {
    return std::nullopt;
  }
  Node* next = match.merge_permute->output()->uses()[0].user;
  if (next->matches(kContiguous) && next->output()->uses().size() == 1) {
    match.contiguous = next;
    next = next->output()->uses()[0].user;
    if (!next->matches(kView) && !next->matches(kReshape)) {
      return std::nullopt;
    }
  } else if (!next->matches(kReshape)) {
    // A view of the permuted (non-contiguous) heads raises in eager code; leave it alone.
    return std::nullopt;
  }
  match.merge = next;
  if (next->owningBlock() != block ||
      next->input(0) != (match.contiguous != nullptr ? match.contiguous->output()
                                                     : match.merge_permute->output())) {
    return std::nullopt;
  }

  for (int i = 0; i < 3; ++i) {
    std::optional<HeadSplit> split = matchHeadSplit(attention->input(i), attention);
    if (!split) {
      return std::nullopt;
    }
    match.splits[i] = std::move(*split);
  }
  match.x = match.splits[0].linear->input(0);
  const at::Tensor& weight = match.splits[0].weight;
  match.d_model = weight.size(0);
  const int64_t d_in = weight.size(1);
  // D >= 2: with D == 1, view(size(p, 0), size(p, 1), 1, 1) would also accept a 2-D x.
  if (match.d_model < 2) {
    return std::nullopt;
  }
  std::optional<std::pair<int64_t, int64_t>> head_shape;
  for (const HeadSplit& split : match.splits) {
    if (split.linear->input(0) != match.x || split.weight.sizes() != weight.sizes() ||
        split.weight.scalar_type() != weight.scalar_type() || !isBatchAndSeq(split.sizes, match)) {
      return std::nullopt;
    }
    const auto shape = headsAndHeadDim(split.sizes, match.d_model);
    if (!shape || (head_shape && *shape != *head_shape)) {
      return std::nullopt;
    }
    head_shape = shape;
  }
  match.heads = head_shape->first;

  const std::vector<Value*> merged = sizeEntries(match.merge->input(1));
  if (merged.size() != 3 || !isBatchAndSeq(merged, match) || !isModelDim(merged[2], match, d_in)) {
    return std::nullopt;
  }
  // The fused node computes the projections where the merge was: nothing may write their inputs.
  if (alias_db.hasWriters(match.x)) {
    return std::nullopt;
  }
  for (const HeadSplit& split : match.splits) {
    for (const Value* input : split.linear->inputs()) {
      if (alias_db.hasWriters(input)) {
        return std::nullopt;
      }
    }
  }
  return match;
}

void rewrite(const MhaMatch& match, torch::jit::Graph& graph) {
  std::vector<at::Tensor> weights;
  std::vector<at::Tensor> biases;
  bool any_bias = false;
  for (const HeadSplit& split : match.splits) {
    weights.push_back(split.weight);
    any_bias = any_bias || split.bias.has_value();
  }
  for (const HeadSplit& split : match.splits) {
    biases.push_back(split.bias ? *split.bias : at::zeros({match.d_model}, split.weight.options()));
  }

  torch::jit::WithInsertPoint guard(match.merge);
  Value* weight = graph.insertConstant(at::cat(weights, 0).contiguous());
  Value* bias = any_bias ? graph.insertConstant(at::cat(biases, 0).contiguous())
                         : graph.insertConstant(c10::IValue());
  Value* heads = graph.insertConstant(match.heads);
  Node* fused = graph.create(
      c10::Symbol::fromQualString("srt::multi_head_attention"),
      {match.x, weight, bias, heads, match.attention->input(3), match.attention->input(4)}, 1);
  graph.insertNode(fused);
  fused->output()->setType(match.merge->output()->type());
  fused->copyMetadata(match.merge);
  match.merge->output()->replaceAllUsesWith(fused->output());

  match.merge->destroy();
  if (match.contiguous != nullptr) {
    match.contiguous->destroy();
  }
  match.merge_permute->destroy();
  match.attention->destroy();
  for (const HeadSplit& split : match.splits) {
    split.permute->destroy();
    split.view->destroy();
    // size(projection, 0 or 1) is size(x, 0 or 1): the only other uses the match allowed.
    Value* projected = split.linear->output();
    const std::vector<torch::jit::Use> uses = projected->uses();
    for (const torch::jit::Use& use : uses) {
      use.user->replaceInput(use.offset, match.x);
    }
    split.linear->destroy();
  }
}

void collectCandidates(Block* block, std::vector<Node*>& candidates) {
  static const c10::Symbol attention = c10::Symbol::fromQualString("srt::attention");
  for (Node* node : block->nodes()) {
    if (node->kind() == attention) {
      candidates.push_back(node);
    }
    for (Block* sub_block : node->blocks()) {
      collectCandidates(sub_block, candidates);
    }
  }
}

} // namespace

bool fuseMultiHeadAttention(GraphPtr& graph) {
  bool changed = false;
  // Matches never share nodes (each owns its attention node and single-use chains), but a
  // rewrite invalidates the alias analysis, so it is rebuilt for the next search.
  for (bool found = true; found;) {
    found = false;
    torch::jit::AliasDb alias_db(graph);
    std::vector<Node*> candidates;
    collectCandidates(graph->block(), candidates);
    for (Node* candidate : candidates) {
      if (std::optional<MhaMatch> match = matchMultiHeadAttention(candidate, alias_db)) {
        rewrite(*match, *graph);
        found = changed = true;
        break;
      }
    }
  }
  if (changed) {
    // The size nodes and lists that fed the removed views and reshape.
    torch::jit::EliminateDeadCode(graph);
  }
  return changed;
}

} // namespace srt::passes
