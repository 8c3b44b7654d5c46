// Activations written out by hand become the ATen op they compute, so that the fusions after it
// (conv_fusion, linear_activation, norm_activation) fold them into the op before, and the blocked
// layout keeps them on blocked tensors, as they do for nn.SiLU or nn.Hardswish:
//
//   x * torch.sigmoid(x)                       -> silu(x)        (Swish in EfficientNet and YOLO
//                                                                  code written before nn.SiLU)
//   F.relu6(x + 3) / 6                         -> hardsigmoid(x) (MobileNetV3 reimplementations'
//                                                                  h_sigmoid, timm's hard_sigmoid)
//   x * F.relu6(x + 3) / 6                     -> hardswish(x)   (their h_swish)
//   x * hardsigmoid(x)                         -> hardswish(x)   (h_swish as x * h_sigmoid(x))
//   x.clamp(min=0), torch.clamp_min(x, 0)      -> relu(x)
//
// with either operand order of the products, relu6 as hardtanh(., 0, 6) (aten_decompositions) or
// clamp(., 0, 6), 3 and 6 as ints or floats. Each is the op's own formula, so the values agree to
// rounding. Only on floating-point x (passes/dtype_inference.h: the ops refuse integers where the
// arithmetic would not), and only where the intermediate values have no other reader.
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/dtype_inference.h"
#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

constexpr const char* kFamily = "activation_idioms";

using Values = std::unordered_map<std::string, torch::jit::Value*>;

bool isConstantNumber(const torch::jit::Value* value, double expected) {
  const auto constant = torch::jit::toIValue(value);
  return constant && (constant->isInt() || constant->isDouble()) &&
         constant->toScalar().to<double>() == expected;
}

bool isConstantNone(const torch::jit::Value* value) {
  const auto constant = torch::jit::toIValue(value);
  return constant && constant->isNone();
}

// x floating point, and each pattern value `numbers` names the constant number it pairs with.
FusionFilter floatingWithNumbers(std::vector<std::pair<std::string, double>> numbers) {
  return [numbers = std::move(numbers)](const torch::jit::Match& match, const Values& values) {
    const auto dtype = knownDtype(match.values_map.at(values.at("x")));
    if (!dtype || !c10::isFloatingType(*dtype)) {
      return false;
    }
    for (const auto& [name, expected] : numbers) {
      if (!isConstantNumber(match.values_map.at(values.at(name)), expected)) {
        return false;
      }
    }
    return true;
  };
}

// relu6(x + 3) as pattern IR defining %clipped, in the spellings `clip` names.
std::string shiftedRelu6(const std::string& clip) {
  return "%shifted = aten::add(%x, %three, %alpha)\n  %clipped = aten::" + clip +
         "(%shifted, %zero, %six)\n  ";
}

// The constants of relu6(x + 3) / 6.
const std::vector<std::pair<std::string, double>> kRelu6Over6 = {
    {"three", 3.0}, {"alpha", 1.0}, {"zero", 0.0}, {"six", 6.0}, {"divisor", 6.0}};

FusionPattern unary(const std::string& name, const std::string& inputs, const std::string& body,
                    const std::string& op, FusionFilter filter) {
  return {name, "graph(%x" + inputs + "):\n  " + body + "return (%r)",
          "graph(%x" + inputs + "):\n  %r = aten::" + op + "(%x)\n  return (%r)",
          std::move(filter)};
}

const char* kRelu6Inputs = ", %three, %alpha, %zero, %six";

// Registered in this order: the whole hardswish before the hardsigmoid inside x * (... / 6).
struct Registrar {
  Registrar() {
    for (const char* order : {"%x, %s", "%s, %x"}) {
      registerFusionPattern(
          kFamily, unary(std::string("x * sigmoid(x) (") + order + ")", "",
                         "%s = aten::sigmoid(%x)\n  %r = aten::mul(" + std::string(order) + ")\n  ",
                         "silu", floatingWithNumbers({})));
    }
    for (const char* clip : {"hardtanh", "clamp"}) {
      for (const char* order : {"%x, %clipped", "%clipped, %x"}) {
        registerFusionPattern(
            kFamily, unary(std::string("x * relu6(x + 3) / 6 (") + clip + ", " + order + ")",
                           std::string(kRelu6Inputs) + ", %divisor",
                           shiftedRelu6(clip) + "%product = aten::mul(" + order +
                               ")\n  %r = aten::div(%product, %divisor)\n  ",
                           "hardswish", floatingWithNumbers(kRelu6Over6)));
      }
      registerFusionPattern(kFamily,
                            unary(std::string("relu6(x + 3) / 6 (") + clip + ")",
                                  std::string(kRelu6Inputs) + ", %divisor",
                                  shiftedRelu6(clip) + "%r = aten::div(%clipped, %divisor)\n  ",
                                  "hardsigmoid", floatingWithNumbers(kRelu6Over6)));
    }
    for (const char* order : {"%x, %h", "%h, %x"}) {
      registerFusionPattern(kFamily, unary(std::string("x * hardsigmoid(x) (") + order + ")", "",
                                           "%h = aten::hardsigmoid(%x)\n  %r = aten::mul(" +
                                               std::string(order) + ")\n  ",
                                           "hardswish", floatingWithNumbers({})));
    }
    registerFusionPattern(
        kFamily, {"x.clamp(min=0)",
                  "graph(%x, %zero, %none):\n  %r = aten::clamp(%x, %zero, %none)\n  return (%r)",
                  "graph(%x, %zero, %none):\n  %r = aten::relu(%x)\n  return (%r)",
                  [](const torch::jit::Match& match, const Values& values) {
                    return floatingWithNumbers({{"zero", 0.0}})(match, values) &&
                           isConstantNone(match.values_map.at(values.at("none")));
                  }});
    registerFusionPattern(kFamily,
                          unary("clamp_min(x, 0)", ", %zero", "%r = aten::clamp_min(%x, %zero)\n  ",
                                "relu", floatingWithNumbers({{"zero", 0.0}})));
  }
};

const Registrar registrar;

} // namespace

bool rewriteActivationIdioms(GraphPtr& graph) {
  return applyFusionPatterns(kFamily, graph);
}

} // namespace srt::passes
