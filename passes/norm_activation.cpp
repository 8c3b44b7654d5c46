// A normalization followed by an activation becomes one node that applies the activation to
// each slice of its output right after normalizing it, while it is in cache (the matcher only
// matches when the normalized value has no other use):
//  - group_norm -> srt::group_norm_activation (ops/normalization/group_norm.cpp): GroupNorm + SiLU
//    in diffusion U-Nets, GroupNorm + GELU in wav2vec2's feature extractor (a [512, 3199] tensor
//    whose separate GELU took 2.2 of its 100 ms);
//  - eval-mode batch_norm -> srt::batch_norm_activation (ops/normalization/batch_norm.cpp): the
//    BatchNorm + ReLU that pre-activation networks run before each convolution, where
//    conv_bn_folding has no convolution before it to fold into (DenseNet's on every
//    concatenation, 62 of them in densenet121, each a pass of its own over the tensor); where
//    the normalized value is a concatenation (DenseNet's features), the two are one
//    srt::cat_batch_norm_activation.
#include <string>
#include <unordered_map>

#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

constexpr const char* kFamily = "norm_activation";

// group_norm then `activation_ir` (which reads %y and defines %r) as group_norm_activation(...,
// name).
FusionPattern groupNormThen(const std::string& name, const std::string& activation_ir,
                            const std::string& extra_inputs = "", FusionFilter filter = {}) {
  return {"group_norm + " + name,
          "graph(%input, %groups, %weight, %bias, %eps, %cudnn" + extra_inputs + R"IR():
  %y = aten::group_norm(%input, %groups, %weight, %bias, %eps, %cudnn)
  )IR" + activation_ir +
              R"IR(
  return (%r))IR",
          "graph(%input, %groups, %weight, %bias, %eps, %cudnn" + extra_inputs + R"IR():
  %activation : str = prim::Constant[value=")IR" +
              name + R"IR("]()
  %r = srt::group_norm_activation(%input, %groups, %weight, %bias, %eps, %activation)
  return (%r))IR",
          std::move(filter)};
}

SRT_REGISTER_FUSION_PATTERN(kFamily, {groupNormThen("relu", "%r = aten::relu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {groupNormThen("sigmoid", "%r = aten::sigmoid(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {groupNormThen("tanh", "%r = aten::tanh(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {groupNormThen("silu", "%r = aten::silu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {groupNormThen("gelu", "%r = aten::gelu(%y, %approximate)",
                                                    ", %approximate",
                                                    constantStringIs("approximate", "none"))});
SRT_REGISTER_FUSION_PATTERN(kFamily,
                            {groupNormThen("gelu_tanh", "%r = aten::gelu(%y, %approximate)",
                                           ", %approximate",
                                           constantStringIs("approximate", "tanh"))});

// Eval-mode batch_norm (training a constant False, running statistics given) then
// `activation_ir` as batch_norm_activation(..., name).
FusionPattern batchNormThen(const std::string& name, const std::string& activation_ir,
                            const std::string& extra_inputs = "", FusionFilter filter = {}) {
  FusionFilter eval_mode = [filter, training = constantBoolIs("training", false)](
                               const torch::jit::Match& match,
                               const std::unordered_map<std::string, torch::jit::Value*>& values) {
    for (const char* statistic : {"mean", "var"}) {
      if (match.values_map.at(values.at(statistic))->type()->kind() != c10::TypeKind::TensorType) {
        return false;
      }
    }
    return training(match, values) && (!filter || filter(match, values));
  };
  return {"batch_norm + " + name,
          "graph(%input, %weight, %bias, %mean, %var, %training, %momentum, %eps, %cudnn" +
              extra_inputs + R"IR():
  %y = aten::batch_norm(%input, %weight, %bias, %mean, %var, %training, %momentum, %eps, %cudnn)
  )IR" + activation_ir +
              R"IR(
  return (%r))IR",
          "graph(%input, %weight, %bias, %mean, %var, %training, %momentum, %eps, %cudnn" +
              extra_inputs + R"IR():
  %activation : str = prim::Constant[value=")IR" +
              name + R"IR("]()
  %r = srt::batch_norm_activation(%input, %weight, %bias, %mean, %var, %eps, %activation)
  return (%r))IR",
          std::move(eval_mode)};
}

SRT_REGISTER_FUSION_PATTERN(kFamily, {batchNormThen("relu", "%r = aten::relu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {batchNormThen("sigmoid", "%r = aten::sigmoid(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {batchNormThen("tanh", "%r = aten::tanh(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {batchNormThen("silu", "%r = aten::silu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {batchNormThen("gelu", "%r = aten::gelu(%y, %approximate)",
                                                    ", %approximate",
                                                    constantStringIs("approximate", "none"))});
SRT_REGISTER_FUSION_PATTERN(kFamily,
                            {batchNormThen("gelu_tanh", "%r = aten::gelu(%y, %approximate)",
                                           ", %approximate",
                                           constantStringIs("approximate", "tanh"))});

} // namespace

namespace {

using torch::jit::Node;
using torch::jit::Value;

// Values the fused node can read where the concatenation was: constants and the graph's inputs.
bool availableEverywhere(const Value* value) {
  return value->node()->kind() == c10::prim::Constant || value->node()->kind() == c10::prim::Param;
}

// batch_norm_activation(cat(tensors, dim), ...) -> cat_batch_norm_activation(tensors, dim, ...),
// where the concatenation has no other reader but rank queries (a BatchNorm2d's check, which then
// reads the fused node's result: the same rank). The fused node takes the concatenation's place,
// before the check, reading the list as the concatenation did (DenseNet appends to it after).
bool fuseConcatenations(GraphPtr& graph) {
  const c10::Symbol batch_norm_activation =
      c10::Symbol::fromQualString("srt::batch_norm_activation");
  const std::vector<Node*> norms = nodesWhere(graph->block(), [&](Node* node) {
    return node->kind() == batch_norm_activation &&
           node->input(0)->node()->matches("aten::cat(Tensor[] tensors, int dim=0) -> Tensor");
  });
  bool changed = false;
  for (Node* norm : norms) {
    Node* cat = norm->input(0)->node();
    bool fusable = cat->owningBlock() == norm->owningBlock();
    for (const torch::jit::Use& use : cat->output()->uses()) {
      fusable &= use.user == norm || use.user->matches("aten::dim(Tensor self) -> int");
    }
    for (size_t i = 1; i < norm->inputs().size(); ++i) {
      fusable &= availableEverywhere(norm->input(i));
    }
    if (!fusable) {
      continue;
    }
    // The pattern's activation name is a constant it put just before the normalization.
    for (size_t i = 1; i < norm->inputs().size(); ++i) {
      Node* producer = norm->input(i)->node();
      if (producer->kind() == c10::prim::Constant &&
          producer->owningBlock() == cat->owningBlock() && !producer->isBefore(cat)) {
        producer->moveBefore(cat);
      }
    }
    torch::jit::WithInsertPoint insert(cat);
    std::vector<Value*> inputs = {cat->input(0), cat->input(1)};
    inputs.insert(inputs.end(), norm->inputs().begin() + 1, norm->inputs().end());
    Node* fused = graph->insertNode(
        graph->create(c10::Symbol::fromQualString("srt::cat_batch_norm_activation"), inputs));
    fused->output()->setType(norm->output()->type());
    fused->setSourceRange(norm->sourceRange());
    norm->output()->replaceAllUsesWith(fused->output());
    cat->output()->replaceAllUsesWith(fused->output());
    norm->destroy();
    cat->destroy();
    changed = true;
  }
  return changed;
}

} // namespace

bool fuseNormActivation(GraphPtr& graph) {
  const bool fused = applyFusionPatterns(kFamily, graph);
  return fuseConcatenations(graph) || fused;
}

} // namespace srt::passes
