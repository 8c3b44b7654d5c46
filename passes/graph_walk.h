// Walking every node of a graph, its If and Loop blocks included: the one walk the passes share.
#pragma once

#include <vector>

#include <torch/csrc/jit/ir/ir.h>

namespace srt::passes {

// Calls visit(node) for every node of `block` and of the blocks nested in it, in program order,
// a node's blocks before the node itself. The next node is read before visit runs, so visit may
// replace or destroy the node it is given and insert nodes before it (those are not visited);
// it must not destroy any other node.
template <typename Visit> void forEachNode(torch::jit::Block* block, const Visit& visit) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* node = *it++;
    for (torch::jit::Block* sub_block : node->blocks()) {
      forEachNode(sub_block, visit);
    }
    visit(node);
  }
}

// The nodes of `block` and of the blocks nested in it for which `wanted(node)` holds, in the
// order forEachNode visits them: the candidates a pass collects before it rewrites any.
template <typename Predicate>
std::vector<torch::jit::Node*> nodesWhere(torch::jit::Block* block, const Predicate& wanted) {
  std::vector<torch::jit::Node*> nodes;
  forEachNode(block, [&](torch::jit::Node* node) {
    if (wanted(node)) {
      nodes.push_back(node);
    }
  });
  return nodes;
}

} // namespace srt::passes
