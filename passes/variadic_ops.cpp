// variadic_cat_stack: aten::cat / aten::stack of a list built only for them take the list's
// tensors as their own inputs (srt::variadic_cat / srt::variadic_stack, ops/variadic_ops.cpp):
//
//   %l = prim::ListConstruct(%a, %b, %c)          %y = srt::variadic_cat(%a, %b, %c, %dim)
//   %y = aten::cat(%l, %dim)                ->
//
// so no list is allocated and filled every run. Only when the cat/stack is the list's one user:
// a list used elsewhere (appended to, returned, read again) must still exist.
#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;

struct Replacement {
  Node* node;
  c10::Symbol variadic_kind;
};

void collect(Block* block, std::vector<Replacement>& replacements) {
  static const c10::Symbol variadic_cat = c10::Symbol::fromQualString("srt::variadic_cat");
  static const c10::Symbol variadic_stack = c10::Symbol::fromQualString("srt::variadic_stack");
  for (Node* node : block->nodes()) {
    for (Block* sub_block : node->blocks()) {
      collect(sub_block, replacements);
    }
    c10::Symbol variadic_kind;
    if (node->matches("aten::cat(Tensor[] tensors, int dim=0) -> Tensor")) {
      variadic_kind = variadic_cat;
    } else if (node->matches("aten::stack(Tensor[] tensors, int dim=0) -> Tensor")) {
      variadic_kind = variadic_stack;
    } else {
      continue;
    }
    const Node* list = node->input(0)->node();
    if (list->kind() != c10::prim::ListConstruct || list->inputs().empty() ||
        node->input(0)->uses().size() != 1) {
      continue;
    }
    replacements.push_back({node, variadic_kind});
  }
}

} // namespace

bool useVariadicCatStack(GraphPtr& graph) {
  std::vector<Replacement> replacements;
  collect(graph->block(), replacements);
  for (const Replacement& replacement : replacements) {
    Node* node = replacement.node;
    Node* list = node->input(0)->node();
    Node* variadic = graph->create(replacement.variadic_kind, list->inputs(), 1);
    variadic->addInput(node->input(1));
    variadic->insertBefore(node);
    variadic->output()->copyMetadata(node->output());
    node->output()->replaceAllUsesWith(variadic->output());
    node->destroy();
    list->destroy();
  }
  return !replacements.empty();
}

} // namespace srt::passes
