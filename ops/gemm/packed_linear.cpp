#include "ops/gemm/packed_linear.h"

#include <ATen/ops/resize_native.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/gemm/fused_linear.h"
#include "ops/gemm/onednn.h"

namespace srt::ops {

const char* const kPackedLinearSchema =
    "srt::fused_linear.packed(Tensor input, __torch__.torch.classes.srt.LinearWeight weight, "
    "Tensor? bias=None, str activation=\"none\", Tensor? residual=None, Scalar alpha=1, "
    "bool residual_first=False) -> Tensor";

void registerLinearWeightClass() {
  static const auto registered = torch::class_<PackedLinearWeight>("srt", "LinearWeight");
  (void)registered;
}

c10::intrusive_ptr<PackedLinearWeight> packLinearWeightConstant(const at::Tensor& weight) {
  if (weight.dim() != 2) {
    return {};
  }
  std::shared_ptr<const OneDnnPackedWeight> packed = packOneDnnWeight(weight.t());
  if (packed == nullptr) {
    return {};
  }
  return c10::make_intrusive<PackedLinearWeight>(std::move(packed));
}

namespace {

// What the JIT runs for the node, and our kernel for what oneDNN does not take: the weight
// unpacked (a new tensor per call), then srt::fused_linear's reference.
at::Tensor packedLinearReference(const at::Tensor& input,
                                 const c10::intrusive_ptr<PackedLinearWeight>& weight,
                                 const c10::optional<at::Tensor>& bias, c10::string_view activation,
                                 const c10::optional<at::Tensor>& residual, const at::Scalar& alpha,
                                 bool residual_first) {
  TORCH_CHECK(weight, "srt::fused_linear.packed: the packed weight is None");
  return fusedLinearReference(input, unpackOneDnnWeight(*weight->packed).t(), bias, activation,
                              residual, alpha, residual_first);
}

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

// The reference result written into the node's output, so the memory planner keeps owning it.
void runReference(ProcessedNode& p) {
  const at::Tensor result = packedLinearReference(
      p.input(kInput).toTensor(), p.input(kWeight).toCustomClass<PackedLinearWeight>(),
      optionalTensor(p.input(kBias)), p.input(kActivation).toStringRef(),
      optionalTensor(p.input(kResidual)), p.input(kAlpha).toScalar(),
      p.input(kResidualFirst).toBool());
  copyIntoOutput(p, result);
}

std::optional<KernelFunction> packedLinearFactory(const torch::jit::Node* node,
                                                  const KernelOptions&) {
  if (!node->matches(kPackedLinearSchema)) {
    return std::nullopt;
  }
  const std::optional<GemmEpilogue> epilogue = constantEpilogue(node);
  const auto weight = torch::jit::toIValue(node->input(kWeight));
  if (!epilogue || !weight || !weight->isCustomClass()) {
    return std::nullopt;
  }
  // The packed weight exists for oneDNN alone: StaticModuleOptions skips the packing pass for
  // the other GEMM backends, so this kernel runs oneDNN whatever the options say.
  return makePackedLinearKernel(weight->toCustomClass<PackedLinearWeight>()->packed, *epilogue,
                                {kInput, kBias}, kResidual, kAlpha, runReference);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  registerLinearWeightClass(); // first: the schema names it
  m.def(torch::schema(kPackedLinearSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        packedLinearReference);
}

SRT_REGISTER_KERNEL("srt::fused_linear", kOutVariant, packedLinearFactory);

} // namespace srt::ops
