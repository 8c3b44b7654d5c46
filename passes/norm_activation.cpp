// group_norm followed by an activation becomes one srt::group_norm_activation node
// (ops/normalization/group_norm.cpp), which applies the activation to each slice of its output
// right after normalizing it, while it is in cache: GroupNorm + SiLU in diffusion U-Nets,
// GroupNorm + GELU in wav2vec2's feature extractor (a [512, 3199] tensor whose separate GELU took
// 2.2 of its 100 ms). The matcher only matches when the normalized value has no other use.
#include <string>

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

} // namespace

bool fuseNormActivation(GraphPtr& graph) {
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
