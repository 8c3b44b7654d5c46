// einsum_lowering: a two-operand aten::einsum that is one batched matrix product becomes
// reorders and reshapes around an aten::matmul, so it runs on the GEMM kernels (ops/gemm/) and
// the later passes see it (transpose_absorption takes a permute of the last two dims as a
// transpose flag, attention_fusion a q @ kᵀ):
//
//   einsum("bhid,bhjd->bhij", [q, k])   ->   matmul(q, k.permute(0, 1, 3, 2))
//
// Taken when every index is a batch index (in both operands and the output), a contracted one
// (in both, not in the output) or a free one (in one operand and the output). Each operand is
// reordered to [batch..., free..., contracted...] (the right one [batch..., contracted...,
// free...]); its free and its contracted indices are flattened into one dim each (or a dim of
// one added where there are none), the product's two last dims unflattened back and the result
// reordered as the output lists its indices. That is how ATen's einsum computes too (permutes
// around one bmm), as kernels of ours instead of one allocating JIT operator:
//
//   einsum("bythwc,hkc->bythwk", [r, R])   (MViT's relative positions)
//   ->  matmul(r.permute(3, 0, 1, 2, 4, 5).flatten(1, 4), R.permute(0, 2, 1))
//         .unflatten(1, [r.size(0), r.size(1), r.size(2), r.size(4)]).permute(1, 2, 3, 0, 4, 5)
//
// A leading `...` (batch dims matmul broadcasts) is allowed on the operands when the output
// starts with one too; operands that have it are reordered with movedim on their trailing dims.
// Anything else (sums over an index of one operand, diagonals, `...` elsewhere, more operands)
// stays ATen's einsum.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// One term of an equation: its index letters, and whether a `...` comes before them.
struct Term {
  std::string letters;
  bool leading_ellipsis = false;
};

// The indices of a two-operand einsum, grouped the way one matmul reads them.
struct MatmulForm {
  Term a, b, out;
  std::string batch;      // in both operands and the output
  std::string left_free;  // in `a` and the output only
  std::string right_free; // in `b` and the output only
  std::string contracted; // in both operands, not in the output
};

bool hasRepeats(const std::string& s) {
  std::string sorted = s;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
}

std::optional<Term> parseTerm(const std::string& text) {
  Term term;
  term.leading_ellipsis = text.rfind("...", 0) == 0;
  term.letters = term.leading_ellipsis ? text.substr(3) : text;
  const bool letters_only = std::all_of(term.letters.begin(), term.letters.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
  if (!letters_only || hasRepeats(term.letters)) {
    return std::nullopt; // diagonals, `...` after an index
  }
  return term;
}

bool has(const std::string& term, char letter) {
  return term.find(letter) != std::string::npos;
}

std::optional<MatmulForm> matmulForm(std::string equation) {
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const size_t comma = equation.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow ||
      equation.find(',', comma + 1) != std::string::npos) {
    return std::nullopt; // implicit output, one operand or more than two
  }
  const std::optional<Term> a = parseTerm(equation.substr(0, comma));
  const std::optional<Term> b = parseTerm(equation.substr(comma + 1, arrow - comma - 1));
  const std::optional<Term> out = parseTerm(equation.substr(arrow + 2));
  if (!a || !b || !out || out->leading_ellipsis != (a->leading_ellipsis || b->leading_ellipsis)) {
    return std::nullopt; // a sum over the `...` dims, or ATen's error
  }
  MatmulForm form{*a, *b, *out, "", "", "", ""};
  for (char letter : out->letters) {
    const bool in_a = has(a->letters, letter);
    const bool in_b = has(b->letters, letter);
    if (!in_a && !in_b) {
      return std::nullopt; // ATen reports it
    }
    (in_a && in_b ? form.batch : in_a ? form.left_free : form.right_free) += letter;
  }
  for (char letter : a->letters) {
    if (!has(out->letters, letter)) {
      if (!has(b->letters, letter)) {
        return std::nullopt; // summed over in one operand only
      }
      form.contracted += letter;
    }
  }
  for (char letter : b->letters) {
    if (!has(out->letters, letter) && !has(a->letters, letter)) {
      return std::nullopt;
    }
  }
  return form;
}

// `value`, whose trailing dims are indexed by `from`, with them in the order of `to` (the same
// letters): a permute where `term` has no `...` (so the later passes see transposes), else a
// movedim of the trailing dims.
Value* reordered(Graph& graph, Value* value, const Term& from, const std::string& to) {
  const auto rank = static_cast<int64_t>(from.letters.size());
  std::vector<int64_t> source;
  bool identity = true;
  for (size_t i = 0; i < to.size(); ++i) {
    const auto position = static_cast<int64_t>(from.letters.find(to[i]));
    identity &= position == static_cast<int64_t>(i);
    source.push_back(position);
  }
  if (identity) {
    return value;
  }
  if (!from.leading_ellipsis) {
    return graph.insert(c10::aten::permute, {value, c10::IValue(source)});
  }
  std::vector<int64_t> destination;
  for (int64_t i = 0; i < rank; ++i) {
    source[i] -= rank;
    destination.push_back(i - rank);
  }
  return graph.insert(c10::Symbol::fromQualString("aten::movedim"),
                      {value, c10::IValue(source), c10::IValue(destination)});
}

// `value` with its last `count` dims flattened into one (a dim of one added when `count` is 0),
// after which `after` more dims follow.
Value* mergedDims(Graph& graph, Value* value, int64_t count, int64_t after) {
  const int64_t last = -1 - after;
  if (count == 0) {
    return graph.insert(c10::aten::unsqueeze, {value, last});
  }
  if (count == 1) {
    return value;
  }
  return graph.insert(c10::aten::flatten, {value, last - count + 1, last});
}

// `value` with dim `dim` (negative) unflattened into the sizes of `letters` in `term`'s operand
// `operand` (a dim of one removed when there are none).
Value* unflattenedDim(Graph& graph, Value* value, int64_t dim, const std::string& letters,
                      const Term& term, Value* operand) {
  if (letters.empty()) {
    return graph.insert(c10::aten::squeeze, {value, dim});
  }
  if (letters.size() == 1) {
    return value;
  }
  std::vector<Value*> sizes;
  const auto rank = static_cast<int64_t>(term.letters.size());
  for (char letter : letters) {
    const auto position = static_cast<int64_t>(term.letters.find(letter)) - rank;
    sizes.push_back(graph.insert(c10::aten::size, {operand, position}));
  }
  Value* list = graph.insertNode(graph.createList(c10::IntType::get(), sizes))->output();
  return graph.insert(c10::Symbol::fromQualString("aten::unflatten"), {value, dim, list});
}

Value* lowered(Graph& graph, const MatmulForm& form, Value* a, Value* b) {
  const std::string& m = form.left_free;
  const std::string& n = form.right_free;
  const std::string& k = form.contracted;
  const auto m_dims = static_cast<int64_t>(m.size());
  const auto n_dims = static_cast<int64_t>(n.size());
  const auto k_dims = static_cast<int64_t>(k.size());
  Value* left = reordered(graph, a, form.a, form.batch + m + k);
  left = mergedDims(graph, left, k_dims, 0);
  left = mergedDims(graph, left, m_dims, 1);
  Value* right = reordered(graph, b, form.b, form.batch + k + n);
  right = mergedDims(graph, right, n_dims, 0);
  right = mergedDims(graph, right, k_dims, 1);
  Value* product = graph.insert(c10::aten::matmul, {left, right});
  product = unflattenedDim(graph, product, -1, n, form.b, b);
  product = unflattenedDim(graph, product, -1 - n_dims, m, form.a, a);
  const Term computed{form.batch + m + n, form.out.leading_ellipsis};
  return reordered(graph, product, computed, form.out.letters);
}

} // namespace

bool lowerEinsums(GraphPtr& graph) {
  const std::vector<Node*> einsums =
      nodesWhere(graph->block(), [](Node* node) { return node->kind() == c10::aten::einsum; });
  bool changed = false;
  for (Node* node : einsums) {
    if (!node->matches("aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> "
                       "Tensor") ||
        !node->input(2)->type()->cast<c10::NoneType>()) {
      continue;
    }
    const c10::optional<std::string> equation =
        torch::jit::constant_as<std::string>(node->input(0));
    const Node* list = node->input(1)->node();
    if (!equation || list->kind() != c10::prim::ListConstruct || list->inputs().size() != 2) {
      continue;
    }
    const std::optional<MatmulForm> form = matmulForm(*equation);
    if (!form) {
      continue;
    }
    torch::jit::WithInsertPoint guard(node);
    Value* result = lowered(*graph, *form, list->input(0), list->input(1));
    node->output()->replaceAllUsesWith(result);
    node->destroy();
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
