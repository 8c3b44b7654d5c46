// einsum_lowering: a two-operand aten::einsum that is one batched matrix product becomes
// permutes around an aten::matmul, so it runs on the GEMM kernels (ops/gemm/) and the later
// passes see it (transpose_absorption takes a permute of the last two dims as a transpose flag,
// attention_fusion a q @ kᵀ):
//
//   einsum("bhid,bhjd->bhij", [q, k])   ->   matmul(q, k.permute(0, 1, 3, 2))
//
// Taken when every index is a batch index (in both operands and the output), a contracted one
// (in both, not in the output) or a free one (in one operand and the output), with exactly one
// contracted and one free index per operand: that is one matmul. Anything else (sums over an
// index of one operand, diagonals, `...`, more operands) stays ATen's einsum.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

struct MatmulForm {
  std::vector<int64_t> left;   // a.permute(left) is [batch..., M, K]
  std::vector<int64_t> right;  // b.permute(right) is [batch..., K, N]
  std::vector<int64_t> output; // matmul(...).permute(output) is the einsum's result
};

bool hasRepeats(const std::string& s) {
  std::string sorted = s;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
}

// Positions of `letters` in `term`.
std::vector<int64_t> positions(const std::string& letters, const std::string& term) {
  std::vector<int64_t> result;
  for (char letter : letters) {
    result.push_back(static_cast<int64_t>(term.find(letter)));
  }
  return result;
}

std::optional<MatmulForm> matmulForm(std::string equation) {
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const size_t comma = equation.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) {
    return std::nullopt; // implicit output or one operand
  }
  const std::string a = equation.substr(0, comma);
  const std::string b = equation.substr(comma + 1, arrow - comma - 1);
  const std::string out = equation.substr(arrow + 2);
  for (const std::string* term : {&a, &b, &out}) {
    const bool letters_only = std::all_of(term->begin(), term->end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    });
    if (hasRepeats(*term) || !letters_only) {
      return std::nullopt; // diagonals, `...`, a third operand
    }
  }
  std::string batch;
  std::string m;
  std::string n;
  std::string k;
  for (char letter : out) {
    const bool in_a = a.find(letter) != std::string::npos;
    const bool in_b = b.find(letter) != std::string::npos;
    if (in_a && in_b) {
      batch += letter;
    } else if (in_a) {
      m += letter;
    } else if (in_b) {
      n += letter;
    } else {
      return std::nullopt; // ATen reports it
    }
  }
  for (char letter : a) {
    if (out.find(letter) == std::string::npos) {
      if (b.find(letter) == std::string::npos) {
        return std::nullopt; // summed over in one operand only
      }
      k += letter;
    }
  }
  for (char letter : b) {
    if (out.find(letter) == std::string::npos && a.find(letter) == std::string::npos) {
      return std::nullopt;
    }
  }
  if (m.size() != 1 || n.size() != 1 || k.size() != 1) {
    return std::nullopt;
  }
  MatmulForm form;
  form.left = positions(batch + m + k, a);
  form.right = positions(batch + k + n, b);
  form.output = positions(out, batch + m + n);
  return form;
}

bool isIdentity(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) {
      return false;
    }
  }
  return true;
}

Value* permuted(torch::jit::Graph& graph, Value* value, const std::vector<int64_t>& permutation) {
  if (isIdentity(permutation)) {
    return value;
  }
  return graph.insert(c10::aten::permute, {value, c10::IValue(permutation)});
}

void collect(torch::jit::Block* block, std::vector<Node*>& einsums) {
  for (Node* node : block->nodes()) {
    for (torch::jit::Block* sub_block : node->blocks()) {
      collect(sub_block, einsums);
    }
    if (node->kind() == c10::aten::einsum) {
      einsums.push_back(node);
    }
  }
}

} // namespace

bool lowerEinsums(GraphPtr& graph) {
  std::vector<Node*> einsums;
  collect(graph->block(), einsums);
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
    Value* a = permuted(*graph, list->input(0), form->left);
    Value* b = permuted(*graph, list->input(1), form->right);
    Value* product = graph->insert(c10::aten::matmul, {a, b});
    Value* result = permuted(*graph, product, form->output);
    node->output()->replaceAllUsesWith(result);
    node->destroy();
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
