// rank_folding: aten::dim(t) becomes a constant where the graph fixes t's rank (shape_facts'
// derivedRank: through views, linears, cat, broadcasting ops; never from an assert on t itself,
// which would vouch for its own check), then LibTorch's constant propagation folds what depended
// on it: torchvision's `torch._assert(x.dim() == 3, f"... {x.shape}")` in every ViT encoder block,
// whose message is otherwise formatted from the shape on every call.
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/rewrite_safety.h"
#include "passes/shape_facts.h"

namespace srt::passes {
bool foldKnownRanks(GraphPtr& graph) {
  const std::vector<torch::jit::Node*> dims =
      nodesWhere(graph->block(), [](torch::jit::Node* node) {
        return node->matches("aten::dim(Tensor self) -> int");
      });
  bool changed = false;
  for (torch::jit::Node* dim : dims) {
    if (const std::optional<int64_t> rank = derivedRank(dim->input(0))) {
      torch::jit::WithInsertPoint guard(dim);
      dim->output()->replaceAllUsesWith(graph->insertConstant(*rank));
      dim->destroy();
      changed = true;
    }
  }
  if (changed) {
    torch::jit::ConstantPropagation(graph);
    torch::jit::EliminateDeadCode(graph);
  }
  return changed;
}

} // namespace srt::passes
