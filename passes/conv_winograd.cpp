// srt::packed_conv2d nodes whose convolution Winograd computes faster get their weight packed
// again, for oneDNN's Winograd (ops/conv/onednn_conv.h, packForWinograd and winogradSuits: 3x3
// stride-1 layers of at least 32 channels, no more than 128 x 128 in the weight; resnet18 26.1 ->
// 23.5 ms at 1 thread; F(2x2, 3x3) or F(4x4, 3x3) as oneDNN picks, their weights 16/9 and 4x the
// direct one's). Its results
// differ from the direct algorithm's by rounding only (the tile transforms; within 1e-5 of
// ATen's on resnet18). A pass of its own so that disabled_passes=["conv_winograd"] switches it
// off. The direct-packed constants it replaces become dead and the dead-code pass drops them:
// each weight is still held once. A call of fewer than 20x20 output pixels (batch x height x
// width) runs the direct algorithm instead, on a copy packed for it the first time one comes
// (ops/conv/onednn_conv_internal.h, winogradPays): a small image reads the larger weight for too
// few products.
#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/convolution.h"
#include "ops/conv/packed_conv.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using torch::jit::Node;

constexpr size_t kWeightInput = 1;

// The node's packed weight, when it is a constant srt::packed_conv2d weight.
c10::intrusive_ptr<ops::PackedConvWeight> constantPackedWeight(const Node* node) {
  if (node->kind() != c10::Symbol::fromQualString("srt::packed_conv2d")) {
    return {};
  }
  const auto weight = torch::jit::toIValue(node->input(kWeightInput));
  if (!weight || !weight->isCustomClass()) {
    return {};
  }
  return weight->toCustomClass<ops::PackedConvWeight>();
}

} // namespace

bool useWinogradConvolutions(GraphPtr& graph) {
  // A weight shared by several nodes is repacked once; a node whose epilogue Winograd lacks
  // keeps the direct weight.
  std::unordered_map<const ops::OneDnnConvWeight*, c10::intrusive_ptr<ops::PackedConvWeight>>
      repacked;
  std::vector<Node*> nodes(graph->nodes().begin(), graph->nodes().end());
  bool changed = false;
  for (Node* node : nodes) {
    const auto direct = constantPackedWeight(node);
    const auto epilogue = direct ? ops::constantConvEpilogue(node) : std::nullopt;
    if (!epilogue || !ops::winogradSuits(*direct->packed, *epilogue)) {
      continue;
    }
    auto& winograd = repacked[direct->packed.get()];
    if (!winograd) {
      winograd = c10::make_intrusive<ops::PackedConvWeight>(ops::packForWinograd(*direct->packed));
    }
    torch::jit::WithInsertPoint insert(node);
    node->replaceInput(kWeightInput, graph->insertConstant(c10::IValue(winograd)));
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
