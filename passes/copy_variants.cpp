// copy_variants: views whose result is materialized anyway become copies into planned memory.
//
// A permuted tensor that reaches reshape/flatten/contiguous, or a matmul/linear that must first
// make it contiguous, is copied at run time by that reader into a fresh allocation each run;
// a reshape/flatten of a transposed tensor copies the same way. srt::permute_copy /
// reshape_copy / flatten_copy (ops/shapes/copy_variants.cpp) do that copy themselves, into a tensor
// the memory planner owns, and their result aliases nothing, so the input's memory is free once the
// copy has read it. Views whose readers take any strides (element-wise ops) stay views: copying
// those would only add work.
//
// A rewrite must not change what anyone can observe, so it is skipped when the view or its input
// is written in place (the copy would not see, or make, the write), when the result may reach
// the caller (who would get a copy instead of a view), and when a reader may look at strides.
// aten::contiguous and aten::to already run as always-copy out variants
// (ops/shapes/conversions.cpp).
#include <algorithm>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The permutation with negative dims wrapped, when it is a constant of the right length.
std::optional<std::vector<int64_t>> constantPermutation(const Node* permute) {
  auto dims = constantIntList(permute->input(1));
  if (!dims) {
    return std::nullopt;
  }
  const auto rank = static_cast<int64_t>(dims->size());
  for (int64_t& dim : *dims) {
    if (dim < -rank || dim >= rank) {
      return std::nullopt;
    }
    dim = dim < 0 ? dim + rank : dim;
  }
  return dims;
}

// matmul folds the batch dimensions into one with a reshape, which copies unless they are still
// in order; the last two may be swapped (GEMM reads transposed operands).
bool batchDimsInOrder(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i + 2 < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) {
      return false;
    }
  }
  return true;
}

bool isIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) {
      return false;
    }
  }
  return true;
}

// A transpose of the last two dims, which keeps the batch dims where they are.
bool swapsLastTwoDims(const Node* node, size_t rank) {
  if (!node->matches("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")) {
    return false;
  }
  auto dim0 = torch::jit::constant_as<int64_t>(node->input(1));
  auto dim1 = torch::jit::constant_as<int64_t>(node->input(2));
  if (!dim0 || !dim1 || rank < 2) {
    return false;
  }
  const auto wrap = [rank](int64_t dim) {
    return dim < 0 ? dim + static_cast<int64_t>(rank) : dim;
  };
  const int64_t a = std::min(wrap(*dim0), wrap(*dim1));
  const int64_t b = std::max(wrap(*dim0), wrap(*dim1));
  return a == static_cast<int64_t>(rank) - 2 && b == static_cast<int64_t>(rank) - 1;
}

// Whether `use`, reading a tensor permuted by `perm`, makes a contiguous copy of it anyway.
bool copiesPermutedInput(const torch::jit::Use& use, const std::vector<int64_t>& perm) {
  static const c10::Symbol reshape = symbol("aten::reshape");
  static const c10::Symbol flatten = symbol("aten::flatten");
  static const c10::Symbol contiguous = symbol("aten::contiguous");
  static const c10::Symbol matmul = symbol("aten::matmul");
  static const c10::Symbol linear = symbol("aten::linear");
  const Node* user = use.user;
  const c10::Symbol kind = user->kind();
  if (kind == matmul) {
    return use.offset <= 1 && !batchDimsInOrder(perm);
  }
  if (use.offset != 0) {
    return false;
  }
  if (kind == reshape || kind == flatten || kind == contiguous) {
    return true;
  }
  if (kind == linear) {
    // linear folds every leading dim into one (2-d inputs go to GEMM with any strides).
    return perm.size() > 2 && !isIdentity(perm);
  }
  if (swapsLastTwoDims(user, perm.size()) && user->output()->uses().size() == 1) {
    const Node* next = user->output()->uses()[0].user;
    return next->kind() == matmul && !batchDimsInOrder(perm);
  }
  return false;
}

// No write to the view or its input, no way to the caller, no reader of its strides.
bool copyIsUnobservable(const torch::jit::AliasDb& alias_db, torch::jit::Graph& graph, Node* view) {
  return isTopLevel(view) && !alias_db.hasInputWriters(view) && !alias_db.hasOutputWriters(view) &&
         !mayReachGraphOutput(alias_db, graph, view->output()) &&
         !layoutMayBeObserved(alias_db, view->output());
}

void replaceWith(Node* view, c10::Symbol copy_kind) {
  torch::jit::Graph& graph = *view->owningGraph();
  Node* copy = graph.create(copy_kind, view->inputs(), 1);
  copy->insertBefore(view);
  copy->output()->copyMetadata(view->output());
  view->output()->replaceAllUsesWith(copy->output());
  view->destroy();
}

// Permutes whose every reader copies them anyway.
bool replacePermutes(std::shared_ptr<torch::jit::Graph>& graph) {
  const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
  std::vector<Node*> permutes;
  for (Node* node : graph->nodes()) {
    if (!node->matches("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)")) {
      continue;
    }
    auto perm = constantPermutation(node);
    if (!perm || !node->output()->hasUses() || !copyIsUnobservable(alias_db, *graph, node)) {
      continue;
    }
    bool all_copy = true;
    for (const torch::jit::Use& use : node->output()->uses()) {
      all_copy = all_copy && copiesPermutedInput(use, *perm);
    }
    if (all_copy) {
      permutes.push_back(node);
    }
  }
  for (Node* node : permutes) {
    replaceWith(node, symbol("srt::permute_copy"));
  }
  return !permutes.empty();
}

// Reshapes and flattens of transposed tensors: reshape copies these at run time, into a fresh
// allocation.
bool replaceReshapesOfTransposes(std::shared_ptr<torch::jit::Graph>& graph) {
  static const std::vector<c10::Symbol> transposes = {symbol("aten::transpose"), symbol("aten::t"),
                                                      symbol("aten::permute")};
  const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
  std::vector<std::pair<Node*, c10::Symbol>> replacements;
  for (Node* node : graph->nodes()) {
    c10::Symbol copy_kind;
    if (node->matches("aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)")) {
      copy_kind = symbol("srt::reshape_copy");
    } else if (node->matches("aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int "
                             "end_dim=-1) -> Tensor(a)")) {
      copy_kind = symbol("srt::flatten_copy");
    } else {
      continue;
    }
    const c10::Symbol producer = node->input(0)->node()->kind();
    if (std::find(transposes.begin(), transposes.end(), producer) == transposes.end() ||
        !copyIsUnobservable(alias_db, *graph, node)) {
      continue;
    }
    replacements.emplace_back(node, copy_kind);
  }
  for (const auto& [node, copy_kind] : replacements) {
    replaceWith(node, copy_kind);
  }
  return !replacements.empty();
}

} // namespace

bool useCopyVariants(GraphPtr& graph) {
  // Permutes first: a reshape whose permuted input became a copy stays a (free) view.
  const bool permutes = replacePermutes(graph);
  const bool reshapes = replaceReshapesOfTransposes(graph);
  return permutes || reshapes;
}

} // namespace srt::passes
