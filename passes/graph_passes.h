// The optimization passes, one file each; passes/pipeline.cpp decides their order.
// Each rewrites `graph` in place and returns whether it changed anything; each leaves a graph
// that lints and computes the same results.
#pragma once

#include <memory>

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace srt::passes {

using GraphPtr = std::shared_ptr<torch::jit::Graph>;

// LibTorch's common-subexpression elimination: one node per distinct pure computation.
bool eliminateCommonSubexpressions(GraphPtr& graph);

// LibTorch's dead-code elimination: drops nodes whose results nobody uses.
bool eliminateDeadCode(GraphPtr& graph);

// A two-operand einsum that is one batched matrix product -> permutes + aten::matmul
// (einsum_lowering.cpp).
bool lowerEinsums(GraphPtr& graph);

// softmax(q @ kᵀ * scale [+ mask]) @ v -> srt::attention (passes/attention_fusion.cpp).
bool fuseAttention(GraphPtr& graph);

// QKV linears + head split + srt::attention + head merge -> srt::multi_head_attention, with the
// three weights concatenated into one constant (passes/multi_head_attention_fusion.cpp).
bool fuseMultiHeadAttention(GraphPtr& graph);
// What only depends on constants (`w.t()`, `w * 0.125`, `cat([wq, wk, wv])`) computed once, at
// build time, where LibTorch's constant propagation left it (constant_folding.cpp).
bool foldConstants(GraphPtr& graph);

// conv1d/2d/3d with padding="same" or "valid" and a constant weight -> the same op with numeric
// padding (and constant_pad_nd where "same" is asymmetric) (conv_padding_modes.cpp).
bool spellOutConvPaddingModes(GraphPtr& graph);

// BatchNorm after a convolution folded into the convolution's weight and bias (LibTorch's
// FoldFrozenConvBatchnorm; constant_folding.cpp).
bool foldConvBatchNorm(GraphPtr& graph);

// A multiplication, division, addition or subtraction by a constant of one value per output
// channel ([1, C, 1, 1] or a number) after a convolution, folded into its weight and bias: a
// BatchNorm written out as an affine (torchvision's FrozenBatchNorm2d in its detection backbones,
// `x * scale + shift`, and the many hand-written ones). LibTorch's FoldFrozenConvMulOrDiv and
// FoldFrozenConvAddOrSub; constant_folding.cpp.
bool foldConvAffines(GraphPtr& graph);

// linear + relu / gelu / sigmoid / tanh / silu as one srt::fused_linear (linear_activation.cpp).
bool fuseLinearActivation(GraphPtr& graph);

// group_norm or eval-mode batch_norm + relu / gelu / sigmoid / tanh / silu as one
// srt::group_norm_activation / srt::batch_norm_activation (norm_activation.cpp).
bool fuseNormActivation(GraphPtr& graph);

// linear (or fused_linear) + add(residual) as one srt::fused_linear (gemm_residual_add.cpp).
bool fuseGemmResidualAdd(GraphPtr& graph);

// conv2d/3d [+ residual add] [+ relu / hardtanh / silu / hardswish / ...] as one
// srt::fused_conv2d/3d (conv_fusion.cpp).
bool fuseConvEpilogues(GraphPtr& graph);

// conv1d with a constant weight -> unsqueeze + conv2d + squeeze, for the oneDNN kernel
// (conv1d_lowering.cpp).
bool lowerConv1d(GraphPtr& graph);

// A depthwise conv2d whose padding oneDNN's depthwise kernels do not take -> constant_pad_nd +
// the conv2d unpadded (depthwise_explicit_padding.cpp).
bool padDepthwiseExplicitly(GraphPtr& graph);

// Ops ATen computes through other ops -> those ops: 1-D pooling as 2-D pooling over a height of
// one, selu as elu (aten_decompositions.cpp).
bool decomposeAtenOps(GraphPtr& graph);

// Hand-written activations (x * sigmoid(x), x * relu6(x + 3) / 6, relu6(x + 3) / 6,
// x * hardsigmoid(x), clamp(min=0)) -> silu / hardswish / hardsigmoid / relu
// (activation_idioms.cpp).
bool rewriteActivationIdioms(GraphPtr& graph);

// A convolution network's activations kept channels last from convolution to convolution, as
// oneDNN's convolutions want them, with explicit aten::contiguous where the format changes
// (channels_last.cpp).
bool useChannelsLast(GraphPtr& graph);

// Convolutions with a constant weight -> srt::packed_conv2d/3d on one constant holding the
// weight packed for oneDNN; the plain weight constants become dead (conv_weight_packing.cpp).
bool packConvWeights(GraphPtr& graph);

// srt::packed_conv2d whose convolution oneDNN's Winograd computes faster -> the same node on a
// constant packed for Winograd (conv_winograd.cpp).
bool useWinogradConvolutions(GraphPtr& graph);

// Chains of srt::packed_conv2d with their activations in oneDNN's channel-blocked layout:
// srt::blocked_conv2d, conversions where something else reads them (blocked_layout.cpp).
bool useBlockedLayout(GraphPtr& graph);

// aten::mul(image, scale) feeding a packed or blocked convolution, the scale computed from a
// global pooling (squeeze-excitation) -> srt::scaled_packed_conv2d / scaled_blocked_conv2d, which
// scales the weight instead of the image where that is less work (conv_channel_scale.cpp).
bool fuseConvChannelScales(GraphPtr& graph);

// A blocked 1x1 convolution whose one reader is a blocked depthwise one -> srt::blocked_conv2d_dw,
// which oneDNN computes as one primitive where the expanded image would leave the caches
// (pointwise_depthwise_fusion.cpp).
bool fusePointwiseDepthwise(GraphPtr& graph);

// aten::linear / srt::fused_linear with a constant weight -> srt::fused_linear.packed on one
// constant holding the weight packed for oneDNN; the plain weight constants become dead
// (linear_weight_packing.cpp).
bool packLinearWeights(GraphPtr& graph);

// Packed linear and convolution weights packed again as bfloat16, for kernels that multiply in
// bfloat16 (bf16_weights.cpp; only with StaticModuleOptions::fp32_precision = "bf16").
bool useBFloat16Weights(GraphPtr& graph);

// transpose(-2, -1) / t / permute feeding mm, matmul or bmm, and a constant scale of the result,
// folded into one srt::gemm (transpose_absorption.cpp).
bool absorbTransposes(GraphPtr& graph);
// chunk/split/unbind whose list is only unpacked -> one node with one output per piece.
bool fuseListUnpack(GraphPtr& graph);

// cat/stack of a list built only for them -> srt::variadic_cat/stack on the tensors themselves.
bool useVariadicCatStack(GraphPtr& graph);

// ShuffleNet's channel shuffle written out (x.view(b, g, c // g, h, w).transpose(1, 2)
// .contiguous().view(b, -1, h, w)) as aten::channel_shuffle(x, g) (channel_shuffle_fusion.cpp).
bool fuseChannelShuffles(GraphPtr& graph);

// Views a reader would copy anyway (permute before reshape/matmul, reshape of a transpose)
// -> srt::permute_copy / reshape_copy / flatten_copy into planned memory.
bool useCopyVariants(GraphPtr& graph);

// detach, contiguous of a contiguous tensor, to() of the same dtype, identity reshapes -> input.
bool removeNoOps(GraphPtr& graph);

// aten::to and strided reshapes -> copy into planned memory only when they must copy.
bool useMaybeCopyVariants(GraphPtr& graph);
// Element-wise fusion: chains of element-wise ops whose intermediates nothing else uses become
// one srt::fused_elementwise node (passes/elementwise_fusion.cpp).
bool fuseElementwiseChains(GraphPtr& graph);

// nn.TransformerEncoderLayer's fast-path op (aten::_transformer_encoder_layer_fwd) with constant
// weights -> layer_norm, srt::multi_head_attention and srt::fused_linear on pre-packed weights
// (encoder_layer_decomposition.cpp).
bool decomposeEncoderLayers(GraphPtr& graph);
// nn.MultiheadAttention(x, x, x, need_weights=False) as scripted (fast-path op, slow path and the
// checks between them) -> srt::multi_head_attention + linear (multihead_attention_module.cpp).
bool fuseMultiheadAttentionModules(GraphPtr& graph);

// aten::dim of a tensor whose rank the graph fixes -> a constant, and the checks on it folded
// (rank_folding.cpp).
bool foldKnownRanks(GraphPtr& graph);

// aten::size(t, d) -> a constant where the graph fixes the size (size_folding.cpp).
bool foldKnownSizes(GraphPtr& graph);

// Hand-written layer norm (mean, variance, root, affine) as one aten::layer_norm.
bool fuseLayerNorm(GraphPtr& graph);

} // namespace srt::passes
