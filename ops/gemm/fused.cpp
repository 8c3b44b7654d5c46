// GEMMs fused with what surrounds them.
// - srt::fused_linear = aten::linear, an activation and a residual add in one node
//   (passes/linear_activation.cpp, passes/gemm_residual_add.cpp). On oneDNN the epilogue runs as
//   post-ops of the matmul with the pre-packed weight; on OpenBLAS and ATen it is one vectorized
//   pass over the output right after the GEMM wrote it.
// - srt::gemm = mm / matmul / bmm of operands whose last two dimensions may be transposed, times
//   alpha (passes/transpose_absorption.cpp): OpenBLAS reads the transposed operand in place and
//   scales by alpha inside the GEMM.
#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>
#include <ATen/ops/matmul_native.h>
#include <ATen/ops/resize_native.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/epilogue.h"
#include "ops/gemm/fused_linear.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/path.h"
#include "ops/gemm/problem.h"
#include "ops/gemm/threads.h"

namespace srt::ops {

const char* const kFusedLinearSchema =
    "srt::fused_linear(Tensor input, Tensor weight, Tensor? bias=None, str activation=\"none\", "
    "Tensor? residual=None, Scalar alpha=1, bool residual_first=False) -> Tensor";

at::Tensor fusedLinearReference(const at::Tensor& input, const at::Tensor& weight,
                                const c10::optional<at::Tensor>& bias, c10::string_view activation,
                                const c10::optional<at::Tensor>& residual, const at::Scalar& alpha,
                                bool residual_first) {
  const std::optional<Activation> parsed =
      parseActivation(std::string_view(activation.data(), activation.size()));
  TORCH_CHECK(parsed, "srt::fused_linear: unknown activation '", std::string(activation),
              "'; expected none, relu, gelu, gelu_tanh, sigmoid, tanh or silu");
  at::Tensor y = applyActivation(*parsed, at::linear(input, weight, bias));
  if (!residual) {
    return y;
  }
  return residual_first ? at::add(*residual, y, alpha) : at::add(y, *residual, alpha);
}

std::optional<GemmEpilogue> constantEpilogue(const torch::jit::Node* node) {
  const auto activation = torch::jit::constant_as<std::string>(node->input(kActivation));
  const auto residual_first = torch::jit::constant_as<bool>(node->input(kResidualFirst));
  if (!activation || !residual_first) {
    return std::nullopt;
  }
  const std::optional<Activation> parsed =
      parseActivation(std::string_view(activation->data(), activation->size()));
  const c10::TypePtr& residual_type = node->input(kResidual)->type();
  const bool no_residual = residual_type->kind() == c10::TypeKind::NoneType;
  // An Optional[Tensor] that may or may not be None at run time is left to the JIT operator.
  if (!parsed || (!no_residual && !residual_type->isSubtypeOf(*c10::TensorType::get()))) {
    return std::nullopt;
  }
  GemmEpilogue epilogue;
  epilogue.activation = *parsed;
  epilogue.has_residual = !no_residual;
  epilogue.residual_first = *residual_first;
  return epilogue;
}

namespace {

constexpr const char* kGemmSchema = "srt::gemm(Tensor a, Tensor b, bool trans_a, bool trans_b, "
                                    "Scalar alpha, str op) -> Tensor";

// The GEMMs srt::gemm stands for, each with the rank rules of its ATen op.
enum class GemmOp { kMm, kMatmul, kBmm };

std::optional<GemmOp> parseGemmOp(c10::string_view name) {
  if (name == "mm") {
    return GemmOp::kMm;
  }
  if (name == "matmul") {
    return GemmOp::kMatmul;
  }
  if (name == "bmm") {
    return GemmOp::kBmm;
  }
  return std::nullopt;
}

// An integer alpha of 1 is "no scale" (the pass found none): multiplying would still promote a
// bool or integer result.
bool isUnitAlpha(const at::Scalar& alpha) {
  return alpha.isIntegral(/*includeBool=*/false) && alpha.toLong() == 1;
}

at::Tensor transposedIf(const at::Tensor& t, bool transpose) {
  return transpose ? t.transpose(-2, -1) : t;
}

at::Tensor gemmReference(const at::Tensor& a, const at::Tensor& b, bool trans_a, bool trans_b,
                         const at::Scalar& alpha, c10::string_view op) {
  const std::optional<GemmOp> parsed = parseGemmOp(op);
  TORCH_CHECK(parsed, "srt::gemm: unknown op '", std::string(op), "'; expected mm, matmul or bmm");
  const at::Tensor x = transposedIf(a, trans_a);
  const at::Tensor y = transposedIf(b, trans_b);
  at::Tensor product = *parsed == GemmOp::kMm    ? at::mm(x, y)
                       : *parsed == GemmOp::kBmm ? at::bmm(x, y)
                                                 : at::matmul(x, y);
  return isUnitAlpha(alpha) ? product : at::mul(product, alpha);
}

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kFusedLinearSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        fusedLinearReference);
  m.def(torch::schema(kGemmSchema, c10::AliasAnalysisKind::FROM_SCHEMA), gemmReference);
}

const at::Tensor& tensorInput(ProcessedNode& p, size_t i) {
  return p.input(i).toTensor();
}

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

// The reference result written into the node's output, so the memory planner keeps owning it.
void runReference(ProcessedNode& p) {
  const at::Tensor result = fusedLinearReference(
      tensorInput(p, kInput), tensorInput(p, kWeight), optionalTensor(p.input(kBias)),
      p.input(kActivation).toStringRef(), optionalTensor(p.input(kResidual)),
      p.input(kAlpha).toScalar(), p.input(kResidualFirst).toBool());
  copyIntoOutput(p, result);
}

std::optional<GemmProblem> linearProblem(ProcessedNode& p) {
  const at::Tensor bias = p.input(kBias).isNone() ? at::Tensor() : tensorInput(p, kBias);
  return lowerLinear(tensorInput(p, kInput), tensorInput(p, kWeight), bias);
}

// The GEMM on the path chooseGemmPath picks, then the epilogue.
void runFused(ProcessedNode& p, GemmBackend backend, GemmEpilogue epilogue) {
  std::optional<GemmProblem> problem = linearProblem(p);
  at::Tensor residual;
  if (epilogue.has_residual) {
    residual = tensorInput(p, kResidual);
    const at::Scalar alpha = p.input(kAlpha).toScalar();
    epilogue.alpha = alpha.isComplex() ? 0.0 : alpha.toDouble();
    if (alpha.isComplex()) {
      problem.reset();
    }
  }
  if (!problem || problem->a.scalar_type() != at::kFloat || !problem->a.is_cpu() ||
      !epilogueFitsInPlace(epilogue, problem->out_sizes, residual)) {
    runReference(p);
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, problem->a);
  at::Tensor out_view = resizeForGemm(out, *problem);
  if (!runUnlessAten(chooseGemmPath(*problem, backend), *problem, out_view)) {
    useAtenThreadsForOpenBlas();
    if (problem->hasAddend()) {
      at::cpu::addmm_out(out_view, problem->addend, problem->a, problem->b);
    } else {
      at::cpu::mm_out(out_view, problem->a, problem->b);
    }
  }
  applyEpilogue(epilogue, out, residual);
}

std::optional<KernelFunction> fusedLinearFactory(const torch::jit::Node* node,
                                                 const KernelOptions& options) {
  if (!node->matches(kFusedLinearSchema)) {
    return std::nullopt;
  }
  const std::optional<GemmEpilogue> epilogue = constantEpilogue(node);
  if (!epilogue) {
    return std::nullopt;
  }
  if (options.gemm_backend == GemmBackend::kOneDnn) {
    // Pre-packed once here, when the module is built, as for aten::linear.
    auto weight = torch::jit::toIValue(node->input(kWeight));
    if (weight && weight->isTensor() && weight->toTensor().dim() == 2) {
      KernelFunction aten = [epilogue = *epilogue](ProcessedNode& p) {
        runFused(p, GemmBackend::kAten, epilogue);
      };
      if (auto kernel = makeOneDnnKernel(weight->toTensor().t(), linearProblem, std::move(aten),
                                         *epilogue, kResidual, kAlpha, {kInput, kBias})) {
        return kernel;
      }
    }
  }
  const GemmBackend backend = backendWithoutPackedWeight(options.gemm_backend);
  return [backend, epilogue = *epilogue](ProcessedNode& p) { runFused(p, backend, epilogue); };
}

// srt::gemm inputs.
enum GemmInput { kA = 0, kB, kTransA, kTransB, kGemmAlpha, kOp };

void runGemmReference(ProcessedNode& p) {
  const at::Tensor result = gemmReference(
      tensorInput(p, kA), tensorInput(p, kB), p.input(kTransA).toBool(), p.input(kTransB).toBool(),
      p.input(kGemmAlpha).toScalar(), p.input(kOp).toStringRef());
  copyIntoOutput(p, result);
}

void runGemm(ProcessedNode& p, GemmOp op, GemmBackend backend) {
  const at::Tensor a = transposedIf(tensorInput(p, kA), p.input(kTransA).toBool());
  const at::Tensor b = transposedIf(tensorInput(p, kB), p.input(kTransB).toBool());
  const at::Scalar alpha = p.input(kGemmAlpha).toScalar();
  std::optional<GemmProblem> problem = op == GemmOp::kMm    ? lowerMm(a, b)
                                       : op == GemmOp::kBmm ? lowerBmm(a, b)
                                                            : lowerMatmul(a, b);
  // A float alpha on float32 operands keeps the dtype; anything else is the reference's.
  if (!problem || problem->a.scalar_type() != at::kFloat || !problem->a.is_cpu() ||
      alpha.isComplex() || alpha.isBoolean()) {
    runGemmReference(p);
    return;
  }
  problem->alpha = alpha.toDouble();
  at::Tensor& out = outputTensorLike(p, 0, problem->a);
  at::Tensor out_view = resizeForGemm(out, *problem);
  if (runUnlessAten(chooseGemmPath(*problem, backend), *problem, out_view)) {
    return;
  }
  useAtenThreadsForOpenBlas();
  if (problem->batchDims() == 0) {
    at::cpu::mm_out(out_view, problem->a, problem->b);
  } else if (problem->batchDims() == 1 && problem->a.stride(0) != 0 && problem->b.stride(0) != 0) {
    at::cpu::bmm_out(out_view, problem->a, problem->b);
  } else {
    at::native::matmul_out(problem->a, problem->b, out_view);
  }
  if (problem->alpha != 1.0) {
    float* data = static_cast<float*>(out.data_ptr());
    vec::map(vec::UnaryOp::kMulScalar, data, data, out.numel(),
             {static_cast<float>(problem->alpha)});
  }
}

std::optional<KernelFunction> gemmFactory(const torch::jit::Node* node,
                                          const KernelOptions& options) {
  if (!node->matches(kGemmSchema)) {
    return std::nullopt;
  }
  const auto name = torch::jit::constant_as<std::string>(node->input(kOp));
  const std::optional<GemmOp> op = name ? parseGemmOp(*name) : std::nullopt;
  if (!op) {
    return std::nullopt;
  }
  // This op's operands are activations: no weight to pack.
  const GemmBackend backend = backendWithoutPackedWeight(options.gemm_backend);
  return [op = *op, backend](ProcessedNode& p) { runGemm(p, op, backend); };
}

} // namespace

SRT_REGISTER_KERNEL("srt::fused_linear", kOutVariant, fusedLinearFactory);
SRT_REGISTER_KERNEL("srt::gemm", kOutVariant, gemmFactory);

} // namespace srt::ops
