#include "ops/gemm/epilogue.h"

#include <array>
#include <utility>

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <torch/csrc/jit/ir/constants.h>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {
namespace {

constexpr std::array<std::pair<const char*, Activation>, 7> kActivationNames{{
    {"none", Activation::kNone},
    {"relu", Activation::kRelu},
    {"gelu", Activation::kGelu},
    {"gelu_tanh", Activation::kGeluTanh},
    {"sigmoid", Activation::kSigmoid},
    {"tanh", Activation::kTanh},
    {"silu", Activation::kSilu},
}};

bool isDenseFloat(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.layout() == at::kStrided && t.is_contiguous() &&
         t.is_cpu() && !t.is_neg();
}

} // namespace

std::optional<Activation> parseActivation(std::string_view name) {
  for (const auto& [candidate, activation] : kActivationNames) {
    if (name == candidate) {
      return activation;
    }
  }
  return std::nullopt;
}

Activation activationOrError(std::string_view name, const char* op) {
  const std::optional<Activation> parsed = parseActivation(name);
  TORCH_CHECK(parsed, op, ": unknown activation '", std::string(name),
              "'; expected none, relu, gelu, gelu_tanh, sigmoid, tanh or silu");
  return *parsed;
}

std::optional<Activation> constantActivation(const torch::jit::Value* name) {
  const auto constant = torch::jit::constant_as<std::string>(name);
  return constant ? parseActivation(*constant) : std::nullopt;
}

const char* toString(Activation activation) {
  for (const auto& [name, candidate] : kActivationNames) {
    if (activation == candidate) {
      return name;
    }
  }
  return "?";
}

at::Tensor applyActivation(Activation activation, const at::Tensor& x) {
  switch (activation) {
  case Activation::kNone:
    return x;
  case Activation::kRelu:
    return at::relu(x);
  case Activation::kGelu:
    return at::gelu(x, "none");
  case Activation::kGeluTanh:
    return at::gelu(x, "tanh");
  case Activation::kSigmoid:
    return at::sigmoid(x);
  case Activation::kTanh:
    return at::tanh(x);
  case Activation::kSilu:
    return at::silu(x);
  }
  return x;
}

at::Tensor referenceEpilogue(const GemmEpilogue& epilogue, const at::Tensor& y,
                             const at::Tensor& residual) {
  at::Tensor activated = applyActivation(epilogue.activation, y);
  if (!epilogue.has_residual) {
    return activated;
  }
  return epilogue.residual_first ? at::add(residual, activated, epilogue.alpha)
                                 : at::add(activated, residual, epilogue.alpha);
}

bool epilogueFitsInPlace(const GemmEpilogue& epilogue, at::IntArrayRef out_sizes,
                         const at::Tensor& residual) {
  if (!epilogue.has_residual) {
    return true;
  }
  // A 0-dim residual takes part in type promotion like a Python number (float32 + a double
  // 0-dim tensor stays float32), so only a float32 one is ours.
  return residual.scalar_type() == at::kFloat && residual.is_cpu() &&
         residual.layout() == at::kStrided && at::is_expandable_to(residual.sizes(), out_sizes);
}

void applyEpilogue(const GemmEpilogue& epilogue, const at::Tensor& out,
                   const at::Tensor& residual) {
  TORCH_INTERNAL_ASSERT(isDenseFloat(out), "applyEpilogue: wants a contiguous float32 output");
  float* data = static_cast<float*>(out.data_ptr());
  const int64_t n = out.numel();
  if (epilogue.activation != Activation::kNone) {
    vec::map(formulaOf(epilogue.activation), data, data, n);
  }
  if (!epilogue.has_residual) {
    return;
  }
  const float alpha = static_cast<float>(epilogue.alpha);
  if (isDenseFloat(residual) && residual.sizes() == out.sizes()) {
    const float* r = static_cast<const float*>(residual.data_ptr());
    // kAdd computes x + y * alpha: the operand aten::add scales is the second.
    if (epilogue.residual_first) {
      vec::map(vec::BinaryOp::kAdd, r, data, data, n, {alpha});
    } else {
      vec::map(vec::BinaryOp::kAdd, data, r, data, n, {alpha});
    }
    return;
  }
  // A broadcast residual (a bias-like row, a strided view): ATen's in-place kernels.
  if (epilogue.residual_first) {
    if (epilogue.alpha != 1.0) {
      out.mul_(epilogue.alpha);
    }
    out.add_(residual);
  } else {
    out.add_(residual, epilogue.alpha);
  }
}

} // namespace srt::ops
