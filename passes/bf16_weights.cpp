// Every packed linear and convolution weight packed again as bfloat16, so that its kernel
// multiplies in bfloat16 and sums in float32 (ops/core/multiply_precision.h): on this project's
// AMX machines oneDNN's bfloat16 matmul runs a 197x768x3072 product in 0.41 ms against 5.4 ms in
// float32, a 64-channel 3x3 convolution at 56x56 in 0.12 against 1.2 ms. The results change by
// bfloat16's rounding of weights and activations (8 mantissa bits), so it runs only when
// StaticModuleOptions::fp32_precision is "bf16" (passesToSkip), and only on a CPU that
// multiplies bfloat16 natively; elsewhere oneDNN would emulate it, slower than float32. The
// float32 constants it replaces become dead and the dead-code pass drops them: each weight is
// held once, in half the bytes.
#include <unordered_map>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/packed_conv.h"
#include "ops/core/multiply_precision.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/packed_linear.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

constexpr auto kBFloat16 = ops::MultiplyPrecision::kBFloat16;

// A float32 packed weight's bfloat16 constant, made once per weight (several nodes may share
// one); nullptr where oneDNN has no bfloat16 kernel for it.
class Repacker {
public:
  explicit Repacker(torch::jit::Graph& graph) : graph_(graph) {}

  // The constant to read instead of `value`, or nullptr to keep it.
  Value* replacement(Value* value, Node* user) {
    const auto constant = torch::jit::toIValue(value);
    if (!constant || !constant->isCustomClass()) {
      return nullptr;
    }
    const c10::TypePtr type = constant->type();
    c10::IValue repacked;
    if (type == c10::getCustomClassType<c10::intrusive_ptr<ops::PackedLinearWeight>>()) {
      repacked = linear(constant->toCustomClass<ops::PackedLinearWeight>());
    } else if (type == c10::getCustomClassType<c10::intrusive_ptr<ops::PackedConvWeight>>()) {
      repacked = conv(constant->toCustomClass<ops::PackedConvWeight>());
    }
    if (repacked.isNone()) {
      return nullptr;
    }
    torch::jit::WithInsertPoint insert(user);
    return graph_.insertConstant(repacked);
  }

private:
  // The bfloat16 holder of `weight` (a PackedLinearWeight or PackedConvWeight), made once per
  // packed weight; None to keep it: already bfloat16, not worth it, or no bfloat16 kernel.
  template <typename Holder, typename Packed, typename Repack>
  static c10::IValue repacked(const c10::intrusive_ptr<Holder>& weight,
                              std::unordered_map<const Packed*, c10::intrusive_ptr<Holder>>& done,
                              bool worth_it, Repack repack) {
    if (ops::multiplyPrecision(*weight->packed) == kBFloat16 || !worth_it) {
      return {};
    }
    auto& holder = done[weight->packed.get()];
    if (!holder) {
      auto packed = repack(*weight->packed, kBFloat16);
      if (!packed) {
        return {};
      }
      holder = c10::make_intrusive<Holder>(std::move(packed));
    }
    return c10::IValue(holder);
  }

  c10::IValue linear(const c10::intrusive_ptr<ops::PackedLinearWeight>& weight) {
    return repacked(weight, linear_, true, ops::repackOneDnnWeight);
  }

  c10::IValue conv(const c10::intrusive_ptr<ops::PackedConvWeight>& weight) {
    return repacked(weight, conv_, ops::bfloat16Pays(*weight->packed), ops::repackConvWeight);
  }

  torch::jit::Graph& graph_;
  std::unordered_map<const ops::OneDnnPackedWeight*, c10::intrusive_ptr<ops::PackedLinearWeight>>
      linear_;
  std::unordered_map<const ops::OneDnnConvWeight*, c10::intrusive_ptr<ops::PackedConvWeight>> conv_;
};

} // namespace

bool useBFloat16Weights(GraphPtr& graph) {
  if (!ops::cpuMultipliesBFloat16()) {
    return false;
  }
  Repacker repacker(*graph);
  bool changed = false;
  forEachNode(graph->block(), [&](Node* node) {
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      if (Value* bf16 = repacker.replacement(node->input(i), node)) {
        node->replaceInput(i, bf16);
        changed = true;
      }
    }
  });
  return changed;
}

} // namespace srt::passes
