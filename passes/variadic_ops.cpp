// variadic_cat_stack: aten::cat / aten::stack of a list built only for them take the list's
// tensors as their own inputs (srt::variadic_cat / srt::variadic_stack,
// ops/shapes/variadic_ops.cpp):
//
//   %l = prim::ListConstruct(%a, %b, %c)          %y = srt::variadic_cat(%a, %b, %c, %dim)
//   %y = aten::cat(%l, %dim)                ->
//
// so no list is allocated and filled every run. Only when every user of the list is such a
// cat/stack (common-subexpression elimination may have merged the lists of several): a list used
// otherwise (appended to, returned, read again) must still exist.
#include <algorithm>
#include <optional>

#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;

// The variadic operator replacing `node`, when it is a cat/stack reading a list as its first input.
std::optional<c10::Symbol> variadicKind(const torch::jit::Use& use) {
  if (use.offset != 0) {
    return std::nullopt;
  }
  if (use.user->matches("aten::cat(Tensor[] tensors, int dim=0) -> Tensor")) {
    return c10::Symbol::fromQualString("srt::variadic_cat");
  }
  if (use.user->matches("aten::stack(Tensor[] tensors, int dim=0) -> Tensor")) {
    return c10::Symbol::fromQualString("srt::variadic_stack");
  }
  return std::nullopt;
}

// A list of tensors read by cat and stack only.
bool onlyConcatenated(Node* node) {
  if (node->kind() != c10::prim::ListConstruct || node->inputs().empty() ||
      !node->output()->hasUses()) {
    return false;
  }
  const auto& uses = node->output()->uses();
  return std::all_of(uses.begin(), uses.end(),
                     [](const torch::jit::Use& use) { return variadicKind(use).has_value(); });
}

} // namespace

bool useVariadicCatStack(GraphPtr& graph) {
  const std::vector<Node*> lists = nodesWhere(graph->block(), onlyConcatenated);
  for (Node* list : lists) {
    // Copied: replacing a user removes its use from the list's output.
    const std::vector<torch::jit::Use> uses = list->output()->uses();
    for (const torch::jit::Use& use : uses) {
      Node* node = use.user;
      Node* variadic = graph->create(*variadicKind(use), list->inputs(), 1);
      variadic->addInput(node->input(1));
      variadic->insertBefore(node);
      variadic->output()->copyMetadata(node->output());
      node->output()->replaceAllUsesWith(variadic->output());
      node->destroy();
    }
    list->destroy();
  }
  return !lists.empty();
}

} // namespace srt::passes
