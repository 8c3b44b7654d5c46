// The GEMM family as out-variant kernels: aten::linear, addmm, mm, matmul, bmm, baddbmm, each run
// by the library KernelOptions::gemm_backend names. Every backend falls back to ATen's kernel
// (ops/gemm/aten.cpp) for what it does not cover, so a node of this family is always an
// out-variant.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/gemm/aten.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/path.h"
#include "ops/gemm/problem.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

const at::Tensor& tensorInput(ProcessedNode& p, size_t i) {
  return p.input(i).toTensor();
}

// alpha / beta as the float the backends take; complex ones are ATen's business.
std::optional<double> realScalar(const c10::IValue& value) {
  const at::Scalar scalar = value.toScalar();
  if (scalar.isComplex()) {
    return std::nullopt;
  }
  return scalar.toDouble();
}

std::optional<GemmProblem> linearProblem(ProcessedNode& p) {
  const at::Tensor bias = p.input(2).isNone() ? at::Tensor() : tensorInput(p, 2);
  return lowerLinear(tensorInput(p, 0), tensorInput(p, 1), bias);
}

std::optional<GemmProblem> addmmProblem(ProcessedNode& p) {
  const auto beta = realScalar(p.input(3));
  const auto alpha = realScalar(p.input(4));
  if (!beta || !alpha) {
    return std::nullopt;
  }
  return lowerAddmm(tensorInput(p, 0), tensorInput(p, 1), tensorInput(p, 2), *beta, *alpha);
}

std::optional<GemmProblem> mmProblem(ProcessedNode& p) {
  return lowerMm(tensorInput(p, 0), tensorInput(p, 1));
}

std::optional<GemmProblem> matmulProblem(ProcessedNode& p) {
  return lowerMatmul(tensorInput(p, 0), tensorInput(p, 1));
}

std::optional<GemmProblem> bmmProblem(ProcessedNode& p) {
  return lowerBmm(tensorInput(p, 0), tensorInput(p, 1));
}

std::optional<GemmProblem> baddbmmProblem(ProcessedNode& p) {
  const auto beta = realScalar(p.input(3));
  const auto alpha = realScalar(p.input(4));
  if (!beta || !alpha) {
    return std::nullopt;
  }
  return lowerBaddbmm(tensorInput(p, 0), tensorInput(p, 1), tensorInput(p, 2), *beta, *alpha);
}

// One ATen op of the family: how to read it, lower it and run it on ATen.
struct AtenGemmOp {
  const char* schema;
  GemmLowering lower;
  void (*aten)(ProcessedNode&);
  // The input oneDNN pre-packs when it is a constant (the GEMM's right operand), or -1.
  int packable_input;
  // linear's weight is [N, K]: the right operand is its transpose.
  bool packable_is_transposed;
  LinearInputs linear_inputs = {};
};

const AtenGemmOp kLinear{"aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
                         linearProblem,
                         atenLinear,
                         1,
                         true,
                         {/*input=*/0, /*bias=*/2}};
const AtenGemmOp kAddmm{"aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
                        "Scalar alpha=1) -> Tensor",
                        addmmProblem, atenAddmm, 2, false};
const AtenGemmOp kMm{"aten::mm(Tensor self, Tensor mat2) -> Tensor", mmProblem, atenMm, 1, false};
const AtenGemmOp kMatmul{"aten::matmul(Tensor self, Tensor other) -> Tensor", matmulProblem,
                         atenMatmul, 1, false};
const AtenGemmOp kBmm{"aten::bmm(Tensor self, Tensor mat2) -> Tensor", bmmProblem, atenBmm, -1,
                      false};
const AtenGemmOp kBaddbmm{
    "aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
    "Scalar alpha=1) -> Tensor",
    baddbmmProblem, atenBaddbmm, -1, false};

// False when the graph types say a tensor input is not float32: then neither oneDNN nor OpenBLAS
// could ever run the node. Types are often unknown (nullopt) in scripted graphs; those are
// checked at run time.
bool mayBeFloat32(const Node* node) {
  for (const torch::jit::Value* input : node->inputs()) {
    if (auto type = input->type()->cast<c10::TensorType>()) {
      if (type->scalarType() && *type->scalarType() != at::kFloat) {
        return false;
      }
    }
  }
  return true;
}

// The lowered GEMM on the path chooseGemmPath picks; the ATen path, and what does not lower, run
// the op's own ATen kernel.
KernelFunction unpackedKernel(const AtenGemmOp& op, GemmBackend backend) {
  return [lower = op.lower, aten = op.aten, backend](ProcessedNode& p) {
    std::optional<GemmProblem> problem = lower(p);
    const GemmPath path = problem ? chooseGemmPath(*problem, backend) : GemmPath::kAten;
    if (path != GemmPath::kAten) {
      at::Tensor& out = outputTensorLike(p, 0, problem->a);
      runUnlessAten(path, *problem, resizeForGemm(out, *problem));
      return;
    }
    aten(p);
  };
}

// oneDNN pays off with a weight packed once; a right operand that is not a constant is ATen's.
std::optional<KernelFunction> onednnKernel(const AtenGemmOp& op, const Node* node) {
  if (op.packable_input < 0) {
    return std::nullopt;
  }
  auto constant = torch::jit::toIValue(node->input(op.packable_input));
  if (!constant || !constant->isTensor() || constant->toTensor().dim() != 2) {
    return std::nullopt;
  }
  const at::Tensor& weight = constant->toTensor();
  return makeOneDnnKernel(op.packable_is_transposed ? weight.t() : weight, op.lower, op.aten,
                          op.linear_inputs);
}

KernelFunction backendKernel(const AtenGemmOp& op, const Node* node, const KernelOptions& options) {
  if (!mayBeFloat32(node)) {
    return op.aten;
  }
  if (options.gemm_backend == GemmBackend::kOneDnn) {
    if (auto kernel = onednnKernel(op, node)) {
      return std::move(*kernel);
    }
  }
  return unpackedKernel(op, backendWithoutPackedWeight(options.gemm_backend));
}

std::optional<KernelFunction> makeGemmKernel(const AtenGemmOp& op, const Node* node,
                                             const KernelOptions& options) {
  if (!node->matches(op.schema)) {
    return std::nullopt;
  }
  // outputTensor (ops/core/out_variant.h) reuses last run's tensor only when nothing else holds it,
  // so a loop feeding a GEMM's output back in as its input is safe.
  return backendKernel(op, node, options);
}

template <const AtenGemmOp& Op>
std::optional<KernelFunction> factory(const Node* node, const KernelOptions& options) {
  return makeGemmKernel(Op, node, options);
}

} // namespace

SRT_REGISTER_KERNEL("aten::linear", kOutVariant, factory<kLinear>);
SRT_REGISTER_KERNEL("aten::addmm", kOutVariant, factory<kAddmm>);
SRT_REGISTER_KERNEL("aten::mm", kOutVariant, factory<kMm>);
SRT_REGISTER_KERNEL("aten::matmul", kOutVariant, factory<kMatmul>);
SRT_REGISTER_KERNEL("aten::bmm", kOutVariant, factory<kBmm>);
SRT_REGISTER_KERNEL("aten::baddbmm", kOutVariant, factory<kBaddbmm>);

} // namespace srt::ops
