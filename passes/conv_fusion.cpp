// A 2-D or 3-D convolution followed by a residual add and/or an activation becomes one
// srt::fused_conv2d/3d (ops/conv/convolution.cpp), which applies them while the output is still in
// cache (oneDNN post-ops, or one vectorized pass after the small convolutions' GEMM). What
// torchvision's networks write after a (BatchNorm-folded) convolution: ReLU (ResNet, VGG,
// DenseNet), ReLU6 as hardtanh (MobileNetV2) or, written by hand, clamp(0, 6), hardswish /
// hardsigmoid (MobileNetV3), SiLU (EfficientNet), GELU, leaky ReLU, sigmoid, tanh; and `out +=
// identity` before ResNet's last ReLU, or alone (inverted residual blocks); the same after the 3-D
// convolutions of video networks (r3d_18's ReLUs and residual adds); and an activation after a 1-D
// convolution, which conv1d_lowering leaves as conv2d + squeeze (wav2vec2's feature extractor:
// conv1d + GELU): the activation moves before the squeeze, a view it commutes with. The add is
// either operand order with alpha 1; the matcher only matches when the convolution's (and the
// add's) output has no other use.
#include <string>
#include <unordered_map>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

constexpr const char* kFamily = "conv_fusion";

using Values = std::unordered_map<std::string, torch::jit::Value*>;

const torch::jit::Value* matched(const torch::jit::Match& match, const Values& values,
                                 const std::string& name) {
  return match.values_map.at(values.at(name));
}

// An activation as pattern IR reading %y and defining %r, with the fused op's name for it and
// the pattern inputs that become act_a / act_b ("" for none).
struct ActivationPattern {
  std::string name;
  std::string ir;
  std::string a;
  std::string b;
  FusionFilter filter;
};

const std::vector<ActivationPattern>& activations() {
  static const std::vector<ActivationPattern> patterns = {
      {"relu", "%r = aten::relu(%y)", "", "", {}},
      {"hardtanh", "%r = aten::hardtanh(%y, %min, %max)", "min", "max", {}},
      // torch.clamp(y, 0, 6), as ReLU6 is often written by hand: hardtanh with those bounds.
      {"hardtanh", "%r = aten::clamp(%y, %min, %max)", "min", "max",
       constantNumbers({"min", "max"})},
      {"leaky_relu", "%r = aten::leaky_relu(%y, %slope)", "slope", "", {}},
      {"sigmoid", "%r = aten::sigmoid(%y)", "", "", {}},
      {"tanh", "%r = aten::tanh(%y)", "", "", {}},
      {"silu", "%r = aten::silu(%y)", "", "", {}},
      {"hardswish", "%r = aten::hardswish(%y)", "", "", {}},
      {"hardsigmoid", "%r = aten::hardsigmoid(%y)", "", "", {}},
      {"gelu", "%r = aten::gelu(%y, %approximate)", "", "",
       constantStringIs("approximate", "none")},
      {"gelu_tanh", "%r = aten::gelu(%y, %approximate)", "", "",
       constantStringIs("approximate", "tanh")},
      // Last: a residual add followed by an activation fuses with it first.
      {"none", "", "", "", {}},
  };
  return patterns;
}

// Pattern inputs an activation reads besides %y.
std::string activationInputs(const ActivationPattern& activation) {
  std::string inputs;
  for (const std::string& name : {activation.a, activation.b}) {
    if (!name.empty()) {
      inputs += ", %" + name;
    }
  }
  if (activation.ir.find("%approximate") != std::string::npos) {
    inputs += ", %approximate";
  }
  return inputs;
}

// conv2d/3d [+ residual, in `order`] [then activation] as one srt::fused_conv2d/3d.
enum class Residual { kNone, kAfter, kBefore }; // add(y, r) / add(r, y)

FusionPattern convThen(int dims, const ActivationPattern& activation, Residual residual) {
  const std::string conv = "conv" + std::to_string(dims) + "d";
  const std::string conv_inputs = "%input, %weight, %bias, %stride, %padding, %dilation, %groups";
  std::string inputs = conv_inputs;
  std::string body;
  std::string residual_value = "%no_residual";
  if (residual == Residual::kNone) {
    body = "  %y = aten::" + conv + "(" + conv_inputs + ")\n";
  } else {
    inputs += ", %residual, %alpha";
    body = "  %conv = aten::" + conv + "(" + conv_inputs + ")\n";
    body += residual == Residual::kAfter ? "  %y = aten::add(%conv, %residual, %alpha)\n"
                                         : "  %y = aten::add(%residual, %conv, %alpha)\n";
    residual_value = "%residual";
  }
  inputs += activationInputs(activation);
  const bool no_activation = activation.name == "none";
  const std::string pattern = "graph(" + inputs + "):\n" + body +
                              (no_activation ? "" : "  " + activation.ir + "\n") + "  return (" +
                              (no_activation ? "%y" : "%r") + ")";
  const std::string a = activation.a.empty() ? "%zero" : "%" + activation.a;
  const std::string b = activation.b.empty() ? "%zero" : "%" + activation.b;
  const std::string replacement =
      "graph(" + inputs + "):\n" + "  %name : str = prim::Constant[value=\"" + activation.name +
      "\"]()\n  %zero : float = prim::Constant[value=0.]()\n" +
      "  %no_residual : NoneType = prim::Constant()\n" + "  %r = srt::fused_" + conv + "(" +
      conv_inputs + ", " + residual_value + ", %name, " + a + ", " + b + ")\n  return (%r)";
  FusionFilter filter = [residual, activation_filter = activation.filter](
                            const torch::jit::Match& match, const Values& values) {
    if (activation_filter && !activation_filter(match, values)) {
      return false;
    }
    if (residual == Residual::kNone) {
      return true;
    }
    // add.Tensor with alpha 1 (what `out += identity` becomes), of another value than the
    // convolution itself.
    const auto alpha = torch::jit::toIValue(matched(match, values, "alpha"));
    const torch::jit::Value* r = matched(match, values, "residual");
    return alpha &&
           ((alpha->isInt() && alpha->toInt() == 1) ||
            (alpha->isDouble() && alpha->toDouble() == 1.0)) &&
           r->type()->isSubtypeOf(*c10::TensorType::get()) && r != matched(match, values, "conv");
  };
  std::string name = conv;
  if (residual != Residual::kNone) {
    name += " + residual";
  }
  if (!no_activation) {
    name += " + " + activation.name;
  }
  return {name, pattern, replacement, std::move(filter)};
}

// A 1-D convolution lowered to 2-D (conv2d, then squeeze of its unit height) and its activation.
FusionPattern squeezedConvThen(const ActivationPattern& activation) {
  const std::string conv_inputs = "%input, %weight, %bias, %stride, %padding, %dilation, %groups";
  const std::string inputs = conv_inputs + ", %dim" + activationInputs(activation);
  const std::string pattern = "graph(" + inputs + "):\n  %conv = aten::conv2d(" + conv_inputs +
                              ")\n  %y = aten::squeeze(%conv, %dim)\n  " + activation.ir +
                              "\n  return (%r)";
  const std::string a = activation.a.empty() ? "%zero" : "%" + activation.a;
  const std::string b = activation.b.empty() ? "%zero" : "%" + activation.b;
  const std::string replacement =
      "graph(" + inputs + "):\n  %name : str = prim::Constant[value=\"" + activation.name +
      "\"]()\n  %zero : float = prim::Constant[value=0.]()\n" +
      "  %no_residual : NoneType = prim::Constant()\n  %fused = srt::fused_conv2d(" + conv_inputs +
      ", %no_residual, %name, " + a + ", " + b +
      ")\n  %r = aten::squeeze(%fused, %dim)\n  return (%r)";
  return {"conv2d + squeeze + " + activation.name, pattern, replacement, activation.filter};
}

// Registered once, longest chains first: a residual add with the activation after it before
// either alone.
bool registerPatterns() {
  for (int dims : {2, 3}) {
    for (Residual residual : {Residual::kAfter, Residual::kBefore}) {
      for (const ActivationPattern& activation : activations()) {
        registerFusionPattern(kFamily, convThen(dims, activation, residual));
      }
    }
    for (const ActivationPattern& activation : activations()) {
      if (activation.name != "none") {
        registerFusionPattern(kFamily, convThen(dims, activation, Residual::kNone));
      }
    }
  }
  for (const ActivationPattern& activation : activations()) {
    if (activation.name != "none") {
      registerFusionPattern(kFamily, squeezedConvThen(activation));
    }
  }
  return true;
}

const bool kRegistered = registerPatterns();

} // namespace

bool fuseConvEpilogues(GraphPtr& graph) {
  (void)kRegistered;
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
