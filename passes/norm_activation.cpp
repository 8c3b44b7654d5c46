// A normalization followed by an activation becomes one node that applies the activation to
// each slice of its output right after normalizing it, while it is in cache (the matcher only
// matches when the normalized value has no other use):
//  - group_norm -> srt::group_norm_activation (ops/normalization/group_norm.cpp): GroupNorm + SiLU
//    in diffusion U-Nets, GroupNorm + GELU in wav2vec2's feature extractor (a [512, 3199] tensor
//    whose separate GELU took 2.2 of its 100 ms);
//  - eval-mode batch_norm -> srt::batch_norm_activation (ops/normalization/batch_norm.cpp): the
//    BatchNorm + ReLU that pre-activation networks run before each convolution, where
//    conv_bn_folding has no convolution before it to fold into (DenseNet's on every
//    concatenation, 62 of them in densenet121, each a pass of its own over the tensor).
#include <string>
#include <unordered_map>

#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"

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

bool fuseNormActivation(GraphPtr& graph) {
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
