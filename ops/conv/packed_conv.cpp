#include "ops/conv/packed_conv.h"

#include <ATen/Functions.h>
#include <torch/library.h>

#include "ops/conv/blocked_layout.h"
#include "ops/conv/convolution.h"

namespace srt::ops {

const char* const kPackedConv2dSchema =
    "srt::packed_conv2d(Tensor input, __torch__.torch.classes.srt.ConvWeight weight, Tensor? bias, "
    "int[2] stride, int[2] padding, int[2] dilation, int groups, Tensor? residual, "
    "str activation, Scalar act_a, Scalar act_b) -> Tensor";
const char* const kPackedConv3dSchema =
    "srt::packed_conv3d(Tensor input, __torch__.torch.classes.srt.ConvWeight weight, Tensor? bias, "
    "int[3] stride, int[3] padding, int[3] dilation, int groups, Tensor? residual, "
    "str activation, Scalar act_a, Scalar act_b) -> Tensor";

const char* const kBlockedConv2dSchema =
    "srt::blocked_conv2d(Tensor input, __torch__.torch.classes.srt.ConvWeight weight, Tensor? "
    "bias, "
    "int[2] stride, int[2] padding, int[2] dilation, int groups, Tensor? residual, "
    "str activation, Scalar act_a, Scalar act_b) -> Tensor";

const char* const kScaledPackedConv2dSchema =
    "srt::scaled_packed_conv2d(Tensor input, __torch__.torch.classes.srt.ConvWeight weight, "
    "Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, int groups, Tensor? residual, "
    "str activation, Scalar act_a, Scalar act_b, Tensor scale) -> Tensor";
const char* const kScaledBlockedConv2dSchema =
    "srt::scaled_blocked_conv2d(Tensor input, __torch__.torch.classes.srt.ConvWeight weight, "
    "Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, int groups, Tensor? residual, "
    "str activation, Scalar act_a, Scalar act_b, Tensor scale) -> Tensor";

const char* const kBlockedConv2dDwSchema =
    "srt::blocked_conv2d_dw(Tensor input, __torch__.torch.classes.srt.ConvWeight weight, Tensor? "
    "bias, int[2] stride, int[2] padding, int[2] dilation, int groups, Tensor? residual, "
    "str activation, Scalar act_a, Scalar act_b, "
    "__torch__.torch.classes.srt.ConvWeight dw_weight, Tensor? dw_bias, int[2] dw_stride, "
    "int[2] dw_padding, int[2] dw_dilation, int dw_groups, Tensor? dw_residual, "
    "str dw_activation, Scalar dw_act_a, Scalar dw_act_b) -> Tensor";

c10::intrusive_ptr<PackedConvWeight> packConvWeightConstant(const at::Tensor& weight,
                                                            const at::Tensor& bias,
                                                            const ConvArguments& arguments) {
  std::shared_ptr<const OneDnnConvWeight> packed = packConvWeight(weight, bias, arguments);
  if (packed == nullptr) {
    return {};
  }
  return c10::make_intrusive<PackedConvWeight>(std::move(packed));
}

at::Tensor packedConvReference(const at::Tensor& input,
                               const c10::intrusive_ptr<PackedConvWeight>& weight,
                               const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                               const c10::optional<at::Tensor>& residual,
                               c10::string_view activation, const at::Scalar& act_a,
                               const at::Scalar& act_b) {
  TORCH_CHECK(weight, "srt::packed_conv: the packed weight is None");
  TORCH_CHECK(!bias.has_value(), "srt::packed_conv: the bias is part of the packed weight");
  TORCH_CHECK(!convArguments(*weight->packed).transposed,
              "srt::packed_conv: the packed weight is a transposed convolution's");
  const at::Tensor& packed_bias = convBias(*weight->packed);
  return fusedConvReference(input, unpackConvWeight(*weight->packed),
                            packed_bias.defined() ? c10::optional<at::Tensor>(packed_bias)
                                                  : c10::nullopt,
                            stride, padding, dilation, groups, residual, activation, act_a, act_b);
}

at::Tensor blockedConvReference(const at::Tensor& input,
                                const c10::intrusive_ptr<PackedConvWeight>& weight,
                                const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                                const c10::optional<at::Tensor>& residual,
                                c10::string_view activation, const at::Scalar& act_a,
                                const at::Scalar& act_b) {
  TORCH_CHECK(weight, "srt::blocked_conv2d: the packed weight is None");
  const int64_t out_channels = convOutChannels(*weight->packed);
  const at::Tensor plain_input =
      input.dim() == 5 ? fromBlocked(input, convInChannels(*weight->packed)) : input;
  const c10::optional<at::Tensor> plain_residual =
      residual ? c10::optional<at::Tensor>(fromBlocked(*residual, out_channels)) : c10::nullopt;
  return toBlocked(packedConvReference(plain_input, weight, bias, stride, padding, dilation, groups,
                                       plain_residual, activation, act_a, act_b));
}

namespace {

// What the JIT runs for srt::scaled_packed_conv2d / scaled_blocked_conv2d: the product the
// node replaced, then the convolution's reference (`Reference`).
template <auto Reference>
at::Tensor
scaledConvReference(const at::Tensor& input, const c10::intrusive_ptr<PackedConvWeight>& weight,
                    const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                    at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                    const c10::optional<at::Tensor>& residual, c10::string_view activation,
                    const at::Scalar& act_a, const at::Scalar& act_b, const at::Tensor& scale) {
  return Reference(at::mul(input, scale), weight, bias, stride, padding, dilation, groups, residual,
                   activation, act_a, act_b);
}

// What the JIT runs for srt::blocked_conv2d_dw: the two convolutions it fused, one after the other.
at::Tensor blockedConvDwReference(
    const at::Tensor& input, const c10::intrusive_ptr<PackedConvWeight>& weight,
    const c10::optional<at::Tensor>& bias, at::IntArrayRef stride, at::IntArrayRef padding,
    at::IntArrayRef dilation, int64_t groups, const c10::optional<at::Tensor>& residual,
    c10::string_view activation, const at::Scalar& act_a, const at::Scalar& act_b,
    const c10::intrusive_ptr<PackedConvWeight>& dw_weight, const c10::optional<at::Tensor>& dw_bias,
    at::IntArrayRef dw_stride, at::IntArrayRef dw_padding, at::IntArrayRef dw_dilation,
    int64_t dw_groups, const c10::optional<at::Tensor>& dw_residual, c10::string_view dw_activation,
    const at::Scalar& dw_act_a, const at::Scalar& dw_act_b) {
  const at::Tensor pointwise = blockedConvReference(input, weight, bias, stride, padding, dilation,
                                                    groups, residual, activation, act_a, act_b);
  return blockedConvReference(pointwise, dw_weight, dw_bias, dw_stride, dw_padding, dw_dilation,
                              dw_groups, dw_residual, dw_activation, dw_act_a, dw_act_b);
}

} // namespace

// The class first: the op's schema names it.
TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.class_<PackedConvWeight>("ConvWeight");
  m.def(torch::schema(kPackedConv2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        packedConvReference);
  m.def(torch::schema(kPackedConv3dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        packedConvReference);
  m.def(torch::schema(kBlockedConv2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        blockedConvReference);
  m.def(torch::schema(kScaledPackedConv2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        scaledConvReference<packedConvReference>);
  m.def(torch::schema(kScaledBlockedConv2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        scaledConvReference<blockedConvReference>);
  m.def(torch::schema(kBlockedConv2dDwSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        blockedConvDwReference);
}

} // namespace srt::ops
