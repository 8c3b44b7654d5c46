// rank_folding: aten::dim(t) and len(t.size()) become constants where the graph fixes t's rank
// (shape_facts' derivedRank: through views, linears, cat, broadcasting ops; never from an assert
// on t itself, which would vouch for its own check), and a comparison of such a rank with a
// number becomes one where t's possible ranks decide it (shape_facts' rankRange: a 2-D
// convolution's output is 3-D or 4-D, whatever the graph's input is); then LibTorch's constant
// propagation folds what depended on them: torchvision's `torch._assert(x.dim() == 3, f"...
// {x.shape}")` in every ViT encoder block, whose message is otherwise formatted from the shape on
// every call, and the `len(x.size()) > 2` check of every F.adaptive_avg_pool2d (a classifier's
// pooling, each squeeze-excitation block's: four nodes a call each). A check an earlier assert on
// the same tensor settles folds too: after `if x.dim() != 4: raise` in the graph's top-level
// block, x.dim() is 4 for every node below (DenseNet's BatchNorm checks each concatenation twice,
// and once more the convolution's output, whose rank is its input's: 58 checks of 3 nodes).
#include <optional>
#include <unordered_map>
#include <utility>
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
namespace {

using torch::jit::Node;
using torch::jit::Value;

// What comparison `node` of a rank with a number gives whenever it runs, if t's possible ranks
// decide it.
std::optional<bool> decidedComparison(const Node* node) {
  static const char* const kSchemas[] = {
      "aten::eq.int(int a, int b) -> bool", "aten::ne.int(int a, int b) -> bool",
      "aten::lt.int(int a, int b) -> bool", "aten::le.int(int a, int b) -> bool",
      "aten::gt.int(int a, int b) -> bool", "aten::ge.int(int a, int b) -> bool"};
  bool is_comparison = false;
  for (const char* schema : kSchemas) {
    is_comparison = is_comparison || node->matches(schema);
  }
  if (!is_comparison) {
    return std::nullopt;
  }
  // rank <op> number, or number <op> rank read the other way round.
  const Value* tensor = rankedTensor(node->input(0));
  std::optional<int64_t> number = knownInt(node->input(1));
  bool swapped = false;
  if (tensor == nullptr) {
    tensor = rankedTensor(node->input(1));
    number = knownInt(node->input(0));
    swapped = true;
  }
  if (tensor == nullptr || !number) {
    return std::nullopt;
  }
  const std::optional<RankRange> range = rankRange(tensor);
  if (!range) {
    return std::nullopt;
  }
  const c10::Symbol kind = node->kind();
  // Whether every rank in the range satisfies `rank <op> number` (always), and whether none does.
  auto holds = [&](int64_t rank) {
    const int64_t a = swapped ? *number : rank;
    const int64_t b = swapped ? rank : *number;
    if (kind == c10::aten::eq) {
      return a == b;
    }
    if (kind == c10::aten::ne) {
      return a != b;
    }
    if (kind == c10::aten::lt) {
      return a < b;
    }
    if (kind == c10::aten::le) {
      return a <= b;
    }
    if (kind == c10::aten::gt) {
      return a > b;
    }
    return a >= b;
  };
  bool always = true;
  bool never = true;
  for (int64_t rank = range->min; rank <= range->max; ++rank) {
    always = always && holds(rank);
    never = never && !holds(rank);
  }
  if (always) {
    return true;
  }
  if (never) {
    return false;
  }
  return std::nullopt;
}

} // namespace

bool foldKnownRanks(GraphPtr& graph) {
  // Every rank query and comparison, collected first: replacing outputs does not move nodes, and
  // the dead ones are dropped by the dead-code pass below.
  const std::vector<Node*> queries =
      nodesWhere(graph->block(), [](Node* node) { return node->outputs().size() == 1; });
  bool changed = false;
  // Ranks the top-level block's asserts settle for the nodes after them (a nested block's node
  // runs where its top-level node stands).
  std::unordered_map<const Node*, size_t> position; // of the top-level nodes
  std::unordered_map<const Value*, std::pair<size_t, int64_t>>
      asserted; // first assert: where, rank
  for (Node* node : graph->block()->nodes()) {
    const size_t here = position.size();
    position[node] = here;
    if (const std::optional<RankAssertion> settled = rankAssertion(node)) {
      asserted.emplace(settled->tensor, std::make_pair(here, settled->rank));
    }
  }
  // The rank an assert above `node` settles for `tensor`, or for a tensor it has the rank of.
  auto assertedRank = [&](const Node* node, const Value* tensor) -> std::optional<int64_t> {
    while (node->owningBlock() != graph->block()) {
      node = node->owningBlock()->owningNode();
    }
    for (const Value* source = tensor; source != nullptr; source = sameRankInput(source)) {
      const auto fact = asserted.find(source);
      if (fact != asserted.end() && position.at(node) > fact->second.first) {
        return fact->second.second;
      }
    }
    return std::nullopt;
  };
  for (Node* node : queries) {
    if (!node->output()->hasUses()) {
      continue;
    }
    std::optional<c10::IValue> folded;
    if (const Value* tensor = rankedTensor(node->output())) {
      if (const std::optional<int64_t> rank = derivedRank(tensor)) {
        folded = *rank;
      } else if (const std::optional<int64_t> settled = assertedRank(node, tensor)) {
        folded = *settled;
      }
    } else if (const std::optional<bool> decided = decidedComparison(node)) {
      folded = *decided;
    }
    if (folded) {
      torch::jit::WithInsertPoint guard(node);
      node->output()->replaceAllUsesWith(graph->insertConstant(*folded));
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
