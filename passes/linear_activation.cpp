// aten::linear followed by an activation becomes one srt::fused_linear node (ops/gemm/fused.cpp),
// which applies the activation to the GEMM's output while it is still in cache (oneDNN post-op, or
// one vectorized pass right after the GEMM). The pattern matcher only matches when the linear's
// output has no other use: a pre-activation value needed elsewhere stays unfused.
// Linears spelled as matmul(x, W) (+ b) or addmm(b, x, W) with constant W and b are first
// rewritten as aten::linear with the constant W.t(), so they fuse the same way.
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "passes/fusion_patterns.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

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

SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("relu", "%r = aten::relu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("sigmoid", "%r = aten::sigmoid(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("tanh", "%r = aten::tanh(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("silu", "%r = aten::silu(%y)")});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("gelu", "%r = aten::gelu(%y, %approximate)",
                                                 ", %approximate",
                                                 constantStringIs("approximate", "none"))});
SRT_REGISTER_FUSION_PATTERN(kFamily, {linearThen("gelu_tanh", "%r = aten::gelu(%y, %approximate)",
                                                 ", %approximate",
                                                 constantStringIs("approximate", "tanh"))});

using torch::jit::Node;
using torch::jit::Value;

// A constant 2-D float tensor: a weight linear can take as W.t().
std::optional<at::Tensor> constantMatrix(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isTensor()) {
    return std::nullopt;
  }
  const at::Tensor& t = constant->toTensor();
  if (t.dim() != 2 || t.scalar_type() != at::kFloat || t.requires_grad()) {
    return std::nullopt;
  }
  return t;
}

// A constant 1-D bias of `n` float values.
bool isConstantBias(const Value* value, int64_t n) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isTensor()) {
    return false;
  }
  const at::Tensor& t = constant->toTensor();
  return t.dim() == 1 && t.size(0) == n && t.scalar_type() == at::kFloat && !t.requires_grad();
}

bool isIntOne(const Value* value) {
  const auto constant = torch::jit::constant_as<int64_t>(value);
  return constant && *constant == 1 && value->type()->kind() == c10::TypeKind::IntType;
}

// linear(input, weight.t() as a new constant, bias) replacing `replaced`'s output.
void replaceWithLinear(Node* replaced, Value* input, const at::Tensor& weight, Value* bias) {
  torch::jit::Graph& graph = *replaced->owningGraph();
  const torch::jit::WithInsertPoint here(replaced);
  Value* inputs[] = {input, graph.insertConstant(weight.t().contiguous()),
                     bias ? bias : graph.insertConstant(c10::IValue())};
  Node* linear = graph.insertNode(graph.create(c10::aten::linear, inputs));
  linear->output()->setType(c10::TensorType::get());
  linear->copyMetadata(replaced); // source range, inlined call stack, scope: for error messages
  replaced->output()->replaceAllUsesWith(linear->output());
}

// matmul(x, W) [+ b] with constant W [K, N] (and b [N], alpha 1, matmul's only use): numerically
// the same GEMM; the bias joins it as linear's (ATen: addmm's beta = 1 accumulation).
bool matmulAsLinear(Node* matmul) {
  if (!matmul->matches("aten::matmul(Tensor self, Tensor other) -> Tensor")) {
    return false;
  }
  const std::optional<at::Tensor> weight = constantMatrix(matmul->input(1));
  if (!weight) {
    return false;
  }
  const auto& uses = matmul->output()->uses();
  if (uses.size() == 1) {
    Node* add = uses[0].user;
    if (add->matches("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") &&
        isIntOne(add->input(2))) {
      Value* bias = add->input(uses[0].offset == 0 ? 1 : 0);
      if (isConstantBias(bias, weight->size(1))) {
        replaceWithLinear(add, matmul->input(0), *weight, bias);
        add->destroy();
        matmul->destroy();
        return true;
      }
    }
  }
  replaceWithLinear(matmul, matmul->input(0), *weight, nullptr);
  matmul->destroy();
  return true;
}

// addmm(b, x, W, beta=1, alpha=1) with constant W [K, N] and b [N].
bool addmmAsLinear(Node* addmm) {
  if (!addmm->matches("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
                      "Scalar alpha=1) -> Tensor") ||
      !isIntOne(addmm->input(3)) || !isIntOne(addmm->input(4))) {
    return false;
  }
  const std::optional<at::Tensor> weight = constantMatrix(addmm->input(2));
  if (!weight || !isConstantBias(addmm->input(0), weight->size(1))) {
    return false;
  }
  replaceWithLinear(addmm, addmm->input(1), *weight, addmm->input(0));
  addmm->destroy();
  return true;
}

// Every such matmul / addmm becomes a linear (the same GEMM, its weight pre-packed the same way),
// so the patterns below see one spelling.
bool linearsFromMatmulAndAddmm(GraphPtr& graph) {
  const std::vector<Node*> gemms = nodesWhere(graph->block(), [](Node* node) {
    return node->kind() == c10::aten::matmul || node->kind() == c10::aten::addmm;
  });
  bool changed = false;
  for (Node* gemm : gemms) {
    changed =
        (gemm->kind() == c10::aten::matmul ? matmulAsLinear(gemm) : addmmAsLinear(gemm)) || changed;
  }
  return changed;
}

} // namespace

bool fuseLinearActivation(GraphPtr& graph) {
  const bool canonicalized = linearsFromMatmulAndAddmm(graph);
  return applyFusionPatterns(kFamily, graph) || canonicalized;
}

} // namespace srt::passes
