// size_folding: aten::size(t, d) becomes a constant where the graph fixes that size (shape_facts'
// knownSize: from the constant weights t meets, views and the ops between), then constants
// propagate through what depended on it. nn.MultiheadAttention's cross-attention (every
// nn.TransformerDecoderLayer's second attention) splits its constant in_proj_weight by
// `E = query.size(-1)` on every call: with E known, the pieces are constants, so the query and
// key/value projections get packed weights instead of unpacked splits of one. There E is known
// only where the projection `linear(query, w_q)` reads query, in the branch taken when query is
// not key: the uses of E in that branch take the constant (lastSizeReadIn).
//
// Where the fact comes from a reader (x.size(-1) == W.size(1) for linear(x, W), which runs
// wherever the folded use does), an input of another size made the original graph raise and
// makes the folded one raise too (perhaps with another message): results are the same for every
// input the model accepts.
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/shape_facts.h"

namespace srt::passes {
namespace {} // namespace

bool foldKnownSizes(GraphPtr& graph) {
  const std::vector<torch::jit::Node*> sizes =
      nodesWhere(graph->block(), [](torch::jit::Node* node) {
        return node->matches("aten::size.int(Tensor self, int dim) -> int");
      });
  bool changed = false;
  for (torch::jit::Node* size : sizes) {
    const auto dim = torch::jit::constant_as<int64_t>(size->input(1));
    if (!dim) {
      continue;
    }
    if (const std::optional<int64_t> known = knownSize(size->input(0), *dim)) {
      torch::jit::WithInsertPoint guard(size);
      size->output()->replaceAllUsesWith(graph->insertConstant(*known));
      size->destroy();
      changed = true;
      continue;
    }
    if (*dim != -1) {
      continue;
    }
    // Read where a linear fixes it: each use in such a block takes the constant.
    const std::vector<torch::jit::Use> uses = size->output()->uses();
    for (const torch::jit::Use& use : uses) {
      torch::jit::Block* block = use.user->owningBlock();
      if (const std::optional<int64_t> last = lastSizeReadIn(size->input(0), block)) {
        torch::jit::WithInsertPoint guard(use.user);
        use.user->replaceInput(use.offset, graph->insertConstant(*last));
        changed = true;
      }
    }
  }
  if (changed) {
    torch::jit::ConstantPropagation(graph);
    foldConstants(graph); // splits of constant weights: lists of tensors ConstantPropagation keeps
    torch::jit::EliminateDeadCode(graph);
  }
  return changed;
}

} // namespace srt::passes
