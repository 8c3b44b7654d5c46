// 2-D and 3-D convolution, and transposed convolution, on oneDNN: the weight reordered once,
// when the module is built, into the blocked layout oneDNN's primitive prefers, shared read-only
// by every runtime; per runtime and input shape a cached primitive; oneDNN's scratchpad and any
// activation reorders in the node's planned scratch; an optional epilogue (a residual added, then
// an activation) as post-ops.
#pragma once

#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>

#include "ops/core/kernel.h"
#include "ops/core/multiply_precision.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {

constexpr int kMaxConvSpatialDims = 3;

// Channels per block of oneDNN's channel-blocked activation layout on AVX-512 (nChw16c): a
// blocked tensor of [N, C, H, W] is the contiguous [N, ceil(C / 16), H, W, 16], channel c at
// block c / 16, lane c % 16; the lanes past C are padding (ops/conv/blocked_layout.h).
constexpr int64_t kChannelBlock = 16;

// A convolution's constant arguments: aten::conv2d/conv3d's stride, padding, dilation, groups;
// aten::conv_transpose2d/3d's also output_padding. Entries past spatial_dims are unused.
struct ConvArguments {
  int spatial_dims = 2; // 2 or 3: the input is [N, C, H, W] or [N, C, D, H, W]
  int64_t stride[kMaxConvSpatialDims] = {1, 1, 1};
  int64_t padding[kMaxConvSpatialDims] = {0, 0, 0};
  int64_t dilation[kMaxConvSpatialDims] = {1, 1, 1};
  int64_t groups = 1;
  bool transposed = false;
  int64_t output_padding[kMaxConvSpatialDims] = {0, 0, 0}; // transposed only

  bool operator==(const ConvArguments& o) const;
};

// What a fused convolution does to its result before anyone else sees it: first residual added
// (out = conv + residual, as `out += identity`), then the activation (one of the element-wise
// formulas, with its parameters).
struct ConvEpilogue {
  bool has_residual = false;
  std::optional<vec::UnaryOp> activation;
  vec::Params params;
};

// The activations a convolution can apply as a oneDNN post-op: relu, hardtanh/clamp (ReLU6),
// leaky_relu, sigmoid, tanh, silu, gelu, hardswish.
bool oneDnnConvTakes(vec::UnaryOp activation);

// Whether oneDNN's convolutions with `spatial_dims` (2 or 3) on this CPU want their activations
// channels last (NHWC / NDHWC), as brgconv on AVX-512 does; passes/channels_last.cpp keeps
// networks in that format then.
bool oneDnnConvPrefersChannelsLast(int spatial_dims);

struct OneDnnConvWeight;

// How a packed weight's convolutions compute: oneDNN's direct algorithm, or Winograd F(2x2, 3x3),
// which does 2.25x fewer multiplications on a 3x3 stride-1 convolution for a weight 16/9 the size
// and transforms of every 4x4 input and output tile.
enum class ConvAlgorithm { kDirect, kWinograd };

// The weight in PyTorch's layout, [OC, C / groups, k...] or, transposed, [C, OC / groups, k...]
// (float32, with arguments.spatial_dims kernel dims), packed for oneDNN, with its bias ([OC] or
// undefined); nullptr when oneDNN has no convolution for it.
std::shared_ptr<const OneDnnConvWeight>
packConvWeight(const at::Tensor& weight, const at::Tensor& bias, const ConvArguments& arguments);

// Whether Winograd suits the convolution of the direct-packed weight `packed` with `epilogue`:
// 3x3, stride 1, undilated, ungrouped, 2-D, with a channel count where it measured faster, and
// oneDNN has an implementation for it with this epilogue on this CPU.
bool winogradSuits(const OneDnnConvWeight& packed, const ConvEpilogue& epilogue);

// `packed` packed again for Winograd, where winogradSuits; passes/conv_winograd.cpp swaps it in.
std::shared_ptr<const OneDnnConvWeight> packForWinograd(const OneDnnConvWeight& packed);
ConvAlgorithm convAlgorithm(const OneDnnConvWeight& packed);

// `packed` packed again, for the direct algorithm, to multiply in `precision` (its values
// rounded to bfloat16 for kBFloat16; Winograd has no bfloat16 kernels); nullptr when oneDNN has
// no such convolution.
std::shared_ptr<const OneDnnConvWeight> repackConvWeight(const OneDnnConvWeight& packed,
                                                         MultiplyPrecision precision);
MultiplyPrecision multiplyPrecision(const OneDnnConvWeight& packed);

// Whether multiplying in bfloat16 makes this convolution faster: not a depthwise one, whose
// oneDNN kernel does one multiply-add per loaded value either way (efficientnet_b0's 16 at 1
// thread: 2.65 ms in bfloat16 against 2.54 in float32, before rounding their inputs).
bool bfloat16Pays(const OneDnnConvWeight& packed);

// Whether a convolution of `packed` can keep its activations channel-blocked
// (passes/blocked_layout.cpp): 2-D, not transposed, float32 products.
bool blockedLayoutSuits(const OneDnnConvWeight& packed);

// What its activations channel-blocked do for a convolution of `packed`:
//  - kFaster: depthwise and 1x1 ones, memory-bound, whose blocked kernels stream their tensors
//    better (mobilenet_v2's on an AMD EPYC, Zen 4, 1 thread: the 1x1 16 -> 96 at 112x112 429
//    against 660 us, its 3x3 depthwise 144-channel at 56x56 212 against 278), and Winograd ones
//    (oneDNN's Winograd reads and writes blocked tensors only);
//  - kLevel: grouped ones (as fast on either layout: a RegNet's or ResNeXt's, whose chains of 1x1s
//    they would otherwise split), and other dense ones of at most 128 channels: they keep a chain
//    blocked but do not make one worth it. A chain of dense ones alone, the small CNN's 3x3s (3 ->
//    16 -> 32 -> 64, strides 1, 2, 2, 64x64 images), ran 8% slower blocked than channels last at 1
//    thread and 15% at 2 (Intel Xeon, interleaved): brgconv's channels-last kernel suits strided
//    convolutions of few channels better than the blocked jit kernel (46-51 against 55-58 us
//    each);
//  - kNone: the compute-bound 3x3 of 256 and 512 channels, where brgconv's channels-last kernel is
//    4-10% faster (resnet18's layer3 and layer4 at batch 1).
enum class BlockedLayoutGain { kNone, kLevel, kFaster };
BlockedLayoutGain blockedLayoutGain(const OneDnnConvWeight& packed);

// `packed` stored in the layout oneDNN's kernels for channel-blocked activations read (its
// Winograd weight as it is); nullptr when oneDNN has no such convolution other than its reference
// one.
std::shared_ptr<const OneDnnConvWeight> packForBlockedActivations(const OneDnnConvWeight& packed);

// The packed weight back in PyTorch's layout (a new tensor), for the reference path of
// srt::packed_conv2d/3d; its bias and arguments as packed.
at::Tensor unpackConvWeight(const OneDnnConvWeight& packed);
const at::Tensor& convBias(const OneDnnConvWeight& packed);
const ConvArguments& convArguments(const OneDnnConvWeight& packed);
int64_t convInChannels(const OneDnnConvWeight& packed);
int64_t convOutChannels(const OneDnnConvWeight& packed);
// The kernel's extent along spatial dim `dim` (0: height).
int64_t convKernelSize(const OneDnnConvWeight& packed, int dim);

// How a convolution kernel lays out its output: as its input (contiguous or channels last),
// channels last whatever the input's layout (a stem reading NCHW, kChannelsLastOutput), or
// channel-blocked (srt::blocked_conv2d, whose input may be blocked or either plain layout).
enum class ConvOutputLayout { kAsInput, kChannelsLast, kBlocked };

// The kernel of a node whose inputs are (input, weight, bias, ...) with the weight and bias
// `packed`, and, when the epilogue has a residual, the residual as input `residual_input`. Runs
// oneDNN for a float32 input of the packed rank in contiguous or channels-last layout with the
// packed channel count (or, for kBlocked, channel-blocked), and `fallback` for anything else
// (other dtypes, strides, invalid shapes: ATen's own errors). Its output is laid out as `output`
// says; a residual is laid out as the output.
//
// With `scale_input` (else -1) the convolution is of input * scale, the scale one float32 factor
// per input channel, per image or shared ([N or 1, C, 1, 1] contiguous, blocked [N or 1, B, 1, 1,
// 16] for a blocked input; anything else: `fallback`). Where the weight holds at most twice an
// image's numbers (squeeze-excitation's projections: efficientnet_b0's 96 -> 24 at 56x56 has 2304
// against 301056), the kernel multiplies the weight's input channels, a oneDNN reorder into
// scratch (0.65 us there), not the image, and convolves image after image each with its own
// weight; else the product lands in scratch and is convolved.
KernelFunction makeOneDnnConvKernel(std::shared_ptr<const OneDnnConvWeight> packed,
                                    ConvEpilogue epilogue, int residual_input, int scale_input,
                                    ConvOutputLayout output, KernelFunction fallback);

// A convolution node's attribute (an int, 1) that passes/channels_last.cpp sets where the
// convolution reads its NCHW input as it is and writes channels last: the node's kernel then
// does both, so no conversion of the input runs before it.
constexpr const char* kChannelsLastOutput = "channels_last_output";

// Whether a 2-D convolution of `weight` ([16, C, kh, kw] float32 with C below 16, ungrouped: a
// network's stem) has a oneDNN kernel reading an NCHW input and writing channels last: its
// first-layer kernel reads the image's planes and writes blocks of 16 channels, which for 16
// output channels are the NHWC bytes. mobilenet_v3_small's stem (3 -> 16, stride 2, 224x224)
// on an AMD EPYC (Zen 4): 101.8 us so, against 108.8 on NHWC after a 42 us conversion.
bool oneDnnConvReadsPlainIntoChannelsLast(const at::Tensor& weight, const ConvArguments& arguments);

// Whether a depthwise convolution (weight [C * m, 1, kh, kw], groups C) of these arguments runs on
// oneDNN's depthwise kernels only once its padding is made explicit. oneDNN 2.6's jit_dw takes
// padding up to a few columns; beyond that (Conv-TasNet's dilated 1-D convolutions, padding =
// dilation = 8 ... 128) it picks im2col + GEMM, 2.4 ms for [512, 2001] where jit_dw on the padded
// input takes 0.4.
bool oneDnnDepthwiseWantsExplicitPadding(const at::Tensor& weight, const ConvArguments& arguments);

} // namespace srt::ops
