// attention_fusion: softmax((q @ kᵀ) * scale [+ mask], -1) @ v  ->  srt::attention(q, k, v, mask,
// scale) (ops/attention/attention.cpp), so the S x S scores never become a graph value.
//
// Matched from the final matmul backwards:
//   kᵀ      transpose(k, -2, -1) (or the last two dims spelled positively, or a permute swapping
//           them) when k's rank is known
//   scale   mul or div of the scores by a constant number, or none
//   mask    add(scores, mask) with alpha 1, or the zoo's `if mask is not None: scores = scores +
//           mask` (a prim::If on `mask is not None`, the mask stays Optional), or none
//   softmax over the last dim, no dtype
// Every intermediate must be used only by the next step, all in one block, and no input may be
// written anywhere in the graph (the fused node reads them where the final matmul was).
#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

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

std::optional<int64_t> constantInt(const Value* value) {
  const std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant || !constant->isInt()) {
    return std::nullopt;
  }
  return constant->toInt();
}

std::optional<double> constantNumber(const Value* value) {
  const std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant || !(constant->isInt() || constant->isDouble())) {
    return std::nullopt;
  }
  return constant->isInt() ? static_cast<double>(constant->toInt()) : constant->toDouble();
}

std::optional<std::vector<int64_t>> constantIntList(const Value* value) {
  const std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant || !constant->isIntList()) {
    return std::nullopt;
  }
  return constant->toIntVector();
}

bool isNoneConstant(const Value* value) {
  return value->type()->kind() == c10::TypeKind::NoneType;
}

// The rank of a tensor value when the graph fixes it: its type, or a producer whose output rank
// follows from constant arguments (the head-split permute/view of attention code).
std::optional<int64_t> knownRank(const Value* value) {
  if (auto type = value->type()->cast<c10::TensorType>()) {
    if (auto dims = type->dim()) {
      return static_cast<int64_t>(*dims);
    }
  }
  const Node* node = value->node();
  if (node->matches("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)")) {
    if (auto dims = constantIntList(node->input(1))) {
      return static_cast<int64_t>(dims->size());
    }
  } else if (node->matches("aten::view(Tensor(a) self, int[] size) -> Tensor(a)") ||
             node->matches("aten::reshape(Tensor(a) self, int[] shape) -> Tensor(a)")) {
    const Value* sizes = node->input(1);
    if (sizes->node()->kind() == c10::prim::ListConstruct) {
      return static_cast<int64_t>(sizes->node()->inputs().size());
    }
    if (auto list = constantIntList(sizes)) {
      return static_cast<int64_t>(list->size());
    }
  } else if (node->matches("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> "
                           "Tensor(a)") ||
             node->matches("aten::contiguous(Tensor(a) self, *, MemoryFormat "
                           "memory_format=contiguous_format) -> Tensor(a)")) {
    return knownRank(node->input(0));
  }
  return std::nullopt;
}

// `dim` as a non-negative index into a tensor of `rank` dims; std::nullopt when the rank is
// unknown or the dim out of range.
std::optional<int64_t> normalizedDim(int64_t dim, std::optional<int64_t> rank) {
  if (!rank || dim < -*rank || dim >= *rank) {
    return std::nullopt;
  }
  return dim < 0 ? dim + *rank : dim;
}

bool usedOnlyBy(const Value* value, const Node* user) {
  return value->uses().size() == 1 && value->uses()[0].user == user;
}

// The k whose transpose over the last two dims `kt` is, when it provably is one.
std::optional<Value*> transposedKey(Value* kt) {
  Node* node = kt->node();
  if (node->matches("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")) {
    Value* k = node->input(0);
    const auto d0 = constantInt(node->input(1));
    const auto d1 = constantInt(node->input(2));
    if (!d0 || !d1) {
      return std::nullopt;
    }
    if (std::min(*d0, *d1) == -2 && std::max(*d0, *d1) == -1) {
      return k;
    }
    const std::optional<int64_t> rank = knownRank(k);
    const auto n0 = normalizedDim(*d0, rank);
    const auto n1 = normalizedDim(*d1, rank);
    if (n0 && n1 && *rank >= 2 && std::min(*n0, *n1) == *rank - 2 &&
        std::max(*n0, *n1) == *rank - 1) {
      return k;
    }
    return std::nullopt;
  }
  if (node->matches("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)")) {
    const auto dims = constantIntList(node->input(1));
    if (!dims || dims->size() < 2) {
      return std::nullopt;
    }
    const int64_t rank = static_cast<int64_t>(dims->size());
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t expected = d < rank - 2 ? d : (d == rank - 2 ? rank - 1 : rank - 2);
      const auto actual = normalizedDim((*dims)[d], rank);
      if (!actual || *actual != expected) {
        return std::nullopt;
      }
    }
    return node->input(0);
  }
  return std::nullopt;
}

struct AttentionMatch {
  Node* output_matmul = nullptr;
  Value* q = nullptr;
  Value* k = nullptr;
  Value* v = nullptr;
  Value* mask = nullptr; // nullptr: no mask
  double scale = 1.0;
  // Pattern nodes, users before producers (the order they can be destroyed in).
  std::vector<Node*> nodes;
};

// The mask branch `if mask is not None: scores = scores + mask`: `node` is the prim::If, `scores`
// what it adds to. Returns the Optional mask value, or nullptr.
Value* optionalMaskIf(Node* node, Value*& scores) {
  if (node->kind() != c10::prim::If || node->outputs().size() != 1) {
    return nullptr;
  }
  Node* condition = node->input(0)->node();
  const bool is_not = condition->kind() == c10::aten::__isnot__;
  if (!is_not && condition->kind() != c10::aten::__is__) {
    return nullptr;
  }
  Value* mask = condition->input(0);
  if (isNoneConstant(mask)) {
    mask = condition->input(1);
  } else if (!isNoneConstant(condition->input(1))) {
    return nullptr;
  }
  Block* with_mask = node->blocks()[is_not ? 0 : 1];
  Block* without_mask = node->blocks()[is_not ? 1 : 0];
  // without: no nodes, returns the scores from outside. with: unchecked_cast(mask), add, return.
  if (without_mask->nodes().begin() != without_mask->nodes().end()) {
    return nullptr;
  }
  Value* unmasked = without_mask->outputs()[0];
  const Node* add = with_mask->outputs()[0]->node();
  if (add->owningBlock() != with_mask ||
      !add->matches("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") ||
      constantNumber(add->input(2)) != 1.0) {
    return nullptr;
  }
  const Node* cast = add->input(1)->node();
  if (add->input(0) != unmasked || cast->kind() != c10::prim::unchecked_cast ||
      cast->input(0) != mask) {
    return nullptr;
  }
  // Only the cast and the add inside; the unmasked scores used by nothing else.
  const auto inner_nodes = std::distance(with_mask->nodes().begin(), with_mask->nodes().end());
  if (inner_nodes != 2 || cast->output()->uses().size() != 1 || add->output()->uses().size() != 1 ||
      unmasked->uses().size() != 2) {
    return nullptr;
  }
  for (const torch::jit::Use& use : unmasked->uses()) {
    if (use.user != add && use.user != without_mask->return_node()) {
      return nullptr;
    }
  }
  scores = unmasked;
  return mask;
}

// Everything above the softmax: scaled scores and the matmul of q and kᵀ.
bool matchScores(Value* scaled, AttentionMatch& match) {
  Value* product = scaled;
  Node* scale_node = scaled->node();
  if (scale_node->matches("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor") ||
      scale_node->matches("aten::div.Scalar(Tensor self, Scalar other) -> Tensor")) {
    const std::optional<double> factor = constantNumber(scale_node->input(1));
    const bool is_div = scale_node->kind() == c10::aten::div;
    if (!factor || (is_div && *factor == 0.0) || scale_node->input(0)->uses().size() != 1 ||
        scale_node->owningBlock() != match.output_matmul->owningBlock()) {
      return false;
    }
    match.scale = is_div ? 1.0 / *factor : *factor;
    match.nodes.push_back(scale_node);
    product = scale_node->input(0);
  }
  Node* scores = product->node();
  if (!scores->matches("aten::matmul(Tensor self, Tensor other) -> Tensor") ||
      scores->owningBlock() != match.output_matmul->owningBlock()) {
    return false;
  }
  Value* kt = scores->input(1);
  const std::optional<Value*> k = transposedKey(kt);
  if (!k || !usedOnlyBy(kt, scores) || kt->node()->owningBlock() != scores->owningBlock()) {
    return false;
  }
  match.q = scores->input(0);
  match.k = *k;
  match.nodes.push_back(scores);
  match.nodes.push_back(kt->node());
  return true;
}

std::optional<AttentionMatch> matchAttention(Node* output_matmul, torch::jit::AliasDb& alias_db) {
  if (!output_matmul->matches("aten::matmul(Tensor self, Tensor other) -> Tensor")) {
    return std::nullopt;
  }
  AttentionMatch match;
  match.output_matmul = output_matmul;
  match.v = output_matmul->input(1);
  match.nodes.push_back(output_matmul);
  const Block* block = output_matmul->owningBlock();

  Value* weights = output_matmul->input(0);
  Node* softmax = weights->node();
  if (!softmax->matches("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> "
                        "Tensor") ||
      softmax->owningBlock() != block || !usedOnlyBy(weights, output_matmul) ||
      !isNoneConstant(softmax->input(2))) {
    return std::nullopt;
  }
  const std::optional<int64_t> softmax_dim = constantInt(softmax->input(1));
  if (!softmax_dim) {
    return std::nullopt;
  }
  match.nodes.push_back(softmax);

  Value* masked = softmax->input(0);
  Node* mask_node = masked->node();
  Value* scaled = masked;
  if (!usedOnlyBy(masked, softmax)) {
    return std::nullopt;
  }
  if (mask_node->owningBlock() == block) {
    if (Value* mask = optionalMaskIf(mask_node, scaled)) {
      match.mask = mask;
      match.nodes.push_back(mask_node);
    } else if (mask_node->matches("aten::add.Tensor(Tensor self, Tensor other, *, Scalar "
                                  "alpha=1) -> Tensor") &&
               constantNumber(mask_node->input(2)) == 1.0) {
      // scores + mask or mask + scores: addition commutes; the scores side is the one that
      // matches the rest of the pattern.
      match.nodes.push_back(mask_node);
      for (int side : {0, 1}) {
        AttentionMatch attempt = match;
        attempt.mask = mask_node->input(1 - side);
        if (usedOnlyBy(mask_node->input(side), mask_node) &&
            matchScores(mask_node->input(side), attempt)) {
          match = std::move(attempt);
          scaled = nullptr;
          break;
        }
      }
      if (scaled != nullptr) {
        return std::nullopt;
      }
    }
  }
  if (scaled != nullptr && !matchScores(scaled, match)) {
    return std::nullopt;
  }

  // softmax over the last dim of the scores: -1, or rank - 1 when the rank is known (q and k of
  // one rank, and a mask that cannot add dims).
  if (*softmax_dim != -1) {
    const std::optional<int64_t> rank = knownRank(match.q);
    const bool mask_keeps_rank =
        match.mask == nullptr || (knownRank(match.mask) && *knownRank(match.mask) <= rank);
    if (!rank || knownRank(match.k) != rank || !mask_keeps_rank || *softmax_dim != *rank - 1) {
      return std::nullopt;
    }
  }
  // The fused node reads its inputs where the final matmul was: nothing may write them.
  for (const Value* input : {match.q, match.k, match.v, match.mask}) {
    if (input != nullptr && alias_db.hasWriters(input)) {
      return std::nullopt;
    }
  }
  return match;
}

void rewrite(const AttentionMatch& match, torch::jit::Graph& graph) {
  Node* anchor = match.output_matmul;
  torch::jit::WithInsertPoint guard(anchor);
  Value* mask = match.mask != nullptr ? match.mask : graph.insertConstant(c10::IValue());
  Value* scale = graph.insertConstant(match.scale);
  Node* fused = graph.create(c10::Symbol::fromQualString("srt::attention"),
                             {match.q, match.k, match.v, mask, scale}, 1);
  graph.insertNode(fused);
  fused->output()->setType(anchor->output()->type());
  fused->copyMetadata(anchor);
  anchor->output()->replaceAllUsesWith(fused->output());
  for (Node* node : match.nodes) {
    node->destroy();
  }
}

void collectCandidates(Block* block, std::vector<Node*>& candidates) {
  for (Node* node : block->nodes()) {
    if (node->kind() == c10::aten::matmul) {
      candidates.push_back(node);
    }
    for (Block* sub_block : node->blocks()) {
      collectCandidates(sub_block, candidates);
    }
  }
}

// One rewrite at most: the next search sees the graph (and its aliasing) as rewritten.
bool fuseOne(const std::shared_ptr<torch::jit::Graph>& graph) {
  torch::jit::AliasDb alias_db(graph);
  std::vector<Node*> candidates;
  collectCandidates(graph->block(), candidates);
  for (Node* candidate : candidates) {
    if (std::optional<AttentionMatch> match = matchAttention(candidate, alias_db)) {
      rewrite(*match, *graph);
      return true;
    }
  }
  return false;
}

} // namespace

bool fuseAttention(GraphPtr& graph) {
  bool changed = false;
  while (fuseOne(graph)) {
    changed = true;
  }
  if (changed) {
    // The mask's `is not None` test and the like, now unused.
    torch::jit::EliminateDeadCode(graph);
  }
  return changed;
}

} // namespace srt::passes
