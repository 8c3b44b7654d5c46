// PyTorch's fused encoder-layer and multi-head-attention ops, which nn.TransformerEncoderLayer and
// nn.MultiheadAttention call on their inference fast path, and the nested-tensor ops with which
// nn.TransformerEncoder packs a padded batch for that path (a key-padding mask given) and pads it
// back. There is no out path for any of them (a nested tensor cannot live in a planned arena), so
// these native kernels call ATen directly: they allocate like the JIT does, minus the JIT stack
// (and, for the fused ops, the dispatcher).
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

const at::Tensor& tensorAt(const ProcessedNode& p, size_t i) {
  return p.input(i).toTensor();
}

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

c10::optional<int64_t> optionalInt(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<int64_t>(value.toInt());
}

void encoderLayer(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  p.output(0) = at::native::transformer_encoder_layer_forward(
      tensorAt(p, 0), p.input(1).toInt(), p.input(2).toInt(), tensorAt(p, 3), tensorAt(p, 4),
      tensorAt(p, 5), tensorAt(p, 6), p.input(7).toBool(), p.input(8).toBool(),
      p.input(9).toDouble(), tensorAt(p, 10), tensorAt(p, 11), tensorAt(p, 12), tensorAt(p, 13),
      tensorAt(p, 14), tensorAt(p, 15), tensorAt(p, 16), tensorAt(p, 17),
      optionalTensor(p.input(18)), optionalInt(p.input(19)));
}

void multiHeadAttention(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  auto [output, weights] = at::native::native_multi_head_attention(
      tensorAt(p, 0), tensorAt(p, 1), tensorAt(p, 2), p.input(3).toInt(), p.input(4).toInt(),
      tensorAt(p, 5), tensorAt(p, 6), tensorAt(p, 7), tensorAt(p, 8), optionalTensor(p.input(9)),
      p.input(10).toBool(), p.input(11).toBool(), optionalInt(p.input(12)));
  p.output(0) = std::move(output);
  p.output(1) = std::move(weights);
}

// Nested tensors have their own dispatch key: these go through the dispatcher to reach it.
void nestedFromMask(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  p.output(0) = at::_nested_tensor_from_mask(tensorAt(p, 0), tensorAt(p, 1), p.input(2).toBool());
}

void nestedFromMaskLeftAligned(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  p.output(0) = at::_nested_tensor_from_mask_left_aligned(tensorAt(p, 0), tensorAt(p, 1));
}

void toPaddedTensor(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  const c10::IValue& size_value = p.input(2);
  const std::vector<int64_t> size =
      size_value.isNone() ? std::vector<int64_t>() : size_value.toIntVector();
  p.output(0) = tensorAt(p, 0).to_padded_tensor(
      p.input(1).toDouble(),
      size_value.isNone() ? at::OptionalIntArrayRef() : at::OptionalIntArrayRef(size));
}

} // namespace

SRT_REGISTER_KERNEL("aten::_nested_tensor_from_mask", kNative,
                    whenMatches("aten::_nested_tensor_from_mask(Tensor t, Tensor mask, bool "
                                "mask_check=True) -> Tensor",
                                nestedFromMask));
SRT_REGISTER_KERNEL(
    "aten::_nested_tensor_from_mask_left_aligned", kNative,
    whenMatches("aten::_nested_tensor_from_mask_left_aligned(Tensor t, Tensor mask) -> bool",
                nestedFromMaskLeftAligned));
SRT_REGISTER_KERNEL("aten::to_padded_tensor", kNative,
                    whenMatches("aten::to_padded_tensor(Tensor self, float padding, int[]? "
                                "output_size=None) -> Tensor",
                                toPaddedTensor));
SRT_REGISTER_KERNEL(
    "aten::_transformer_encoder_layer_fwd", kNative,
    whenMatches(
        "aten::_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, "
        "Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool "
        "use_gelu, bool norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, "
        "Tensor norm_weight_2, Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, "
        "Tensor ffn_weight_2, Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> "
        "Tensor",
        encoderLayer));
SRT_REGISTER_KERNEL(
    "aten::_native_multi_head_attention", kNative,
    whenMatches("aten::_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int "
                "embed_dim, int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, "
                "Tensor proj_bias, Tensor? mask=None, bool need_weights=True, bool "
                "average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)",
                multiHeadAttention));

} // namespace srt::ops
