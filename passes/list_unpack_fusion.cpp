// list_unpack_fusion: a chunk / split / unbind whose list is only unpacked becomes one node with
// one output per piece (ops/shapes/list_unpack.cpp):
//
//   %l = aten::chunk(%x, %chunks, %dim)
//   %a, %b, %c = prim::ListUnpack(%l)      ->    %a, %b, %c = srt::chunk_unpack_3(%x, %chunks,
//   %dim)
//
// The pieces are the same views as before, and the fused operator's schema says each aliases %x,
// so nothing about aliasing changes; the list is gone. A list with any other user (returned,
// indexed, appended to) stays as it is.
#include <torch/csrc/jit/ir/ir.h>

#include "ops/shapes/list_unpack.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;

// The family name of ops/shapes/list_unpack.cpp for a node producing a list of views, or nullptr.
const char* unpackFamily(const Node* node) {
  if (node->matches("aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]")) {
    return "chunk";
  }
  if (node->matches(
          "aten::split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]")) {
    return "split";
  }
  if (node->matches(
          "aten::split.sizes(Tensor(a -> *) self, int[] split_size, int dim=0) -> Tensor(a)[]") ||
      node->matches(
          "aten::split(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]") ||
      node->matches("aten::split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0) "
                    "-> Tensor(a)[]")) {
    return "split_with_sizes";
  }
  if (node->matches("aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")) {
    return "unbind";
  }
  return nullptr;
}

struct Fusion {
  Node* producer;
  Node* unpack;
  const char* family;
};

std::vector<Fusion> fusibleUnpacks(Block* block) {
  std::vector<Fusion> found;
  forEachNode(block, [&](Node* node) {
    const char* family = unpackFamily(node);
    if (family == nullptr || node->output()->uses().size() != 1) {
      return;
    }
    Node* unpack = node->output()->uses()[0].user;
    const size_t pieces = unpack->outputs().size();
    if (unpack->kind() == c10::prim::ListUnpack && unpack->owningBlock() == node->owningBlock() &&
        pieces > 0 && pieces <= ops::kMaxUnpackPieces) {
      found.push_back({node, unpack, family});
    }
  });
  return found;
}

} // namespace

bool fuseListUnpack(GraphPtr& graph) {
  const std::vector<Fusion> fusions = fusibleUnpacks(graph->block());
  for (const Fusion& fusion : fusions) {
    const size_t pieces = fusion.unpack->outputs().size();
    Node* fused =
        graph->create(c10::Symbol::fromQualString(ops::unpackOpName(fusion.family, pieces)),
                      fusion.producer->inputs(), pieces);
    fused->insertBefore(fusion.producer);
    for (size_t i = 0; i < pieces; ++i) {
      fused->output(i)->copyMetadata(fusion.unpack->output(i));
      fusion.unpack->output(i)->replaceAllUsesWith(fused->output(i));
    }
    fusion.unpack->destroy();
    fusion.producer->destroy();
  }
  return !fusions.empty();
}

} // namespace srt::passes
