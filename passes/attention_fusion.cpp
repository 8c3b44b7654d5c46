// attention_fusion: softmax((q @ kᵀ) * scale [+ mask], -1) @ v  ->  srt::attention(q, k, v, mask,
// scale) (ops/attention/attention.cpp), so the S x S scores never become a graph value.
//
// Matched from the final matmul backwards:
//   softmax over the last dim, no dtype; a hand-written stable softmax's shift right before it,
//           `s - s.max(-1, keepdim=True)[0]` (or amax), is dropped (softmax shifts by the same)
//   scale   mul or div by a number, on the scores, on q, on k or on kᵀ, any number of times; the
//           factors multiply. A number the graph fixes (a constant, `math.sqrt(d)`, or
//           `1 / math.sqrt(k.size(-1))` of a known head size; passes/shape_facts.h) is folded; a
//           float only known at run time (F.multi_head_attention_forward's `q / math.sqrt(E)` of
//           E = q.size(-1), whose head size reaches it through run-time checks) is multiplied in
//           by float ops before the fused node
//   mask    add(scores, mask) with alpha 1 either order, the zoo's `if mask is not None: scores =
//           scores + mask` (the mask stays Optional; torchaudio's in-place `scores += mask`
//           there reads it cast to q's dtype), or masked_fill(scores, mask, -inf) (a
//           boolean mask); scales after the mask only over a -inf fill and when positive (so
//           never a run-time one)
//   q @ kᵀ  matmul, or for 3-D operands bmm; baddbmm(mask, q, kᵀ, beta=1, alpha=c) is the
//           product, its scale c and an additive mask in one (the slow path of
//           nn.MultiheadAttention); the final product matmul or bmm
//   kᵀ      transpose(k, -2, -1) (or the last two dims spelled positively) when k's rank is
//           known, or any permute(x, P): k is then x permuted by P with its last two dims swapped
// Every step of the scores must be read only by the next, all in one block (else they are
// computed anyway: nothing saved), and no input may be written anywhere in the graph (the fused
// node reads them where the final matmul was). The replaced nodes go by dead-code elimination, so
// anything else that reads them keeps them.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/rewrite_safety.h"
#include "passes/shape_facts.h"

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

std::optional<int64_t> constantInt(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isInt()) {
    return std::nullopt;
  }
  return constant->toInt();
}

std::optional<double> constantNumber(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !(constant->isInt() || constant->isDouble())) {
    return std::nullopt;
  }
  return constant->isInt() ? static_cast<double>(constant->toInt()) : constant->toDouble();
}

bool isNoneConstant(const Value* value) {
  return value->type()->kind() == c10::TypeKind::NoneType;
}

bool usedOnlyBy(const Value* value, const Node* user) {
  return value->uses().size() == 1 && value->uses()[0].user == user;
}

// k for a kᵀ operand: `source` itself, or `source` permuted by `permute` (a view the rewrite
// inserts).
struct KeyOperand {
  Value* source = nullptr;
  std::vector<int64_t> permute; // empty: source is k
};

// The k whose transpose over the last two dims `kt` is, when it provably is one. A permute of any
// order is one: permute(x, P) with P's last two entries swapped is k (wav2vec2's
// `k.view(B, T, H, Dh).permute(0, 2, 3, 1)` is kᵀ straight from the head split).
std::optional<KeyOperand> transposedKey(Value* kt) {
  Node* node = kt->node();
  if (node->matches("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")) {
    Value* k = node->input(0);
    const auto d0 = constantInt(node->input(1));
    const auto d1 = constantInt(node->input(2));
    if (!d0 || !d1) {
      return std::nullopt;
    }
    if (std::min(*d0, *d1) == -2 && std::max(*d0, *d1) == -1) {
      return KeyOperand{k, {}};
    }
    const std::optional<int64_t> rank = knownRank(k);
    const auto n0 = normalizedDim(*d0, rank);
    const auto n1 = normalizedDim(*d1, rank);
    if (n0 && n1 && *rank >= 2 && std::min(*n0, *n1) == *rank - 2 &&
        std::max(*n0, *n1) == *rank - 1) {
      return KeyOperand{k, {}};
    }
    return std::nullopt;
  }
  if (node->matches("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)")) {
    const auto dims = constantIntList(node->input(1));
    if (!dims || dims->size() < 2) {
      return std::nullopt;
    }
    const int64_t rank = static_cast<int64_t>(dims->size());
    std::vector<int64_t> k_dims;
    std::vector<bool> seen(rank, false);
    for (int64_t d = 0; d < rank; ++d) {
      const auto actual = normalizedDim((*dims)[d], rank);
      if (!actual || seen[*actual]) {
        return std::nullopt; // permute raises
      }
      seen[*actual] = true;
      k_dims.push_back(*actual);
    }
    std::swap(k_dims[rank - 2], k_dims[rank - 1]);
    bool identity = true;
    for (int64_t d = 0; d < rank; ++d) {
      identity = identity && k_dims[d] == d;
    }
    return KeyOperand{node->input(0), identity ? std::vector<int64_t>{} : k_dims};
  }
  return std::nullopt;
}

// The product of the scale factors met: the numbers the graph fixes folded, and the float values
// only known at run time (each multiplying, or dividing).
struct Scale {
  struct RuntimeFactor {
    Value* value;
    bool divides;
  };
  double constant = 1.0;
  std::vector<RuntimeFactor> runtime;

  bool isOne() const { return constant == 1.0 && runtime.empty(); }
  void multiplyBy(const Scale& other) {
    constant *= other.constant;
    runtime.insert(runtime.end(), other.runtime.begin(), other.runtime.end());
  }
};

struct AttentionMatch {
  Node* output_matmul = nullptr;
  Value* q = nullptr;
  KeyOperand k;
  Value* v = nullptr;
  Value* mask = nullptr;   // nullptr: no mask
  bool mask_fills = false; // masked_fill(-inf) rather than added
  // Added in place (`scores += mask` in the Optional mask's If, torchaudio's wav2vec2): the sum
  // keeps the scores' dtype, so the fused node reads the mask cast to q's.
  bool mask_in_place = false;
  Scale scale;
};

bool isMatmul(const Node* node) {
  return node->matches("aten::matmul(Tensor self, Tensor other) -> Tensor") ||
         node->matches("aten::bmm(Tensor self, Tensor mat2) -> Tensor");
}

// A one-output `if mask is not None` (or `is None`) If: the Optional mask and the branch taken
// with it and without it.
struct MaskBranches {
  Value* mask;
  Block* with_mask;
  Block* without_mask;
};

std::optional<MaskBranches> optionalMaskBranches(Node* node) {
  if (node->kind() != c10::prim::If || node->outputs().size() != 1) {
    return std::nullopt;
  }
  const Node* condition = node->input(0)->node();
  const bool is_not = condition->kind() == c10::aten::__isnot__;
  if (!is_not && condition->kind() != c10::aten::__is__) {
    return std::nullopt;
  }
  Value* mask = condition->input(0);
  if (isNoneConstant(mask)) {
    mask = condition->input(1);
  } else if (!isNoneConstant(condition->input(1))) {
    return std::nullopt;
  }
  return MaskBranches{mask, node->blocks()[is_not ? 0 : 1], node->blocks()[is_not ? 1 : 0]};
}

// The mask branch `if mask is not None: scores = scores + mask` (or `scores += mask`, then
// `in_place`): `node` is the prim::If, `scores` what it adds to. Returns the Optional mask value,
// or nullptr.
Value* optionalMaskIf(Node* node, Value*& scores, bool& in_place) {
  const std::optional<MaskBranches> branches = optionalMaskBranches(node);
  if (!branches) {
    return nullptr;
  }
  Value* mask = branches->mask;
  Block* with_mask = branches->with_mask;
  Block* without_mask = branches->without_mask;
  // without: no nodes, returns the scores from outside. with: unchecked_cast(mask), add, return.
  if (without_mask->nodes().begin() != without_mask->nodes().end()) {
    return nullptr;
  }
  Value* unmasked = without_mask->outputs()[0];
  const Node* add = with_mask->outputs()[0]->node();
  in_place = add->matches(
      "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  if (add->owningBlock() != with_mask ||
      !(in_place ||
        add->matches("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")) ||
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

// `t * s` or `t / s` for a number s: the graph fixes it (a constant, or `sqrt(k.size(-1))` of a
// known head size), or it is a float value. Returns t and multiplies `scale` by s (or 1 / s).
Value* scaledInput(Value* scaled, const Block* block, Scale& scale) {
  Node* node = scaled->node();
  const bool is_mul = node->matches("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor");
  const bool is_div = node->matches("aten::div.Scalar(Tensor self, Scalar other) -> Tensor");
  if ((!is_mul && !is_div) || node->owningBlock() != block) {
    return nullptr;
  }
  Value* factor = node->input(1);
  if (const std::optional<double> number = knownNumber(factor)) {
    if (!std::isfinite(*number) || *number == 0.0) {
      return nullptr;
    }
    scale.constant *= is_div ? 1.0 / *number : *number;
  } else if (factor->type()->kind() == c10::TypeKind::FloatType) {
    scale.runtime.push_back({factor, is_div});
  } else {
    return nullptr;
  }
  return node->input(0);
}

// An operand of q @ kᵀ with its scales folded into `scale`: only scales read by nothing else (a
// scaled q read elsewhere stays the operand). The operand itself has `readers` uses, all the
// product's (2 for the two branches of optionalMaskProduct).
Value* unscaledOperand(Value* operand, const Block* block, Scale& scale, size_t readers = 1) {
  for (;;) {
    Value* inner = operand->uses().size() == readers ? scaledInput(operand, block, scale) : nullptr;
    if (inner == nullptr) {
      return operand;
    }
    operand = inner;
    readers = 1;
  }
}

// The scores' q @ kᵀ: its q operand (scales not yet taken off), the k of kᵀ and, for baddbmm, the
// mask it adds.
struct Product {
  Value* q = nullptr;
  KeyOperand k;
  Value* mask = nullptr;
  bool needs_3d = false; // bmm or baddbmm: raises unless q and k are 3-D
  size_t q_readers = 1;  // the product's reads of q
};

bool isBaddbmm(const Node* node) {
  return node->matches("aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar "
                       "beta=1, Scalar alpha=1) -> Tensor");
}

// matmul / bmm(q, kᵀ) or baddbmm(mask, q, kᵀ, beta=1, alpha=c) (= q @ kᵀ * c + mask; c goes into
// `scale`), in `block`. kᵀ must be read by `product` alone, or (`shared_kt`) by the products of
// both branches of the If below.
std::optional<Product> plainProduct(const Node* product, const Block* block, Scale& scale,
                                    bool shared_kt = false) {
  if (product->owningBlock() != block) {
    return std::nullopt;
  }
  Product result;
  size_t first_operand = 0; // baddbmm's operands follow the mask
  if (isBaddbmm(product)) {
    const std::optional<double> alpha = constantNumber(product->input(4));
    if (constantNumber(product->input(3)) != 1.0 || !alpha || !std::isfinite(*alpha) ||
        *alpha == 0.0) {
      return std::nullopt;
    }
    scale.constant *= *alpha;
    result.mask = product->input(0);
    first_operand = 1;
  } else if (!isMatmul(product)) {
    return std::nullopt;
  }
  result.needs_3d = product->kind() != c10::aten::matmul;
  result.q = product->input(first_operand);
  Value* kt = product->input(first_operand + 1);
  const std::optional<KeyOperand> k = transposedKey(kt);
  const bool kt_read_here = kt->node()->owningBlock() == block && kt->uses().size() == 1;
  if (!k || !(kt_read_here || shared_kt)) {
    return std::nullopt;
  }
  result.k = *k;
  return result;
}

// F.multi_head_attention_forward's product when its mask is Optional:
//   if attn_mask is not None: scores = baddbmm(attn_mask, q, kᵀ) else: scores = bmm(q, kᵀ)
// (each branch transposing k, or both reading one kᵀ from outside). The mask stays Optional.
std::optional<Product> optionalMaskProduct(Node* node, Scale& scale) {
  const std::optional<MaskBranches> branches = optionalMaskBranches(node);
  if (!branches) {
    return std::nullopt;
  }
  Value* mask = branches->mask;
  const Block* with_mask = branches->with_mask;
  const Block* without_mask = branches->without_mask;
  const Node* masked = with_mask->outputs()[0]->node();
  const Node* unmasked = without_mask->outputs()[0]->node();
  if (!isBaddbmm(masked) || !isMatmul(unmasked)) {
    return std::nullopt;
  }
  const Node* cast = masked->input(0)->node();
  if (cast->kind() != c10::prim::unchecked_cast || cast->input(0) != mask ||
      cast->owningBlock() != with_mask || cast->output()->uses().size() != 1) {
    return std::nullopt;
  }
  const Value* kt = masked->input(2);
  const bool shared_kt = kt == unmasked->input(1) &&
                         kt->node()->owningBlock() == node->owningBlock() && kt->uses().size() == 2;
  Scale masked_scale; // baddbmm's alpha: must be 1, as the other branch has none
  const std::optional<Product> with = plainProduct(masked, with_mask, masked_scale, shared_kt);
  const std::optional<Product> without = plainProduct(unmasked, without_mask, scale, shared_kt);
  if (!with || !without || with->q != without->q || with->k.source != without->k.source ||
      with->k.permute != without->k.permute || !masked_scale.isOne()) {
    return std::nullopt;
  }
  // Nothing else runs in the branches: the products, the cast, the transposes they read.
  for (const Block* branch : {with_mask, without_mask}) {
    for (const Node* inner : branch->nodes()) {
      const bool transposes_k =
          inner->kind() == c10::aten::transpose &&
          (inner->output() == masked->input(2) || inner->output() == unmasked->input(1));
      if (inner != masked && inner != unmasked && inner != cast && !transposes_k &&
          inner->kind() != c10::prim::Constant) {
        return std::nullopt;
      }
    }
  }
  Product result = *with;
  result.mask = mask;
  result.needs_3d = true;
  const auto q_uses = with->q->uses();
  const bool q_read_by_products_only =
      q_uses.size() == 2 && std::all_of(q_uses.begin(), q_uses.end(), [&](const auto& use) {
        return use.user == masked || use.user == unmasked;
      });
  result.q_readers = q_read_by_products_only ? 2 : 0; // (0: its scales stay)
  return result;
}

// The additive mask `scores + mask` (either order, alpha 1), the `if mask is not None` branch,
// or the boolean `scores.masked_fill(mask, -inf)`: returns the mask and sets `scores` (and
// `in_place` for the branch's `scores += mask`).
Value* maskOf(Node* node, const Block* block, Value*& scores, bool& in_place) {
  in_place = false;
  if (node->owningBlock() != block) {
    return nullptr;
  }
  if (Value* mask = optionalMaskIf(node, scores, in_place)) {
    return mask;
  }
  if (node->matches("aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor")) {
    // Only -inf: a finite fill replaces the score where the kernel's float masks add.
    const std::optional<double> value = constantNumber(node->input(2));
    if (!value || !(std::isinf(*value) && *value < 0)) {
      return nullptr;
    }
    scores = node->input(0);
    return node->input(1);
  }
  if (node->matches("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") &&
      constantNumber(node->input(2)) == 1.0) {
    // Addition commutes: the scores side is the one produced by a scale or q @ kᵀ.
    for (int side : {0, 1}) {
      const Node* producer = node->input(side)->node();
      if (isMatmul(producer) || producer->kind() == c10::aten::mul ||
          producer->kind() == c10::aten::div) {
        scores = node->input(side);
        return node->input(1 - side);
      }
    }
  }
  return nullptr;
}

// The hand-written stable softmax's shift `s - s.max(dim, keepdim=True)[0]` (or amax) over the
// softmax's own dim (torchaudio's wav2vec2 writes it): softmax subtracts the row maximum itself,
// and computes exp(s - max) from the same difference, so dropping the shift changes no bit. Returns
// s when `shifted` is that shift, read by the softmax alone, and s is read by the shift alone.
Value* unshiftedScores(Value* shifted, const Node* softmax, int64_t softmax_dim,
                       const Block* block) {
  Node* sub = shifted->node();
  if (!usedOnlyBy(shifted, softmax) || sub->owningBlock() != block ||
      !sub->matches("aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") ||
      constantNumber(sub->input(2)) != 1.0) {
    return nullptr;
  }
  Value* scores = sub->input(0);
  Value* row_max = sub->input(1);
  Node* max = row_max->node();
  std::optional<int64_t> max_dim;
  if (max->matches("aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                   "Tensor indices)") &&
      row_max == max->output(0) && !max->output(1)->hasUses()) {
    max_dim = constantInt(max->input(1));
  } else if (max->matches("aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")) {
    const auto dims = constantIntList(max->input(1));
    if (dims && dims->size() == 1) {
      max_dim = (*dims)[0];
    }
  }
  const std::optional<int64_t> rank = knownRank(scores);
  const bool same_dim =
      max_dim && (*max_dim == softmax_dim ||
                  (rank && normalizedDim(*max_dim, rank) == normalizedDim(softmax_dim, rank)));
  const auto keepdim = torch::jit::toIValue(max->input(2));
  if (!same_dim || !keepdim || !keepdim->isBool() || !keepdim->toBool() ||
      max->input(0) != scores || max->owningBlock() != block || !usedOnlyBy(row_max, sub) ||
      scores->uses().size() != 2) {
    return nullptr;
  }
  return scores;
}

std::optional<AttentionMatch> matchAttention(Node* output_matmul, torch::jit::AliasDb& alias_db) {
  if (!isMatmul(output_matmul)) {
    return std::nullopt;
  }
  AttentionMatch match;
  match.output_matmul = output_matmul;
  match.v = output_matmul->input(1);
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

  // From the softmax back to q @ kᵀ: scales, at most one mask, more scales. Each intermediate
  // read only by the next step (else it would be computed anyway, and the fusion saves nothing).
  Value* scores = softmax->input(0);
  const Node* reader = softmax;
  if (Value* unshifted = unshiftedScores(scores, softmax, *softmax_dim, block)) {
    scores = unshifted;
    reader = nullptr; // (read by the shift's max and sub only)
  }
  Scale outer_scale; // applied after the mask
  for (;;) {
    // (nullptr: the reads were checked by the step, as for the two of the Optional-mask If.)
    if (reader != nullptr && !usedOnlyBy(scores, reader)) {
      return std::nullopt;
    }
    Node* node = scores->node();
    if (Value* inner =
            scaledInput(scores, block, match.mask == nullptr ? outer_scale : match.scale)) {
      scores = inner;
      reader = node;
    } else if (Value* inner = nullptr;
               match.mask == nullptr &&
               (match.mask = maskOf(node, block, inner, match.mask_in_place))) {
      match.mask_fills = node->kind() == c10::aten::masked_fill;
      scores = inner;
      reader = node->kind() == c10::prim::If ? nullptr : node;
    } else {
      break;
    }
  }
  Node* product_node = scores->node();
  std::optional<Product> product = plainProduct(product_node, block, match.scale);
  if (!product && product_node->owningBlock() == block) {
    product = optionalMaskProduct(product_node, match.scale);
  }
  if (!product || (product->mask != nullptr && match.mask != nullptr)) {
    return std::nullopt; // (two masks: not a form the fused op takes)
  }
  if (product->mask != nullptr) {
    match.mask = product->mask;
  }
  // A scale after the mask: the same as before it only for -inf fills and a positive scale
  // ((s + m) * c is not s * c + m).
  if (!outer_scale.isOne() && match.mask != nullptr &&
      !(match.mask_fills && outer_scale.runtime.empty() && outer_scale.constant > 0)) {
    return std::nullopt;
  }
  match.scale.multiplyBy(outer_scale);

  match.q = unscaledOperand(product->q, block, match.scale, product->q_readers);
  match.k = product->k;
  match.k.source = unscaledOperand(product->k.source, block, match.scale);
  // (A permute keeps the rank, and says it.)
  const std::optional<int64_t> k_rank = match.k.permute.empty()
                                            ? knownRank(match.k.source)
                                            : static_cast<int64_t>(match.k.permute.size());
  // bmm and baddbmm raise unless their operands are 3-D; the fused node would not.
  const bool ranks_fit = (!product->needs_3d || (knownRank(match.q) == 3 && k_rank == 3)) &&
                         (output_matmul->kind() == c10::aten::matmul ||
                          (knownRank(match.q) == 3 && knownRank(match.v) == 3));
  if (!ranks_fit) {
    return std::nullopt;
  }

  // softmax over the last dim of the scores: -1, or rank - 1 when the rank is known (q and k of
  // one rank, and a mask that cannot add dims).
  if (*softmax_dim != -1) {
    const std::optional<int64_t> rank = knownRank(match.q);
    const bool mask_keeps_rank =
        match.mask == nullptr || (knownRank(match.mask) && *knownRank(match.mask) <= rank);
    if (!rank || k_rank != rank || !mask_keeps_rank || *softmax_dim != *rank - 1) {
      return std::nullopt;
    }
  }
  // The fused node reads its inputs where the final matmul was: nothing may write them.
  for (const Value* input : {match.q, match.k.source, match.v, match.mask}) {
    if (input != nullptr && alias_db.hasWriters(input)) {
      return std::nullopt;
    }
  }
  return match;
}

// `mask` (Optional) cast to q's dtype where it is a tensor: what `scores += mask` adds.
Value* castOptionalMask(torch::jit::Graph& graph, Value* mask, Value* q) {
  Value* given = graph.insert(c10::aten::__isnot__, {mask, graph.insertConstant(c10::IValue())});
  Node* cast = graph.insertNode(graph.create(c10::prim::If, {given}, 1));
  cast->output()->setType(c10::OptionalType::create(c10::TensorType::get()));
  Block* with_mask = cast->addBlock();
  Block* without_mask = cast->addBlock();
  {
    torch::jit::WithInsertPoint inside(with_mask);
    Value* tensor = graph.insertUncheckedCast(mask, c10::TensorType::get());
    with_mask->registerOutput(graph.insert(c10::aten::type_as, {tensor, q}));
  }
  {
    torch::jit::WithInsertPoint inside(without_mask);
    without_mask->registerOutput(graph.insertConstant(c10::IValue()));
  }
  return cast->output();
}

void rewrite(const AttentionMatch& match, torch::jit::Graph& graph) {
  Node* anchor = match.output_matmul;
  torch::jit::WithInsertPoint guard(anchor);
  Value* mask = match.mask == nullptr ? graph.insertConstant(c10::IValue())
                : match.mask_in_place ? castOptionalMask(graph, match.mask, match.q)
                                      : match.mask;
  Value* scale = graph.insertConstant(match.scale.constant);
  for (const Scale::RuntimeFactor& factor : match.scale.runtime) {
    scale = graph.insert(factor.divides ? c10::aten::div : c10::aten::mul, {scale, factor.value});
  }
  Value* k = match.k.source;
  if (!match.k.permute.empty()) {
    k = graph.insert(c10::aten::permute, {k, graph.insertConstant(c10::IValue(match.k.permute))});
  }
  Value* fills = graph.insertConstant(match.mask_fills);
  Value* causal = graph.insertConstant(false); // multi_head_attention_fusion proves it
  Node* fused = graph.create(c10::Symbol::fromQualString("srt::attention"),
                             {match.q, k, match.v, mask, scale, fills, causal}, 1);
  graph.insertNode(fused);
  fused->output()->setType(anchor->output()->type());
  fused->copyMetadata(anchor);
  anchor->output()->replaceAllUsesWith(fused->output());
}

// One rewrite at most: the next search sees the graph (and its aliasing) as rewritten, and the
// replaced chain gone (dead-code elimination removes what only it read: the pattern's nodes).
bool fuseOne(std::shared_ptr<torch::jit::Graph>& graph) {
  torch::jit::AliasDb alias_db(graph);
  for (Node* candidate : nodesWhere(graph->block(), isMatmul)) {
    if (std::optional<AttentionMatch> match = matchAttention(candidate, alias_db)) {
      rewrite(*match, *graph);
      torch::jit::EliminateDeadCode(graph);
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
  return changed;
}

} // namespace srt::passes
