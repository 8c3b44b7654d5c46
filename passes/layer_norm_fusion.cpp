// Layer norm written out by hand (nanoGPT / T5-style code: mean, centred square or var, sqrt or
// rsqrt, then `* weight + bias`) becomes one aten::layer_norm node, which runs one fused
// out-variant kernel instead of nine element-wise and reduction passes over the activations.
// Only the exact formula is taken: the mean and variance over the last dim with keepdim, the
// biased variance, eps added inside the root, alpha 1 everywhere, and a constant 1-D weight and
// bias as long as the normalized dim.
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

constexpr const char* kFamily = "layer_norm_fusion";

using ValueMap = std::unordered_map<std::string, torch::jit::Value*>;

torch::jit::Value* matched(const torch::jit::Match& match, const ValueMap& values,
                           const std::string& name) {
  return match.values_map.at(values.at(name));
}

template <typename T>
bool constantIs(const torch::jit::Match& match, const ValueMap& values, const std::string& name,
                const T& expected) {
  const auto value = torch::jit::constant_as<T>(matched(match, values, name));
  return value && *value == expected;
}

// An int or float constant as a double (constant_as<double> asserts on an int).
std::optional<double> numberConstant(const torch::jit::Match& match, const ValueMap& values,
                                     const std::string& name) {
  const auto value = torch::jit::toIValue(matched(match, values, name));
  if (!value || !(value->isDouble() || value->isInt())) {
    return std::nullopt;
  }
  return value->isDouble() ? value->toDouble() : static_cast<double>(value->toInt());
}

bool isLastDim(const torch::jit::Match& match, const ValueMap& values, const std::string& name) {
  const auto dims = torch::jit::constant_as<std::vector<int64_t>>(matched(match, values, name));
  return dims && dims->size() == 1 && dims->front() == -1;
}

// The weight and bias must be constant 1-D float tensors of one size: then layer_norm's
// normalized_shape [x.size(-1)] broadcasts them exactly as the hand-written `* w + b` does (a
// size mismatch errors in both).
bool isAffineParameter(const torch::jit::Match& match, const ValueMap& values,
                       const std::string& name) {
  const auto tensor = torch::jit::constant_as<at::Tensor>(matched(match, values, name));
  return tensor && tensor->dim() == 1 && tensor->scalar_type() == at::kFloat;
}

bool isLayerNorm(const torch::jit::Match& match, const ValueMap& values) {
  const bool variance_ok = values.count("exponent")
                               ? numberConstant(match, values, "exponent") == 2.0 &&
                                     isLastDim(match, values, "var_dims") &&
                                     constantIs<bool>(match, values, "var_keepdim", true) &&
                                     matched(match, values, "var_dtype")->mustBeNone()
                               : constantIs<bool>(match, values, "unbiased", false) &&
                                     isLastDim(match, values, "var_dims") &&
                                     constantIs<bool>(match, values, "var_keepdim", true);
  const std::optional<double> eps = numberConstant(match, values, "eps");
  const auto weight = torch::jit::constant_as<at::Tensor>(matched(match, values, "weight"));
  const auto bias = torch::jit::constant_as<at::Tensor>(matched(match, values, "bias"));
  return variance_ok && isLastDim(match, values, "dims") &&
         constantIs<bool>(match, values, "keepdim", true) &&
         matched(match, values, "dtype")->mustBeNone() &&
         numberConstant(match, values, "one") == 1.0 && eps && *eps >= 0 &&
         isAffineParameter(match, values, "weight") && isAffineParameter(match, values, "bias") &&
         weight->size(0) == bias->size(0);
}

// The spellings of the variance (of %centered, defining %var) ...
struct Spelling {
  const char* name;
  const char* inputs;
  const char* ir;
};
const Spelling kVariances[] = {
    {"mean of squares", ", %exponent, %var_dims, %var_keepdim, %var_dtype", R"IR(
  %squared = aten::pow(%centered, %exponent)
  %var = aten::mean(%squared, %var_dims, %var_keepdim, %var_dtype))IR"},
    {"var(unbiased=False)", ", %unbiased, %var_dims, %var_keepdim", R"IR(
  %var = aten::var(%x, %var_dims, %unbiased, %var_keepdim))IR"},
};
// ... of the normalization (defining %normed) ...
const Spelling kNormalizations[] = {
    {"divide by sqrt", "", R"IR(
  %std = aten::sqrt(%shifted)
  %normed = aten::div(%centered, %std))IR"},
    {"multiply by rsqrt", "", R"IR(
  %inv_std = aten::rsqrt(%shifted)
  %normed = aten::mul(%centered, %inv_std))IR"},
};
// ... and of the affine step (defining %y).
const Spelling kAffines[] = {
    {"x * w + b", "", R"IR(
  %scaled = aten::mul(%normed, %weight)
  %y = aten::add(%scaled, %bias, %one))IR"},
    {"w * x + b", "", R"IR(
  %scaled = aten::mul(%weight, %normed)
  %y = aten::add(%scaled, %bias, %one))IR"},
};

FusionPattern layerNormPattern(const Spelling& variance, const Spelling& normalization,
                               const Spelling& affine) {
  const std::string inputs = std::string("graph(%x, %weight, %bias, %eps, %one, %dims, %keepdim, "
                                         "%dtype") +
                             variance.inputs + normalization.inputs + affine.inputs + "):";
  std::string pattern = inputs + R"IR(
  %mean = aten::mean(%x, %dims, %keepdim, %dtype)
  %centered = aten::sub(%x, %mean, %one))IR" +
                        variance.ir + R"IR(
  %shifted = aten::add(%var, %eps, %one))IR" +
                        normalization.ir + affine.ir + R"IR(
  return (%y))IR";
  std::string replacement = inputs + R"IR(
  %last : int = prim::Constant[value=-1]()
  %size : int = aten::size(%x, %last)
  %shape : int[] = prim::ListConstruct(%size)
  %cudnn : bool = prim::Constant[value=0]()
  %y = aten::layer_norm(%x, %shape, %weight, %bias, %eps, %cudnn)
  return (%y))IR";
  return {std::string("layer_norm: ") + variance.name + ", " + normalization.name + ", " +
              affine.name,
          std::move(pattern), std::move(replacement), isLayerNorm};
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const Spelling& variance : kVariances) {
    for (const Spelling& normalization : kNormalizations) {
      for (const Spelling& affine : kAffines) {
        registerFusionPattern(kFamily, layerNormPattern(variance, normalization, affine));
      }
    }
  }
  return true;
}();

} // namespace

bool fuseLayerNorm(GraphPtr& graph) {
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
