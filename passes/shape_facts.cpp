#include "passes/shape_facts.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const char* const kLinear =
    "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor";

std::optional<at::Tensor> constantTensor(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isTensor()) {
    return std::nullopt;
  }
  return constant->toTensor();
}

std::optional<int64_t> constantInt(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isInt()) {
    return std::nullopt;
  }
  return constant->toInt();
}

// The block whose nodes can read `value` unconditionally: where it is defined (a graph input's
// prim::Param node is not reliably placed in the graph's block).
const torch::jit::Block* definingBlock(const Value* value) {
  const Node* node = value->node();
  if (node->kind() == c10::prim::Param && node == value->owningGraph()->param_node()) {
    return value->owningGraph()->block();
  }
  return node->owningBlock();
}

bool isKind(const Node* node, const char* kind) {
  return node->kind() == symbol(kind);
}

// Ops whose output has their first input's shape (what attention code puts between a tensor and
// the size it asks of it).
bool keepsShape(const Node* node) {
  // (Not masked_fill: its result takes the broadcast shape of the tensor and the mask.)
  static const char* const kinds[] = {"aten::contiguous", "aten::layer_norm", "aten::gelu",
                                      "aten::relu",       "aten::dropout",    "aten::softmax",
                                      "aten::detach",     "aten::clone"};
  for (const char* kind : kinds) {
    if (isKind(node, kind)) {
      return true;
    }
  }
  // mul/div by a number (a scale).
  if ((isKind(node, "aten::mul") || isKind(node, "aten::div")) && node->inputs().size() == 2 &&
      node->input(1)->type()->kind() != c10::TypeKind::TensorType) {
    return true;
  }
  return false;
}

// Whether `block` only raises: its last node is prim::RaiseException (the ones before it make
// the message).
bool onlyRaises(const torch::jit::Block* block) {
  return block->outputs().empty() && block->nodes().begin() != block->nodes().end() &&
         block->return_node()->prev()->kind() == c10::prim::RaiseException;
}

bool isEmpty(const torch::jit::Block* block) {
  return block->outputs().empty() && block->nodes().begin() == block->nodes().end();
}

// The rank an assert in the block defining `value` fixes for it (so it runs whenever value's
// readers there do): rankAssertion of an If that compares a rank query of value.
std::optional<int64_t> assertedRank(const Value* value) {
  for (const torch::jit::Use& query_use : value->uses()) {
    // aten::dim(value), or aten::size(value) read by aten::len.
    const Node* query = query_use.user;
    if (query->outputs().size() != 1) {
      continue;
    }
    std::vector<const Value*> ranks;
    if (rankedTensor(query->output()) == value) {
      ranks.push_back(query->output());
    } else {
      for (const torch::jit::Use& len_use : query->output()->uses()) {
        if (len_use.user->outputs().size() == 1 && rankedTensor(len_use.user->output()) == value) {
          ranks.push_back(len_use.user->output());
        }
      }
    }
    for (const Value* rank : ranks) {
      for (const torch::jit::Use& comparison_use : rank->uses()) {
        const Node* comparison = comparison_use.user;
        if (comparison->outputs().size() != 1) {
          continue;
        }
        for (const torch::jit::Use& if_use : comparison->output()->uses()) {
          const Node* branch = if_use.user;
          if (branch->owningBlock() != definingBlock(value)) {
            continue;
          }
          const std::optional<RankAssertion> assertion = rankAssertion(branch);
          if (assertion && assertion->tensor == value) {
            return assertion->rank;
          }
        }
      }
    }
  }
  return std::nullopt;
}

// The tensor a piece of split/chunk/unbind comes from, and the dim it was split along.
struct Piece {
  const Node* split = nullptr;
  size_t index = 0;
  size_t count = 0;
};

std::optional<Piece> pieceOf(const Value* value) {
  const Node* unpack = value->node();
  if (unpack->kind() != c10::prim::ListUnpack) {
    return std::nullopt;
  }
  const Node* split = unpack->input(0)->node();
  if (!(isKind(split, "aten::split") || isKind(split, "aten::chunk") ||
        isKind(split, "aten::unbind") || isKind(split, "aten::unsafe_split") ||
        isKind(split, "aten::unsafe_chunk")) ||
      split->inputs().empty() || split->input(0)->type()->kind() != c10::TypeKind::TensorType) {
    return std::nullopt;
  }
  return Piece{split, value->offset(), unpack->outputs().size()};
}

// The size of a split/chunk piece along the split dim, of `total` in all.
std::optional<int64_t> pieceWidth(const Piece& piece, std::optional<int64_t> total) {
  const Node* split = piece.split;
  const std::optional<int64_t> arg = knownInt(split->input(1));
  if (!total || !arg || *arg <= 0) {
    return std::nullopt;
  }
  // split: pieces of `arg` (the last one shorter); chunk: ceil(total / arg) per piece.
  const bool is_chunk = isKind(split, "aten::chunk") || isKind(split, "aten::unsafe_chunk");
  const int64_t each = is_chunk ? (*total + *arg - 1) / *arg : *arg;
  const int64_t start = static_cast<int64_t>(piece.index) * each;
  if (each > 0 && start < *total &&
      (*total + each - 1) / each == static_cast<int64_t>(piece.count)) {
    return std::min(each, *total - start);
  }
  return std::nullopt;
}

// The dim argument of split/chunk/unbind, normalized.
std::optional<int64_t> splitDim(const Node* split) {
  const size_t dim_input = isKind(split, "aten::unbind") ? 1 : 2;
  const std::optional<int64_t> dim =
      split->inputs().size() > dim_input ? constantInt(split->input(dim_input)) : std::nullopt;
  return dim ? normalizedDim(*dim, knownRank(split->input(0))) : std::nullopt;
}

} // namespace

std::optional<int64_t> normalizedDim(int64_t dim, std::optional<int64_t> rank) {
  if (!rank || dim < -*rank || dim >= *rank) {
    return std::nullopt;
  }
  return dim < 0 ? dim + *rank : dim;
}

namespace {

std::optional<int64_t> rankOf(const Value* value, bool use_asserts) {
  if (auto type = value->type()->cast<c10::TensorType>()) {
    if (auto dims = type->dim()) {
      return static_cast<int64_t>(*dims);
    }
  } else {
    return std::nullopt;
  }
  if (const std::optional<at::Tensor> constant = constantTensor(value)) {
    return constant->dim();
  }
  const Node* node = value->node();
  if (isKind(node, "aten::permute")) {
    if (auto dims = constantIntList(node->input(1))) {
      return static_cast<int64_t>(dims->size());
    }
  } else if (isKind(node, "aten::view") || isKind(node, "aten::reshape")) {
    const Value* sizes = node->input(1);
    if (sizes->node()->kind() == c10::prim::ListConstruct) {
      return static_cast<int64_t>(sizes->node()->inputs().size());
    }
    if (auto list = constantIntList(sizes)) {
      return static_cast<int64_t>(list->size());
    }
  } else if (isKind(node, "aten::transpose") || isKind(node, "aten::linear") || keepsShape(node)) {
    if (auto rank = rankOf(node->input(0), use_asserts)) {
      return rank;
    }
  } else if (const std::optional<Piece> piece = pieceOf(value)) {
    const auto rank = rankOf(piece->split->input(0), use_asserts);
    if (rank) {
      return isKind(piece->split, "aten::unbind") ? *rank - 1 : *rank;
    }
  } else if (isKind(node, "aten::select")) {
    if (auto rank = rankOf(node->input(0), use_asserts)) {
      return *rank - 1;
    }
  } else if (isKind(node, "aten::slice")) {
    if (auto rank = rankOf(node->input(0), use_asserts)) {
      return rank;
    }
  } else if (isKind(node, "srt::fused_linear") && node->inputs().size() >= 5) {
    // The residual added after the GEMM broadcasts.
    const auto rank = rankOf(node->input(0), use_asserts);
    const bool residual = node->input(4)->type()->kind() != c10::TypeKind::NoneType;
    const auto residual_rank = residual ? rankOf(node->input(4), use_asserts) : rank;
    if (rank && residual_rank) {
      return std::max(*rank, *residual_rank);
    }
  } else if (isKind(node, "srt::multi_head_attention")) {
    return 3; // [batch, seq, d_model], or the op raises
  } else if (isKind(node, "aten::expand") && node->inputs().size() >= 2) {
    if (node->input(1)->node()->kind() == c10::prim::ListConstruct) {
      return static_cast<int64_t>(node->input(1)->node()->inputs().size());
    }
  } else if ((isKind(node, "aten::add") || isKind(node, "aten::sub") || isKind(node, "aten::mul") ||
              isKind(node, "aten::div")) &&
             node->inputs().size() >= 2 &&
             node->input(1)->type()->kind() == c10::TypeKind::TensorType) {
    // Broadcasting: the larger rank.
    const auto a = rankOf(node->input(0), use_asserts);
    const auto b = rankOf(node->input(1), use_asserts);
    if (a && b) {
      return std::max(*a, *b);
    }
  } else if (isKind(node, "aten::cat") &&
             node->input(0)->node()->kind() == c10::prim::ListConstruct) {
    // Every piece has the result's rank but legacy empty 1-D pieces: one piece of a known rank
    // above 1 fixes it (F.multi_head_attention_forward's cat of k and a zeros of run-time
    // sizes, with add_zero_attn), else the larger rank of them all.
    std::optional<int64_t> rank;
    bool all_known = true;
    for (const Value* piece : node->input(0)->node()->inputs()) {
      const auto r = rankOf(piece, use_asserts);
      if (r && *r > 1) {
        return r;
      }
      all_known = all_known && r.has_value();
      rank = std::max(rank.value_or(0), r.value_or(0));
    }
    return all_known ? rank : std::nullopt;
  }
  // size(value) unpacked into n ints: ListUnpack raises unless value has rank n.
  for (const torch::jit::Use& use : value->uses()) {
    if (isKind(use.user, "aten::size") && use.user->inputs().size() == 1) {
      for (const torch::jit::Use& list_use : use.user->output()->uses()) {
        if (list_use.user->kind() == c10::prim::ListUnpack &&
            list_use.user->owningBlock() == definingBlock(value)) {
          return static_cast<int64_t>(list_use.user->outputs().size());
        }
      }
    }
  }
  return use_asserts ? assertedRank(value) : std::nullopt;
}

} // namespace

std::optional<int64_t> knownRank(const Value* value) {
  return rankOf(value, /*use_asserts=*/true);
}

const Value* rankedTensor(const Value* value) {
  const Node* node = value->node();
  if (node->matches("aten::dim(Tensor self) -> int")) {
    return node->input(0);
  }
  if (node->kind() == c10::aten::len && node->inputs().size() == 1) {
    const Node* sizes = node->input(0)->node();
    if (sizes->matches("aten::size(Tensor self) -> int[]")) {
      return sizes->input(0);
    }
  }
  return nullptr;
}

std::optional<RankAssertion> rankAssertion(const Node* node) {
  if (node->kind() != c10::prim::If || !node->outputs().empty()) {
    return std::nullopt;
  }
  const Node* condition = node->input(0)->node();
  const bool equal = condition->matches("aten::eq.int(int a, int b) -> bool");
  const bool unequal = condition->matches("aten::ne.int(int a, int b) -> bool");
  if (!equal && !unequal) {
    return std::nullopt;
  }
  const torch::jit::Block* then_block = node->blocks()[0];
  const torch::jit::Block* else_block = node->blocks()[1];
  const bool raises_unless_true = isEmpty(then_block) && onlyRaises(else_block);
  const bool raises_if_true = onlyRaises(then_block) && isEmpty(else_block);
  if (!(equal ? raises_unless_true : raises_if_true)) {
    return std::nullopt;
  }
  // A constant rank: knownInt could ask knownRank, which asks the asserts again.
  const Value* tensor = rankedTensor(condition->input(0));
  std::optional<int64_t> rank = constantInt(condition->input(1));
  if (tensor == nullptr) {
    tensor = rankedTensor(condition->input(1));
    rank = constantInt(condition->input(0));
  }
  if (tensor == nullptr || !rank) {
    return std::nullopt;
  }
  return RankAssertion{tensor, *rank};
}

std::optional<int64_t> derivedRank(const Value* value) {
  return rankOf(value, /*use_asserts=*/false);
}

namespace {

// The spatial dims of a convolution or pooling whose (first) output `value` is.
std::optional<int64_t> spatialDims(const Value* value) {
  const Node* node = value->node();
  if (value->offset() != 0) {
    return std::nullopt;
  }
  static const std::pair<const char*, int64_t> kinds[] = {{"aten::conv1d", 1},
                                                          {"aten::conv2d", 2},
                                                          {"aten::conv3d", 3},
                                                          {"aten::max_pool1d", 1},
                                                          {"aten::max_pool2d", 2},
                                                          {"aten::max_pool3d", 3},
                                                          {"aten::avg_pool1d", 1},
                                                          {"aten::avg_pool2d", 2},
                                                          {"aten::avg_pool3d", 3},
                                                          {"aten::adaptive_avg_pool1d", 1},
                                                          {"aten::adaptive_avg_pool2d", 2},
                                                          {"aten::adaptive_avg_pool3d", 3},
                                                          {"aten::adaptive_max_pool1d", 1},
                                                          {"aten::adaptive_max_pool2d", 2},
                                                          {"aten::adaptive_max_pool3d", 3}};
  for (const auto& [kind, dims] : kinds) {
    if (isKind(node, kind)) {
      return dims;
    }
  }
  if (isKind(node, "aten::_convolution") || isKind(node, "aten::convolution")) {
    const std::optional<at::Tensor> weight = constantTensor(node->input(1));
    if (weight && weight->dim() >= 3) {
      return weight->dim() - 2;
    }
  }
  return std::nullopt;
}

// Element-wise ops of one tensor whose output has its rank (beside keepsShape's).
bool keepsRank(const Node* node) {
  static const char* const kinds[] = {
      "aten::relu",        "aten::relu_",          "aten::relu6",
      "aten::hardtanh",    "aten::hardtanh_",      "aten::silu",
      "aten::silu_",       "aten::hardswish",      "aten::hardswish_",
      "aten::hardsigmoid", "aten::hardsigmoid_",   "aten::sigmoid",
      "aten::sigmoid_",    "aten::tanh",           "aten::tanh_",
      "aten::leaky_relu",  "aten::leaky_relu_",    "aten::elu",
      "aten::elu_",        "aten::mish",           "aten::softplus",
      "aten::clamp",       "aten::clamp_",         "aten::batch_norm",
      "aten::dropout_",    "aten::feature_dropout"};
  for (const char* kind : kinds) {
    if (isKind(node, kind)) {
      return true;
    }
  }
  return false;
}

} // namespace

const Value* sameRankInput(const Value* value) {
  const Node* node = value->node();
  if (node->inputs().empty() || value->offset() != 0 ||
      node->input(0)->type()->kind() != c10::TypeKind::TensorType) {
    return nullptr;
  }
  return spatialDims(value) || keepsShape(node) || keepsRank(node) ? node->input(0) : nullptr;
}

std::optional<RankRange> rankRange(const Value* value) {
  if (value->type()->kind() != c10::TypeKind::TensorType) {
    return std::nullopt;
  }
  if (const std::optional<int64_t> rank = derivedRank(value)) {
    return RankRange{*rank, *rank};
  }
  const Node* node = value->node();
  if (const std::optional<int64_t> dims = spatialDims(value)) {
    return RankRange{*dims + 1, *dims + 2};
  }
  if (node->inputs().empty() || value->offset() != 0) {
    return std::nullopt;
  }
  if (keepsShape(node) || keepsRank(node)) {
    return rankRange(node->input(0));
  }
  if ((isKind(node, "aten::add") || isKind(node, "aten::sub") || isKind(node, "aten::mul") ||
       isKind(node, "aten::div")) &&
      node->inputs().size() >= 2) {
    // Broadcasting: the larger of the two ranks.
    const std::optional<RankRange> a = rankRange(node->input(0));
    if (node->input(1)->type()->kind() != c10::TypeKind::TensorType) {
      return a;
    }
    const std::optional<RankRange> b = rankRange(node->input(1));
    if (a && b) {
      return RankRange{std::max(a->min, b->min), std::max(a->max, b->max)};
    }
  }
  return std::nullopt;
}

namespace {

// The last size of a tensor whose rank is unknown: what a linear makes or reads, through ops that
// keep the shape.
std::optional<int64_t> lastSize(const Value* tensor) {
  const Node* node = tensor->node();
  if (const std::optional<at::Tensor> constant = constantTensor(tensor)) {
    return constant->dim() > 0 ? std::optional<int64_t>(constant->size(-1)) : std::nullopt;
  }
  if (node->matches(kLinear)) {
    const std::optional<at::Tensor> weight = constantTensor(node->input(1));
    if (weight && weight->dim() == 2) {
      return weight->size(0);
    }
  } else if (keepsShape(node)) {
    if (auto size = lastSize(node->input(0))) {
      return size;
    }
  } else if (const std::optional<Piece> piece = pieceOf(tensor)) {
    const size_t dim_input = isKind(piece->split, "aten::unbind") ? 1 : 2;
    if (piece->split->inputs().size() > dim_input &&
        constantInt(piece->split->input(dim_input)) == -1 &&
        !isKind(piece->split, "aten::unbind")) {
      return pieceWidth(*piece, lastSize(piece->split->input(0)));
    }
  }
  for (const torch::jit::Use& use : tensor->uses()) {
    const Node* user = use.user;
    if (use.offset == 0 && user->matches(kLinear) && user->owningBlock() == definingBlock(tensor)) {
      const std::optional<at::Tensor> weight = constantTensor(user->input(1));
      if (weight && weight->dim() == 2) {
        return weight->size(1);
      }
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<int64_t> knownSize(const Value* tensor, int64_t dim) {
  const std::optional<int64_t> rank = knownRank(tensor);
  const std::optional<int64_t> d = normalizedDim(dim, rank);
  if (!rank && dim == -1) {
    return lastSize(tensor);
  }
  if (!d) {
    return std::nullopt;
  }
  const bool last = *d == *rank - 1;
  if (const std::optional<at::Tensor> constant = constantTensor(tensor)) {
    return constant->size(*d);
  }
  if (auto type = tensor->type()->cast<c10::TensorType>()) {
    if (const auto dims = type->sizes().size(); dims && static_cast<int64_t>(*dims) == *rank) {
      if (auto size = type->sizes()[*d]) {
        return *size;
      }
    }
  }
  const Node* node = tensor->node();
  if (node->matches(kLinear)) {
    const std::optional<at::Tensor> weight = constantTensor(node->input(1));
    if (last && weight && weight->dim() == 2) {
      return weight->size(0);
    }
    if (!last) {
      return knownSize(node->input(0), *d);
    }
  } else if (isKind(node, "aten::view") || isKind(node, "aten::reshape")) {
    const Value* sizes = node->input(1);
    if (sizes->node()->kind() == c10::prim::ListConstruct) {
      const std::optional<int64_t> size = knownInt(sizes->node()->input(*d));
      if (size && *size >= 0) {
        return size;
      }
    } else if (auto list = constantIntList(sizes); list && (*list)[*d] >= 0) {
      return (*list)[*d];
    }
  } else if (isKind(node, "aten::transpose")) {
    const auto rank_in = knownRank(node->input(0));
    const auto a = constantInt(node->input(1));
    const auto b = constantInt(node->input(2));
    const int64_t na = a ? normalizedDim(*a, rank_in).value_or(-1) : -1;
    const int64_t nb = b ? normalizedDim(*b, rank_in).value_or(-1) : -1;
    if (na >= 0 && nb >= 0) {
      return knownSize(node->input(0), *d == na ? nb : (*d == nb ? na : *d));
    }
  } else if (isKind(node, "aten::permute")) {
    if (auto dims = constantIntList(node->input(1))) {
      return knownSize(node->input(0), (*dims)[*d]);
    }
  } else if (keepsShape(node)) {
    if (auto size = knownSize(node->input(0), *d)) {
      return size;
    }
  } else if (isKind(node, "aten::slice") && node->inputs().size() == 5) {
    // t[..., start:end] with step 1: ends clamped to the size as Python does.
    const auto along = constantInt(node->input(1));
    if (along && normalizedDim(*along, rank) != *d) {
      return knownSize(node->input(0), *d);
    }
    const std::optional<int64_t> total = along ? knownSize(node->input(0), *d) : std::nullopt;
    auto bound = [&](const Value* v, int64_t if_none) -> std::optional<int64_t> {
      if (v->type()->kind() == c10::TypeKind::NoneType) {
        return if_none;
      }
      const std::optional<int64_t> b = knownInt(v);
      if (!b || !total) {
        return std::nullopt;
      }
      const int64_t from_end = *b < 0 ? *b + *total : *b;
      return std::min(std::max<int64_t>(from_end, 0), *total);
    };
    if (total && constantInt(node->input(4)) == 1) {
      const auto start = bound(node->input(2), 0);
      const auto end = bound(node->input(3), *total);
      if (start && end) {
        return std::max<int64_t>(*end - *start, 0);
      }
    }
  } else if (const std::optional<Piece> piece = pieceOf(tensor)) {
    const Node* split = piece->split;
    const std::optional<int64_t> along = splitDim(split);
    if (along && isKind(split, "aten::unbind")) {
      return knownSize(split->input(0), *d >= *along ? *d + 1 : *d);
    }
    if (along && *d != *along) {
      return knownSize(split->input(0), *d);
    }
    if (along) {
      return pieceWidth(*piece, knownSize(split->input(0), *along));
    }
  }
  // A reader that fixes the size: linear(tensor, W) needs tensor.size(-1) == W.size(1).
  if (last) {
    for (const torch::jit::Use& use : tensor->uses()) {
      const Node* user = use.user;
      if (use.offset == 0 && user->matches(kLinear) &&
          user->owningBlock() == definingBlock(tensor)) {
        const std::optional<at::Tensor> weight = constantTensor(user->input(1));
        if (weight && weight->dim() == 2) {
          return weight->size(1);
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<int64_t> lastSizeReadIn(const Value* tensor, const torch::jit::Block* block) {
  for (const torch::jit::Use& use : tensor->uses()) {
    const Node* user = use.user;
    if (use.offset == 0 && user->matches(kLinear) && user->owningBlock() == block) {
      if (const std::optional<int64_t> in = knownSize(user->input(1), 1)) {
        return in;
      }
    }
  }
  return std::nullopt;
}

std::optional<SizeOf> sizeOf(const Value* value) {
  const Node* node = value->node();
  if (isKind(node, "aten::size") && node->inputs().size() == 2) {
    const std::optional<int64_t> dim = constantInt(node->input(1));
    if (!dim) {
      return std::nullopt;
    }
    const auto d = normalizedDim(*dim, knownRank(node->input(0)));
    return SizeOf{node->input(0), d.value_or(*dim)};
  }
  const Node* list = nullptr;
  int64_t index = 0;
  if (node->kind() == c10::prim::ListUnpack) {
    list = node->input(0)->node();
    index = static_cast<int64_t>(value->offset());
  } else if (isKind(node, "aten::__getitem__")) {
    list = node->input(0)->node();
    const std::optional<int64_t> i = constantInt(node->input(1));
    if (!i) {
      return std::nullopt;
    }
    index = *i;
  }
  if (list == nullptr || !isKind(list, "aten::size") || list->inputs().size() != 1) {
    return std::nullopt;
  }
  const auto d = normalizedDim(index, knownRank(list->input(0)));
  if (!d) {
    return std::nullopt;
  }
  return SizeOf{list->input(0), *d};
}

std::optional<double> knownNumber(const Value* value) {
  const c10::TypeKind type = value->type()->kind();
  if (type != c10::TypeKind::IntType && type != c10::TypeKind::FloatType &&
      type != c10::TypeKind::NumberType) {
    return std::nullopt;
  }
  // (auto: a std::optional<IValue> made from toIValue's c10::optional is never empty.)
  if (const auto constant = torch::jit::toIValue(value)) {
    if (constant->isInt()) {
      return static_cast<double>(constant->toInt());
    }
    if (constant->isDouble()) {
      return constant->toDouble();
    }
    return std::nullopt;
  }
  if (const std::optional<SizeOf> size = sizeOf(value)) {
    const std::optional<int64_t> known = knownSize(size->tensor, size->dim);
    return known ? std::optional<double>(static_cast<double>(*known)) : std::nullopt;
  }
  const Node* node = value->node();
  const std::string kind = node->kind().toQualString();
  std::vector<double> args;
  for (const Value* input : node->inputs()) {
    const std::optional<double> arg = knownNumber(input);
    if (!arg) {
      return std::nullopt;
    }
    args.push_back(*arg);
  }
  if (args.size() == 1) {
    if (kind == "aten::sqrt" && args[0] >= 0) {
      return std::sqrt(args[0]);
    }
    if (kind == "aten::neg") {
      return -args[0];
    }
    if (kind == "aten::Float" || kind == "aten::ScalarImplicit") {
      return args[0];
    }
    if (kind == "aten::Int") {
      return std::trunc(args[0]);
    }
  } else if (args.size() == 2) {
    const double a = args[0];
    const double b = args[1];
    if (kind == "aten::mul") {
      return a * b;
    }
    if (kind == "aten::add") {
      return a + b;
    }
    if (kind == "aten::sub") {
      return a - b;
    }
    if (kind == "aten::div" && b != 0) {
      return a / b;
    }
    if (kind == "aten::floordiv" && b != 0) {
      return std::floor(a / b);
    }
    if (kind == "aten::pow" && (a > 0 || b == std::trunc(b))) {
      return std::pow(a, b);
    }
  }
  return std::nullopt;
}

std::optional<int64_t> knownInt(const Value* value) {
  if (value->type()->kind() != c10::TypeKind::IntType) {
    return std::nullopt;
  }
  const std::optional<double> number = knownNumber(value);
  if (!number || *number != std::trunc(*number)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(*number);
}

} // namespace srt::passes
