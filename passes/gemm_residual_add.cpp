// A linear whose output is added to a residual (`x + self.out_proj(context)`) becomes one
// srt::fused_linear with that residual: oneDNN accumulates onto it with a sum post-op, the other
// backends add it in the pass over the output that follows the GEMM. Either operand order and
// aten::add's alpha are kept exactly (the node records which operand alpha scales). Runs after
// linear_activation, so linear + activation + residual is one node too. The matcher only matches
// when the linear's (or the activation's) output has no other use.
#include <string>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

constexpr const char* kFamily = "gemm_residual_add";

using Values = std::unordered_map<std::string, torch::jit::Value*>;

// The graph's value for the pattern's value `name` (`values` names the pattern's values).
const torch::jit::Value* matched(const torch::jit::Match& match, const Values& values,
                                 const std::string& name) {
  return match.values_map.at(values.at(name));
}

// add.Tensor, not add.Scalar (same arity): the residual must be a tensor, alpha a real number.
bool isTensorAdd(const torch::jit::Match& match, const Values& values) {
  const c10::TypePtr& alpha = matched(match, values, "alpha")->type();
  return matched(match, values, "residual")->type()->isSubtypeOf(*c10::TensorType::get()) &&
         (alpha->isSubtypeOf(*c10::IntType::get()) || alpha->isSubtypeOf(*c10::FloatType::get()));
}

// The GEMM producing %y, as pattern IR, with its inputs; `fused` when it is already a
// fused_linear without a residual (an activation fused by linear_activation).
struct Producer {
  std::string inputs;
  std::string ir;
  std::string activation_ir; // defines %activation for the replacement
};

const Producer kLinear{"%input, %weight, %bias", "%y = aten::linear(%input, %weight, %bias)",
                       R"IR(%activation : str = prim::Constant[value="none"]())IR"};
const Producer kFusedLinear{
    "%input, %weight, %bias, %activation, %no_residual, %one, %no_first",
    "%y = srt::fused_linear(%input, %weight, %bias, %activation, %no_residual, %one, %no_first)",
    ""};

FusionPattern residualAdd(const std::string& name, const Producer& producer, bool residual_first,
                          bool fused) {
  const std::string add =
      residual_first ? "aten::add(%residual, %y, %alpha)" : "aten::add(%y, %residual, %alpha)";
  const std::string inputs = producer.inputs + ", %residual, %alpha";
  FusionFilter filter = [fused](const torch::jit::Match& match, const Values& values) {
    if (!isTensorAdd(match, values)) {
      return false;
    }
    // The fused producer must not carry a residual already.
    return !fused ||
           matched(match, values, "no_residual")->type()->kind() == c10::TypeKind::NoneType;
  };
  return {name,
          "graph(" + inputs + "):\n  " + producer.ir + "\n  %out = " + add + "\n  return (%out)",
          "graph(" + inputs + "):\n  " + producer.activation_ir +
              "\n  %first : bool = prim::Constant[value=" + (residual_first ? "1" : "0") +
              "]()\n  %out = srt::fused_linear(%input, %weight, %bias, %activation, %residual, "
              "%alpha, %first)\n  return (%out)",
          std::move(filter)};
}

SRT_REGISTER_FUSION_PATTERN(kFamily, {residualAdd("residual + linear", kLinear, true, false)});
SRT_REGISTER_FUSION_PATTERN(kFamily, {residualAdd("linear + residual", kLinear, false, false)});
SRT_REGISTER_FUSION_PATTERN(kFamily,
                            {residualAdd("residual + fused_linear", kFusedLinear, true, true)});
SRT_REGISTER_FUSION_PATTERN(kFamily,
                            {residualAdd("fused_linear + residual", kFusedLinear, false, true)});

} // namespace

bool fuseGemmResidualAdd(GraphPtr& graph) {
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
