// Linear layers with a constant weight (aten::linear, srt::fused_linear) become
// srt::fused_linear.packed, and srt::multi_head_attention srt::multi_head_attention.packed, whose
// weight input is one constant holding the weight already packed
// for oneDNN's matmul (ops/gemm/packed_linear.h). The plain weight constants then have no use
// left and the dead-code pass drops them: a module holds its linear weights once, as ONNX
// Runtime does after pre-packing (vit_b_16: 330 MB, not 660). Runs for the oneDNN GEMM backend
// only (StaticModuleOptions::passesToSkip).
#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/Functions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/gemm/packed_linear.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const c10::Symbol kLinear = c10::Symbol::fromQualString("aten::linear");
const c10::Symbol kFusedLinear = c10::Symbol::fromQualString("srt::fused_linear");
// Its QKV projection's weight is an input like linear's weight ([3 * d_model, d_in]).
const c10::Symbol kMultiHeadAttention = c10::Symbol::fromQualString("srt::multi_head_attention");

bool readsALinearWeight(Node* node) {
  return node->kind() == kLinear || node->kind() == kFusedLinear ||
         node->kind() == kMultiHeadAttention;
}

// The node's weight when it is a constant float32 matrix (and not already packed).
std::optional<at::Tensor> packableWeight(const Node* node) {
  const auto weight = torch::jit::toIValue(node->input(1));
  if (!weight || !weight->isTensor()) {
    return std::nullopt;
  }
  const at::Tensor& w = weight->toTensor();
  if (w.dim() != 2 || w.scalar_type() != at::kFloat || !w.is_cpu() || w.numel() == 0) {
    return std::nullopt;
  }
  return w;
}

// Whether two weights hold the same values: the same memory, or equal copies (freezing and
// constant propagation may give each use of one parameter its own tensor).
bool sameWeight(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) {
    return false;
  }
  if (a.data_ptr() == b.data_ptr() && a.strides() == b.strides()) {
    return true;
  }
  if (a.is_contiguous() && b.is_contiguous()) { // stops at the first difference
    return std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
  }
  return at::equal(a, b);
}

void replaceWithPacked(torch::jit::Graph& graph, Node* node,
                       const c10::intrusive_ptr<ops::PackedLinearWeight>& packed) {
  torch::jit::WithInsertPoint insert(node);
  std::vector<Value*> inputs = {node->input(0), graph.insertConstant(c10::IValue(packed)),
                                node->input(2)};
  // srt::fused_linear's activation, residual, alpha and residual_first, or attention's heads,
  // mask and flags, as they are.
  if (node->kind() != kLinear) {
    for (size_t i = 3; i < node->inputs().size(); ++i) {
      inputs.push_back(node->input(i));
    }
  } else {
    inputs.push_back(graph.insertConstant(std::string("none")));
    inputs.push_back(graph.insertConstant(c10::IValue()));
    inputs.push_back(graph.insertConstant(c10::Scalar(int64_t{1})));
    inputs.push_back(graph.insertConstant(false));
  }
  const c10::Symbol kind = node->kind() == kLinear ? kFusedLinear : node->kind();
  Node* packed_node = graph.insertNode(graph.create(kind, inputs, 1));
  packed_node->copyMetadata(node); // source range, inlined call stack, scope: for error messages
  packed_node->output()->copyMetadata(node->output());
  node->output()->replaceAllUsesWith(packed_node->output());
  node->destroy();
}

} // namespace

bool packLinearWeights(GraphPtr& graph) {
  const std::vector<Node*> nodes = nodesWhere(graph->block(), readsALinearWeight);
  // Layers that share a weight (tied embeddings, a layer applied twice) share its packed copy.
  std::vector<std::pair<at::Tensor, c10::intrusive_ptr<ops::PackedLinearWeight>>> packed;
  bool changed = false;
  for (Node* node : nodes) {
    const std::optional<at::Tensor> weight = packableWeight(node);
    if (!weight) {
      continue;
    }
    auto same = std::find_if(packed.begin(), packed.end(),
                             [&](const auto& entry) { return sameWeight(entry.first, *weight); });
    if (same == packed.end()) {
      same = packed.emplace(packed.end(), *weight, ops::packLinearWeightConstant(*weight));
    }
    if (same->second) {
      replaceWithPacked(*graph, node, same->second);
      changed = true;
    }
  }
  return changed;
}

} // namespace srt::passes
