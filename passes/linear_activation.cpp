// aten::linear followed by an activation becomes one srt::fused_linear node (ops/fused_gemm.cpp),
// which applies the activation to the GEMM's output while it is still in cache (oneDNN post-op, or
// one vectorized pass right after the GEMM). The pattern matcher only matches when the linear's
// output has no other use: a pre-activation value needed elsewhere stays unfused.
#include <string>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

constexpr const char* kFamily = "linear_activation";

// linear then `activation_ir` (which reads %y and defines %r) as fused_linear(..., name).
FusionPattern linearThen(const std::string& name, const std::string& activation_ir,
                         const std::string& extra_inputs = "", FusionFilter filter = {}) {
  return {"linear + " + name, "graph(%input, %weight, %bias" + extra_inputs + R"IR():
  %y = aten::linear(%input, %weight, %bias)
  )IR" + activation_ir + R"IR(
  return (%r))IR",
          "graph(%input, %weight, %bias" + extra_inputs + R"IR():
  %activation : str = prim::Constant[value=")IR" +
              name + R"IR("]()
  %residual : NoneType = prim::Constant()
  %alpha : int = prim::Constant[value=1]()
  %residual_first : bool = prim::Constant[value=0]()
  %r = srt::fused_linear(%input, %weight, %bias, %activation, %residual, %alpha, %residual_first)
  return (%r))IR",
          std::move(filter)};
}

// gelu's `approximate` is an argument: each mode is its own pattern, taken only when constant.
FusionFilter approximateIs(const std::string& mode) {
  return [mode](const torch::jit::Match& match,
                const std::unordered_map<std::string, torch::jit::Value*>& values) {
    // `values` names the pattern's values; the match maps them to the graph's.
    const auto approximate =
        torch::jit::constant_as<std::string>(match.values_map.at(values.at("approximate")));
    return approximate && *approximate == mode;
  };
}

SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("relu", "%r = aten::relu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("sigmoid", "%r = aten::sigmoid(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("tanh", "%r = aten::tanh(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("silu", "%r = aten::silu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("gelu", "%r = aten::gelu(%y, %approximate)",
                                                 ", %approximate", approximateIs("none"))});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("gelu_tanh", "%r = aten::gelu(%y, %approximate)",
                                                 ", %approximate", approximateIs("tanh"))});

} // namespace

bool fuseLinearActivation(GraphPtr& graph) {
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
