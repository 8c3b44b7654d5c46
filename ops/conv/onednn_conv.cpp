// The kernel of a oneDNN convolution node: per input shape, our own loops where they are faster
// (blocked 1x1 and depthwise convolutions of small images, small channels-last images on our
// GEMM), else oneDNN's primitive, whole or in pieces over the runtime's own workers.
#include "ops/conv/onednn_conv.h"
#include "ops/conv/onednn_conv_internal.h"

#include <algorithm>

#include "ops/conv/blocked_layout.h"
#include "ops/conv/depthwise_blocked.h"
#include "ops/conv/pointwise_blocked.h"
#include "ops/conv/small_image_gemm.h"
#include "ops/conv/stem_conv.h"
#include "ops/conv/strided_winograd.h"
#include "ops/conv/winograd.h"
#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/elementwise/channel_scale.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace onednn_conv {

namespace {

// Every dimension's elements apart in memory: not an expanded tensor's stride 0, which a oneDNN
// memory descriptor does not describe.
bool stridesArePositive(const at::Tensor& x) {
  return std::all_of(x.strides().begin(), x.strides().end(),
                     [](int64_t stride) { return stride > 0; });
}

// Whether a convolution of `w` scales its weight's input channels rather than the image (each
// image's, convolved one image after the other): ungrouped, direct float32 (a reorder writes such
// weights with per-channel factors), and the weight at most twice an image's size (per number,
// the reorder took about 0.1 ns on an Intel Xeon, the image's product 0.25, and the convolution
// then reads the product back). A batch is convolved image by image then, which pays for large
// images only: mobilenet_v3_small's 14x14 ones at batch 8 ran 5% slower so (2 threads), while
// efficientnet_b0's from 28x28 up ran 5% faster (1 thread).
bool scalesWeight(const OneDnnConvWeight& w, int64_t batch, int64_t image_elements) {
  constexpr int64_t kMinImageElementsOfABatch = 100000;
  if ((batch > 1 && image_elements < kMinImageElementsOfABatch) || w.arguments.groups != 1 ||
      w.arguments.transposed || w.algorithm != ConvAlgorithm::kDirect || w.multiply != kF32) {
    return false;
  }
  int64_t weight_elements = w.out_channels * w.in_channels;
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    weight_elements *= w.kernel[i];
  }
  return weight_elements <= 2 * image_elements;
}

// The activation a blocked pointwise convolution (ops/conv/pointwise_blocked.h) applies in
// registers for `epilogue`'s: none, relu, the clamps (ReLU6), hardsigmoid and hardswish; nullopt
// for the others.
std::optional<pointwise::PointwiseActivation> pointwiseActivation(const ConvEpilogue& epilogue) {
  pointwise::PointwiseActivation activation;
  if (!epilogue.activation) {
    return activation;
  }
  switch (*epilogue.activation) {
  case vec::UnaryOp::kRelu:
    activation.lo = 0.f;
    return activation;
  case vec::UnaryOp::kClamp:
    activation.lo = epilogue.params.a;
    activation.hi = epilogue.params.b;
    return activation;
  case vec::UnaryOp::kClampMin:
    activation.lo = epilogue.params.a;
    return activation;
  case vec::UnaryOp::kClampMax:
    activation.hi = epilogue.params.b;
    return activation;
  case vec::UnaryOp::kHardsigmoid:
  case vec::UnaryOp::kHardswish:
    activation.shift = 3.f;
    activation.lo = 0.f;
    activation.hi = 6.f;
    activation.scale = 1.f / 6.f;
    activation.times_input = *epilogue.activation == vec::UnaryOp::kHardswish;
    return activation;
  default:
    return std::nullopt;
  }
}

// Floats between the output blocks' weights where the blocked pointwise loop can read `w` in
// place (an ungrouped 2-D 1x1 convolution of stride 1 without padding, float32 direct, its weight
// in ABcd16b16a or, for fewer than 16 input channels, Abcd16a: ops/conv/pointwise_blocked.h);
// else nullopt.
std::optional<int64_t> pointwiseWeightBlockStride(const OneDnnConvWeight& w) {
  const ConvArguments& a = w.arguments;
  if (!pointwise::blockedPointwiseAvailable() || a.spatial_dims != 2 || a.transposed ||
      a.groups != 1 || w.multiply != kF32 || w.algorithm != ConvAlgorithm::kDirect) {
    return std::nullopt;
  }
  for (int i = 0; i < 2; ++i) {
    if (w.kernel[i] != 1 || a.stride[i] != 1 || a.padding[i] != 0 || a.dilation[i] != 1) {
      return std::nullopt;
    }
  }
  constexpr int64_t kBlock = 16;
  const dnnl_memory_desc_t& md = w.desc.data;
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  if (md.ndims != 4 || md.format_kind != dnnl_blocked || md.offset0 != 0 ||
      md.padded_dims[0] != (w.out_channels + kBlock - 1) / kBlock * kBlock ||
      blocking.inner_blks[0] != kBlock) {
    return std::nullopt;
  }
  // Each output block's weight a dense [C (padded or not), 16] matrix.
  const bool rows_of_input_blocks =
      blocking.inner_nblks == 2 && blocking.inner_idxs[0] == 1 &&
      blocking.inner_blks[1] == kBlock && blocking.inner_idxs[1] == 0 &&
      md.padded_dims[1] % kBlock == 0 &&
      (md.padded_dims[1] == kBlock || blocking.strides[1] == kBlock * kBlock);
  const bool rows_of_inputs = blocking.inner_nblks == 1 && blocking.inner_idxs[0] == 0 &&
                              (md.padded_dims[1] == 1 || blocking.strides[1] == kBlock);
  if (!rows_of_input_blocks && !rows_of_inputs) {
    return std::nullopt;
  }
  const int64_t matrix = md.padded_dims[1] * kBlock;
  // One output block's stride is anyone's (oneDNN's is not always the dense one then).
  if (md.padded_dims[0] > kBlock && blocking.strides[0] != matrix) {
    return std::nullopt;
  }
  return matrix;
}

// Output channels per block of `w`'s packing where ops/conv/small_image_gemm.h can read it in
// place: a 2-D float32 direct ungrouped weight in Acdb16a, Acdb32a, Acdb48a or Acdb64a (blocks of
// output channels, each a dense [kh][kw][C][block] matrix), what oneDNN's brgconv packs for
// channels-last activations on AVX-512.
std::optional<int64_t> smallImageBlockWidth(const OneDnnConvWeight& w) {
  const ConvArguments& a = w.arguments;
  if (!blockedGemmRuns() || a.spatial_dims != 2 || a.transposed || a.groups != 1 ||
      w.multiply != kF32 || w.algorithm != ConvAlgorithm::kDirect) {
    return std::nullopt;
  }
  const dnnl_memory_desc_t& md = w.desc.data;
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  if (md.ndims != 4 || md.format_kind != dnnl_blocked || md.offset0 != 0 ||
      blocking.inner_nblks != 1 || blocking.inner_idxs[0] != 0) {
    return std::nullopt;
  }
  const int64_t width = blocking.inner_blks[0];
  const int64_t c = md.dims[1];
  const int64_t kw = md.dims[3];
  if (width % 16 != 0 || width > kBlockedGemmWidth || md.padded_dims[1] != c ||
      blocking.strides[1] != width || blocking.strides[3] != c * width ||
      blocking.strides[2] != kw * c * width) {
    return std::nullopt;
  }
  if (md.padded_dims[0] > width && blocking.strides[0] != md.dims[2] * kw * c * width) {
    return std::nullopt;
  }
  return width;
}

// Whether the blocked depthwise loop (ops/conv/depthwise_blocked.h) can run `w`'s convolutions,
// reading its weight in place: 2-D depthwise (one channel a group), 3x3 or 5x5, stride 1 or 2 both
// ways, padding kernel / 2, undilated, float32 direct, the weight in Abcde16a ([ceil(C/16)][K][K]
// [16], dense).
bool depthwiseReadsInPlace(const OneDnnConvWeight& w) {
  const ConvArguments& a = w.arguments;
  const int64_t k = w.kernel[0];
  if (a.spatial_dims != 2 || a.transposed || a.groups != w.in_channels ||
      w.out_channels != w.in_channels || w.multiply != kF32 ||
      w.algorithm != ConvAlgorithm::kDirect || w.kernel[1] != k || (k != 3 && k != 5) ||
      a.stride[1] != a.stride[0] || (a.stride[0] != 1 && a.stride[0] != 2)) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (a.padding[i] != k / 2 || a.dilation[i] != 1) {
      return false;
    }
  }
  const dnnl_memory_desc_t& md = w.desc.data;
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  return md.ndims == 5 && md.format_kind == dnnl_blocked && md.offset0 == 0 &&
         blocking.inner_nblks == 1 && blocking.inner_blks[0] == kChannelBlock &&
         blocking.inner_idxs[0] == 0 &&
         md.padded_dims[0] == (w.in_channels + kChannelBlock - 1) / kChannelBlock * kChannelBlock &&
         (md.padded_dims[0] == kChannelBlock || blocking.strides[0] == k * k * kChannelBlock) &&
         blocking.strides[3] == k * kChannelBlock && blocking.strides[4] == kChannelBlock;
}

// Whether the node's output already has `residual`'s storage and keeps it through this call: the
// memory plan put both in one slot (Kernel::writes_over_input). `residual` has the output's sizes
// and layout (checked before), so the output, holding as many bytes, is not reallocated.
bool writesOverResidual(ProcessedNode& p, const at::Tensor& residual) {
  const c10::IValue& output = p.output(0);
  if (!output.isTensor() || !output.toTensor().defined() || !output.toTensor().has_storage()) {
    return false;
  }
  const c10::Storage& storage = output.toTensor().storage();
  return residual.storage_offset() == 0 && storage.data() == residual.storage().data() &&
         storage.nbytes() >= residual.nbytes();
}

// Whether ops/conv/strided_winograd.h's loop may run `w`'s convolutions: 2-D, ungrouped, 3x3,
// stride 2, padding 1, undilated, float32 direct, of 16 input channels or more (fewer leave its
// products too short for their transforms) and at most 128 x 128 channel pairs: each band of
// tile rows reads the whole transformed weight (36 / 9 of the weight), which beyond that comes
// from memory at every band. Measured against oneDNN's direct kernels (1 thread, batch 1, AMD EPYC,
// Zen 5): the small CNN's 16 -> 32 and 32 -> 64 34 and 27 us against 37.5 and 36; resnet18's
// 64 -> 128 at 56x56 458 against 515, resnet50's 128 -> 128 740 against 1049; but resnet18's
// 128 -> 256 at 28x28 832 against 466 and resnet50's 256 -> 256 1334 against 948. Within these
// bounds the loop runs a shape where it measured faster than oneDNN (stridedWinogradFaster).
bool stridedWinogradRuns(const OneDnnConvWeight& w) {
  constexpr int64_t kMinInChannels = 16;
  constexpr int64_t kMaxChannelPairs = 128 * 128;
  const ConvArguments& a = w.arguments;
  if (!strided_winograd::stridedWinogradAvailable() || a.spatial_dims != 2 || a.transposed ||
      a.groups != 1 || w.multiply != kF32 || w.algorithm != ConvAlgorithm::kDirect ||
      w.in_channels < kMinInChannels || w.in_channels * w.out_channels > kMaxChannelPairs) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (w.kernel[i] != 3 || a.stride[i] != 2 || a.padding[i] != 1 || a.dilation[i] != 1) {
      return false;
    }
  }
  return true;
}

// Whether ops/conv/winograd.h's loop may run `w`'s convolutions: 2-D, ungrouped, 3x3, stride 1,
// padding 1, undilated, float32 (a direct weight or oneDNN's Winograd one), of 16 input channels
// or more and at most 64 x 64 channel pairs. Each band of tiles reads the whole transformed weight
// (4x the weight, held beside oneDNN's once the loop runs): at 64 x 64 channels it stays in L2,
// and the loop ran resnet18's 64-channel 3x3s at 56x56 in two thirds of oneDNN's Winograd time
// (a basic block, 1 thread: 1061 against 1491-1528 us; 32 channels at 112x112 1387 against 2134;
// AMD EPYC, Zen 5). At 128 x 128 channels (28x28) and 96 x 96 (20x20), where a band's weight
// comes from L3, the two measured level on one thread; resnet18's 128-channel layers split over 2
// workers ran 368-381 us against oneDNN's pieces' 467-481 (OMP_WAIT_POLICY=PASSIVE), but with
// their transformed weights held beside oneDNN's Winograd ones the network's peak memory growth
// during calls rose from 19.6 to 33.5 MB, past eager PyTorch's 22.7. Within these bounds the loop
// runs a shape where it measured faster than oneDNN (winogradLoopFaster).
bool winogradLoopRuns(const OneDnnConvWeight& w) {
  constexpr int64_t kMinInChannels = 16;
  constexpr int64_t kMaxChannelPairs = 64 * 64;
  const ConvArguments& a = w.arguments;
  if (!winograd::winogradAvailable() || a.spatial_dims != 2 || a.transposed || a.groups != 1 ||
      w.multiply != kF32 || w.in_channels < kMinInChannels ||
      w.in_channels * w.out_channels > kMaxChannelPairs) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (w.kernel[i] != 3 || a.stride[i] != 1 || a.padding[i] != 1 || a.dilation[i] != 1) {
      return false;
    }
  }
  return true;
}

// Whether ops/conv/stem_conv.h's loop may run `w`'s convolutions: 2-D, ungrouped, 3x3, stride 1
// or 2, undilated, float32 direct, of at most 4 input channels. Within these bounds the loop runs
// a shape where it measured faster than oneDNN (stemConvFaster).
bool stemConvApplies(const OneDnnConvWeight& w) {
  const ConvArguments& a = w.arguments;
  if (!stem_conv::stemConvAvailable() || a.spatial_dims != 2 || a.transposed || a.groups != 1 ||
      w.multiply != kF32 || w.algorithm != ConvAlgorithm::kDirect || a.stride[0] != a.stride[1] ||
      a.padding[0] != a.padding[1] ||
      !stem_conv::stemConvRuns(w.in_channels, a.stride[0], a.padding[0])) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (w.kernel[i] != stem_conv::kKernel || a.dilation[i] != 1) {
      return false;
    }
  }
  return true;
}

class OneDnnConv {
public:
  OneDnnConv(std::shared_ptr<const OneDnnConvWeight> weight, ConvEpilogue epilogue,
             int residual_input, int scale_input, ConvOutputLayout output, KernelFunction fallback)
      : weight_(std::move(weight)), residual_input_(residual_input), scale_input_(scale_input),
        output_(output), fallback_(std::move(fallback)) {
    EpilogueSplit split = splitEpilogue(*weight_, epilogue);
    epilogue_ = split.library;
    trailing_ = split.trailing;
    pointwise_weight_block_stride_ = pointwiseWeightBlockStride(*weight_);
    depthwise_in_place_ = depthwiseReadsInPlace(*weight_);
    small_image_block_width_ = smallImageBlockWidth(*weight_);
    strided_winograd_ = stridedWinogradRuns(*weight_);
    winograd_loop_ = winogradLoopRuns(*weight_);
    stem_conv_ = stemConvApplies(*weight_);
    if ((output_ == ConvOutputLayout::kBlocked &&
         (pointwise_weight_block_stride_ || depthwise_in_place_)) ||
        strided_winograd_ || winograd_loop_ || stem_conv_) {
      pointwise_activation_ = pointwiseActivation(epilogue_);
    }
  }

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(0).toTensor();
    const OneDnnConvWeight& w = *weight_;
    const int spatial_dims = w.arguments.spatial_dims;
    const at::MemoryFormat channels_last_format = channelsLastFormat(spatial_dims);
    const bool dst_blocked = output_ == ConvOutputLayout::kBlocked;
    // A channel-blocked input: [N, ceil(C / 16), H, W, 16], contiguous.
    const bool src_blocked = dst_blocked && spatial_dims == 2 && x.dim() == 5;
    if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.numel() == 0 ||
        (src_blocked ? !isBlocked(x, w.in_channels)
                     : x.dim() != spatial_dims + 2 || x.size(1) != w.in_channels)) {
      fallback_(p);
      return;
    }
    // A plain input that is neither contiguous nor channels last: a range of a batch's channels
    // (torch.chunk and split: every ShuffleNet block's second half, at batch 2 and above), read
    // in place by the reorder into the primitive's layout (the reference kernel took 2.5x the
    // convolution's time, its weight repacked each call). Expanded inputs (stride 0) and scaled
    // ones, which our own loops read as dense, stay with the reference.
    const bool src_strided =
        !src_blocked && !(x.is_contiguous() || x.is_contiguous(channels_last_format));
    if (src_strided && (scale_input_ >= 0 || !stridesArePositive(x))) {
      fallback_(p);
      return;
    }
    std::optional<ChannelScale> scale;
    if (scale_input_ >= 0) {
      scale = channelScale(x, p.input(scale_input_).toTensor());
      if (!scale) {
        fallback_(p);
        return;
      }
    }
    ConvKey key;
    key.src_strided = src_strided;
    if (src_strided) {
      std::copy(x.strides().begin(), x.strides().end(), key.src_strides);
    }
    key.src_blocked = src_blocked;
    key.dst_blocked = dst_blocked;
    key.batch = x.size(0);
    std::vector<int64_t> out_sizes{x.size(0), w.out_channels};
    // The work, in multiply-adds: every output element of a convolution reads a window of its
    // group's input channels; every input element of a transposed one writes one.
    int64_t multiply_adds = x.size(0) * (w.in_channels / w.arguments.groups) * w.out_channels;
    for (int i = 0; i < spatial_dims; ++i) {
      key.size[i] = x.size(2 + i);
      const int64_t out = outputSize(key.size[i], w.kernel[i], w.arguments, i);
      if (out <= 0) {
        fallback_(p); // ATen's error
        return;
      }
      out_sizes.push_back(out);
      multiply_adds *= w.kernel[i] * (w.arguments.transposed ? key.size[i] : out);
    }
    // An input that is contiguous both ways (one channel, or one pixel) is what its strides
    // suggest: channels last where the channels_last pass made it so (wav2vec2's waveform, one
    // channel, whose 512-channel output then stays channels last instead of being transposed
    // back: 4.1 -> 1.5 ms), contiguous as given (a grayscale NCHW image).
    // A strided one is channels last where its strides are ordered so.
    key.channels_last = !src_blocked && ((!src_strided && !x.is_contiguous()) ||
                                         x.suggest_memory_format() == channels_last_format);
    key.plain_into_channels_last = output_ == ConvOutputLayout::kChannelsLast && !key.channels_last;
    const bool out_channels_last =
        !dst_blocked && (key.channels_last || key.plain_into_channels_last);
    if (dst_blocked) {
      out_sizes = blockedSizes(out_sizes);
    }
    const at::Tensor* residual = nullptr;
    if (epilogue_.has_residual) {
      residual = &p.input(residual_input_).toTensor();
    }
    if (residual != nullptr &&
        (residual->scalar_type() != at::kFloat || residual->sizes() != out_sizes ||
         !residual->is_contiguous(out_channels_last ? channels_last_format
                                                    : at::MemoryFormat::Contiguous))) {
      fallback_(p);
      return;
    }
    // The memory plan may have given the output the residual's storage: our loops read each
    // residual element before they store the output's, and oneDNN's sum post-op adds what the
    // output holds; the small-image GEMM, which keeps partial sums in the output, is not taken.
    key.residual_in_place = residual != nullptr && writesOverResidual(p, *residual);
    // Our blocked loops run where the convolution runs on one thread; the 1x1 loop also splits
    // one image's output blocks over the runtime's own workers, where oneDNN's pieces would split
    // them too (a batch splits by images there): since the loop prefetches its weight, mobilenet_v2
    // 4-5% and efficientnet_b0 2-4% faster so at batch 1 (2 threads, OMP_WAIT_POLICY=PASSIVE, AMD
    // EPYC, Zen 5; before the prefetch mobilenet_v2 ran 1% slower split so, on an Intel Xeon).
    const int loop_threads =
        threadsFor(p.workers(), static_cast<double>(multiply_adds) * kNanosecondsPerMultiplyAdd);
    const bool own_loop_applies = pointwise_activation_ && src_blocked && loop_threads == 1;
    if (own_loop_applies && !scale && depthwise_in_place_ && !epilogue_.has_residual &&
        depthwise::blockedDepthwiseRuns(w.kernel[0], w.arguments.stride[0], key.size[1])) {
      runDepthwise(p, x, out_sizes);
      return;
    }
    const int64_t pixels = key.size[0] * key.size[1];
    if (pointwise_activation_ && src_blocked && pointwise_weight_block_stride_ &&
        (loop_threads == 1 ? pixels <= pointwise::kMaxPixels
                           : p.workers() != nullptr && key.batch < loop_threads &&
                                 pixels <= pointwise::kMaxSplitPixels)) {
      runPointwise(p, x, out_sizes, residual, scale, loop_threads);
      return;
    }
    if (strided_winograd_ && pointwise_activation_ && !scale &&
        (src_blocked || (out_channels_last && key.channels_last && !src_strided)) &&
        stridedWinogradChosen(p, key, x)) {
      runStridedWinograd(p, x, out_sizes, residual, loop_threads);
      return;
    }
    if (winograd_loop_ && pointwise_activation_ && !scale &&
        (src_blocked || (out_channels_last && key.channels_last && !src_strided)) &&
        winogradLoopChosen(p, key, x)) {
      runWinogradLoop(p, x, out_sizes, residual, loop_threads);
      return;
    }
    // A plain input of few channels into a blocked or channels-last output (a network's stem).
    if (stem_conv_ && pointwise_activation_ && !scale && residual == nullptr && !src_blocked &&
        !src_strided && x.is_contiguous() && (dst_blocked || out_channels_last) &&
        stemConvChosen(p, key, x, dst_blocked)) {
      runStem(p, x, out_sizes, dst_blocked, loop_threads);
      return;
    }
    // Few output pixels against the weight, in the whole batch: the product on our GEMM, which
    // prefetches the weight (ops/conv/small_image_gemm.h).
    if (small_image_block_width_ && !scale && !key.residual_in_place && out_channels_last &&
        spatial_dims == 2 && x.is_contiguous(channels_last_format) &&
        key.batch * out_sizes[2] * out_sizes[3] <= conv_gemm::kMaxPixels) {
      runSmallImage(p, x, out_sizes, residual);
      return;
    }
    // A Winograd weight on a small image: the direct algorithm, on a copy of the weight packed
    // for it (winogradPays).
    const OneDnnConvWeight& chosen = w.algorithm == ConvAlgorithm::kWinograd &&
                                             !winogradPays(key.batch * out_sizes[2] * out_sizes[3])
                                         ? directForm(w, dst_blocked)
                                         : w;
    runOneDnn(p, x, chosen, key, out_sizes, out_channels_last, channels_last_format, residual,
              scale, multiply_adds);
  }

private:
  // The convolution on oneDNN's primitives for `key`, with `w`: the node's weight or its
  // directForm.
  void runOneDnn(ProcessedNode& p, const at::Tensor& x, const OneDnnConvWeight& w, ConvKey& key,
                 const std::vector<int64_t>& out_sizes, bool out_channels_last,
                 at::MemoryFormat channels_last_format, const at::Tensor* residual,
                 const std::optional<ChannelScale>& scale, int64_t multiply_adds) const {
    key.scaled_weights = scale && scalesWeight(w, key.batch, x.numel() / key.batch);
    key.linear = !epilogue_.activation && !trailing_;
    WorkerPool* workers = p.workers();
    // Pieces: slabs of channels-last tensors, or a stem's rows (piecesFor).
    key.pieces = workers != nullptr ? piecesFor(w, key, multiply_adds, *workers) : 0;
    // Pieces run their primitives on one OpenMP thread each: the workers are the parallelism.
    const OneDnnThreads threads(multiply_adds, key.pieces > 0 ? 1 : at::get_num_threads());
    key.threads = threads.count();
    auto& state = p.state<OneDnnConvState>();
    if (!state.built || !(state.key == key)) {
      state.supported = false;
      if (key.pieces > 0) {
        buildPieces(state, key, w, epilogue_);
      }
      if (!state.supported) {
        // One primitive (on one thread, where pieces were wanted but oneDNN would not read the
        // slabs in place: rare, and still right).
        build(state, key, w, epilogue_, chooseLayout(w, key, epilogue_));
      }
    }
    if (!state.supported) {
      fallback_(p);
      return;
    }
    at::Tensor& out = out_channels_last ? outputChannelsLast(p, out_sizes, channels_last_format)
                                        : contiguousOutput(p, 0, out_sizes, x.options());
    // Scratch: [the state's | the scaled image, where the scale multiplies the image].
    const size_t product_bytes = scale && !key.scaled_weights ? x.numel() * sizeof(float) : 0;
    const size_t scratch_bytes = alignScratchOffset(state.scratch_bytes) + product_bytes;
    char* scratch = static_cast<char*>(scratch_bytes > 0 ? p.scratch(scratch_bytes) : nullptr);
    char* input = static_cast<char*>(x.data_ptr());
    const float* weight_scales = nullptr;
    int64_t scales_per_image = 0; // shared by the batch
    if (key.scaled_weights) {
      weight_scales = scale->factors;
      scales_per_image = scale->rows > 1 ? scale->row_length : 0;
    } else if (scale) {
      input = scratch + alignScratchOffset(state.scratch_bytes);
      scaleChannels(x, *scale, reinterpret_cast<float*>(input), workers);
    }
    const void* residual_data = residual != nullptr ? residual->data_ptr() : nullptr;
    if (!state.pieces.empty()) {
      runPieces(state, w, input, static_cast<char*>(out.data_ptr()),
                static_cast<const char*>(residual_data), scratch, trailing_, weight_scales,
                scales_per_image, *workers);
      return;
    }
    if (state.images > 0) {
      runImages(state, w, input, static_cast<char*>(out.data_ptr()),
                static_cast<const char*>(residual_data), scratch, std::nullopt, weight_scales,
                scales_per_image);
    } else {
      run(state, w, input, out.data_ptr(), residual_data, scratch, std::nullopt, weight_scales);
    }
    if (trailing_) {
      applyTrailing(*trailing_, out.data_ptr<float>(), out.numel());
    }
  }

  // The convolution in the blocked pointwise loop (pointwise_activation_ set; x blocked, of few
  // pixels), image by image, its output blocks split over `threads` of the runtime's workers. A
  // squeeze-excitation scale multiplies the image into scratch first, whichever operand
  // scalesWeight would scale for oneDNN: at 14x14 pixels or fewer the image's product is a few
  // microseconds (efficientnet_b0's 1152 -> 192 at 7x7: 118 us on oneDNN, 108 here;
  // mobilenet_v3_small 2.8% faster, efficientnet_b0 1.9%, at 1 thread on an AMD EPYC, Zen 5).
  void runPointwise(ProcessedNode& p, const at::Tensor& x, const std::vector<int64_t>& out_sizes,
                    const at::Tensor* residual, const std::optional<ChannelScale>& scale,
                    int threads) const {
    const OneDnnConvWeight& w = *weight_;
    const float* src = x.data_ptr<float>();
    if (scale) {
      auto* product = static_cast<float*>(p.scratch(x.numel() * sizeof(float)));
      scaleChannels(x, *scale, product, p.workers());
      src = product;
    }
    at::Tensor& out = contiguousOutput(p, 0, out_sizes, x.options());
    pointwise::BlockedPointwiseConv conv;
    conv.weight = static_cast<const float*>(w.storage.data_ptr());
    conv.weight_block_stride = *pointwise_weight_block_stride_;
    conv.bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
    conv.pixels = x.size(2) * x.size(3);
    conv.in_channels = w.in_channels;
    conv.out_channels = w.out_channels;
    conv.activation = *pointwise_activation_;
    const int64_t out_blocks = out_sizes[1];
    const int64_t src_image = x.size(1) * conv.pixels * kChannelBlock;
    const int64_t out_image = out_blocks * conv.pixels * kChannelBlock;
    const int64_t block_floats = conv.pixels * kChannelBlock;
    // Groups of the loop's output blocks per part (each part streams its own part of the weight),
    // the trailing activation applied to each part's blocks as it finishes them.
    const int64_t groups = (out_blocks + pointwise::kOutputBlocks - 1) / pointwise::kOutputBlocks;
    const int64_t parts = std::min<int64_t>(groups, threads);
    forEachPart(parts > 1 ? p.workers() : nullptr, groups, parts,
                [&](int64_t, int64_t first, int64_t last) {
                  const int64_t begin = first * pointwise::kOutputBlocks;
                  const int64_t end = std::min(out_blocks, last * pointwise::kOutputBlocks);
                  pointwise::BlockedPointwiseConv image = conv;
                  for (int64_t n = 0; n < x.size(0); ++n) {
                    image.src = src + n * src_image;
                    image.out = out.data_ptr<float>() + n * out_image;
                    image.residual =
                        residual != nullptr ? residual->data_ptr<float>() + n * out_image : nullptr;
                    pointwise::runBlockedPointwise(image, begin, end);
                    if (trailing_) {
                      vec::mapFast(trailing_->op, image.out + begin * block_floats,
                                   (end - begin) * block_floats, trailing_->params);
                    }
                  }
                });
  }

  // A Winograd loop's convolution of one image of x (at either stride), but for its tensors and
  // weight.
  winograd::WinogradConv winogradShape(const at::Tensor& x) const {
    const OneDnnConvWeight& w = *weight_;
    winograd::WinogradConv conv;
    conv.channels_last = x.dim() == 4;
    conv.bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
    conv.in_channels = w.in_channels;
    conv.out_channels = w.out_channels;
    conv.height = x.size(2);
    conv.width = x.size(3);
    conv.activation = *pointwise_activation_;
    return conv;
  }

  // Whether the stride-2 Winograd loop runs x's shape (stridedWinogradFaster), asked once for
  // each shape in a row this runtime meets.
  bool stridedWinogradChosen(ProcessedNode& p, const ConvKey& key, const at::Tensor& x) const {
    auto& chosen = p.state<OneDnnConvState>().strided_winograd_faster;
    if (!chosen || !(chosen->first == key)) {
      chosen.emplace(key, stridedWinogradFaster(*weight_, key, epilogue_, winogradShape(x)));
    }
    return chosen->second;
  }

  // The convolution in the stride-2 Winograd loop (strided_winograd_, pointwise_activation_ set;
  // x and the output blocked, or both channels last).
  void runStridedWinograd(ProcessedNode& p, const at::Tensor& x,
                          const std::vector<int64_t>& out_sizes, const at::Tensor* residual,
                          int threads) const {
    strided_winograd::StridedWinogradConv conv = winogradShape(x);
    conv.weight = stridedWinogradWeight(*weight_);
    runInTiles(p, x, out_sizes, residual, threads, conv, strided_winograd::tileRows(conv),
               strided_winograd::scratchFloats(conv), strided_winograd::runStridedWinograd);
  }

  // Whether the stride-1 Winograd loop runs x's shape (winogradLoopFaster), asked once for each
  // shape in a row this runtime meets.
  bool winogradLoopChosen(ProcessedNode& p, const ConvKey& key, const at::Tensor& x) const {
    auto& chosen = p.state<OneDnnConvState>().winograd_loop_faster;
    if (!chosen || !(chosen->first == key)) {
      chosen.emplace(key, winogradLoopFaster(*weight_, key, epilogue_, winogradShape(x)));
    }
    return chosen->second;
  }

  // The convolution in the stride-1 Winograd loop (winograd_loop_, pointwise_activation_ set; x
  // and the output blocked, or both channels last).
  void runWinogradLoop(ProcessedNode& p, const at::Tensor& x, const std::vector<int64_t>& out_sizes,
                       const at::Tensor* residual, int threads) const {
    winograd::WinogradConv conv = winogradShape(x);
    conv.weight = winogradLoopWeight(*weight_);
    runInTiles(p, x, out_sizes, residual, threads, conv, winograd::tiles(conv),
               winograd::scratchFloats(conv), winograd::runWinograd);
  }

  // A convolution in one of the Winograd loops, whose image description `conv` (all but its
  // tensors) `run` computes by ranges of an image's `units` (rows of output tiles at stride 2,
  // tiles at stride 1): the batch's units split over `threads` of the runtime's workers, each part
  // with its own scratch of `part_floats`.
  template <typename Run>
  void runInTiles(ProcessedNode& p, const at::Tensor& x, const std::vector<int64_t>& out_sizes,
                  const at::Tensor* residual, int threads, const winograd::WinogradConv& conv,
                  int64_t units, int64_t part_floats, Run run) const {
    at::Tensor& out = conv.channels_last
                          ? outputChannelsLast(p, out_sizes, at::MemoryFormat::ChannelsLast)
                          : contiguousOutput(p, 0, out_sizes, x.options());
    const int64_t parts = std::min<int64_t>(x.size(0) * units, threads);
    auto* scratch =
        static_cast<float*>(p.scratch(static_cast<size_t>(parts * part_floats) * sizeof(float)));
    const int64_t src_image = x.numel() / x.size(0);
    const int64_t out_image = out.numel() / x.size(0);
    forEachPartOfImageRows(parts > 1 ? p.workers() : nullptr, x.size(0), units, parts,
                           [&](int64_t part, int64_t n, int64_t first_row, int64_t last_row) {
                             winograd::WinogradConv image = conv;
                             image.src = x.data_ptr<float>() + n * src_image;
                             image.out = out.data_ptr<float>() + n * out_image;
                             image.residual = residual != nullptr
                                                  ? residual->data_ptr<float>() + n * out_image
                                                  : nullptr;
                             run(image, scratch + part * part_floats, first_row, last_row);
                           });
    if (trailing_) {
      applyTrailing(*trailing_, out.data_ptr<float>(), out.numel());
    }
  }

  // The stem loop's convolution of one image of x (plain), but for its tensors and weight.
  stem_conv::StemConv stemShape(const at::Tensor& x, bool dst_blocked) const {
    const OneDnnConvWeight& w = *weight_;
    stem_conv::StemConv conv;
    conv.channels_last_out = !dst_blocked;
    conv.bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
    conv.in_channels = w.in_channels;
    conv.out_channels = w.out_channels;
    conv.height = x.size(2);
    conv.width = x.size(3);
    conv.stride = w.arguments.stride[0];
    conv.padding = w.arguments.padding[0];
    conv.activation = *pointwise_activation_;
    return conv;
  }

  // Whether the stem loop runs x's shape (stemConvFaster), asked once for each shape in a row
  // this runtime meets.
  bool stemConvChosen(ProcessedNode& p, const ConvKey& key, const at::Tensor& x,
                      bool dst_blocked) const {
    auto& chosen = p.state<OneDnnConvState>().stem_conv_faster;
    if (!chosen || !(chosen->first == key)) {
      chosen.emplace(key, stemConvFaster(*weight_, key, epilogue_, stemShape(x, dst_blocked)));
    }
    return chosen->second;
  }

  // The convolution in the stem loop (stem_conv_, pointwise_activation_ set; x plain and
  // contiguous, the output blocked or channels last): the batch's output rows split over
  // `threads` of the runtime's workers.
  void runStem(ProcessedNode& p, const at::Tensor& x, const std::vector<int64_t>& out_sizes,
               bool dst_blocked, int threads) const {
    stem_conv::StemConv conv = stemShape(x, dst_blocked);
    conv.weight = stemConvWeight(*weight_);
    at::Tensor& out = dst_blocked
                          ? contiguousOutput(p, 0, out_sizes, x.options())
                          : outputChannelsLast(p, out_sizes, at::MemoryFormat::ChannelsLast);
    const int64_t rows = stem_conv::outputSize(conv, conv.height);
    const int64_t parts = std::min<int64_t>(x.size(0) * rows, threads);
    const int64_t src_image = x.numel() / x.size(0);
    const int64_t out_image = out.numel() / x.size(0);
    forEachPartOfImageRows(parts > 1 ? p.workers() : nullptr, x.size(0), rows, parts,
                           [&](int64_t, int64_t n, int64_t first_row, int64_t last_row) {
                             stem_conv::StemConv image = conv;
                             image.src = x.data_ptr<float>() + n * src_image;
                             image.out = out.data_ptr<float>() + n * out_image;
                             stem_conv::runStemConv(image, first_row, last_row);
                           });
    if (trailing_) {
      applyTrailing(*trailing_, out.data_ptr<float>(), out.numel());
    }
  }

  // The convolution as im2col products on the blocked GEMM (small_image_block_width_ set; x and
  // the output channels last, few output pixels an image).
  void runSmallImage(ProcessedNode& p, const at::Tensor& x, const std::vector<int64_t>& out_sizes,
                     const at::Tensor* residual) const {
    const OneDnnConvWeight& w = *weight_;
    const ConvArguments& a = w.arguments;
    at::Tensor& out = outputChannelsLast(p, out_sizes, at::MemoryFormat::ChannelsLast);
    conv_gemm::SmallImageConv conv;
    conv.src = x.data_ptr<float>();
    conv.batch = x.size(0);
    conv.channels = x.size(1);
    conv.height = x.size(2);
    conv.width = x.size(3);
    for (int i = 0; i < 2; ++i) {
      conv.kernel[i] = w.kernel[i];
      conv.stride[i] = a.stride[i];
      conv.padding[i] = a.padding[i];
      conv.dilation[i] = a.dilation[i];
    }
    conv.out_height = out_sizes[2];
    conv.out_width = out_sizes[3];
    conv.out_channels = w.out_channels;
    conv.weight = static_cast<const float*>(w.storage.data_ptr());
    conv.block_width = *small_image_block_width_;
    conv.block_stride = conv.block_width * w.kernel[0] * w.kernel[1] * w.in_channels;
    conv.bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
    conv.residual = residual != nullptr ? residual->data_ptr<float>() : nullptr;
    conv.activation = trailing_ ? std::optional(trailing_->op) : epilogue_.activation;
    conv.params = trailing_ ? trailing_->params : epilogue_.params;
    conv.out = out.data_ptr<float>();
    const int64_t scratch_floats = conv_gemm::scratchFloats(conv);
    float* scratch =
        scratch_floats > 0
            ? static_cast<float*>(p.scratch(static_cast<size_t>(scratch_floats) * sizeof(float)))
            : nullptr;
    conv_gemm::run(conv, scratch, p.workers());
  }

  // The convolution in the blocked depthwise loop (depthwise_in_place_, pointwise_activation_
  // set; x blocked, rows the loop has a build for), image by image on the calling thread.
  void runDepthwise(ProcessedNode& p, const at::Tensor& x,
                    const std::vector<int64_t>& out_sizes) const {
    const OneDnnConvWeight& w = *weight_;
    at::Tensor& out = contiguousOutput(p, 0, out_sizes, x.options());
    depthwise::BlockedDepthwiseConv conv;
    conv.weight = static_cast<const float*>(w.storage.data_ptr());
    conv.bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
    conv.channels = w.in_channels;
    conv.height = x.size(2);
    conv.width = x.size(3);
    conv.kernel = w.kernel[0];
    conv.stride = w.arguments.stride[0];
    conv.activation = *pointwise_activation_;
    const int64_t blocks = x.size(1);
    const int64_t src_image = x.numel() / x.size(0);
    const int64_t out_image = out.numel() / x.size(0);
    for (int64_t n = 0; n < x.size(0); ++n) {
      conv.src = x.data_ptr<float>() + n * src_image;
      conv.out = out.data_ptr<float>() + n * out_image;
      depthwise::runBlockedDepthwise(conv, 0, blocks);
    }
    if (trailing_) {
      applyTrailing(*trailing_, out.data_ptr<float>(), out.numel());
    }
  }

  // Last run's output 0 in channels-last layout, or a new one.
  static at::Tensor& outputChannelsLast(ProcessedNode& p, at::IntArrayRef sizes,
                                        at::MemoryFormat format) {
    at::Tensor& out = outputTensor(p, 0, at::TensorOptions().dtype(at::kFloat));
    at::native::resize_(out, sizes, format);
    return out;
  }

  std::shared_ptr<const OneDnnConvWeight> weight_;
  ConvEpilogue epilogue_; // what oneDNN computes
  std::optional<TrailingActivation> trailing_;
  int residual_input_;
  int scale_input_; // srt::scaled_*_conv2d's factors, or -1
  ConvOutputLayout output_;
  KernelFunction fallback_;
  // Where our blocked loops can run this convolution: the pointwise loop's weight block stride
  // (pointwiseWeightBlockStride), whether the depthwise loop reads the weight
  // (depthwiseReadsInPlace), and the activation either applies in registers (pointwiseActivation;
  // nullopt where neither runs or the activation is another).
  std::optional<int64_t> pointwise_weight_block_stride_;
  bool depthwise_in_place_ = false;
  bool strided_winograd_ = false; // stridedWinogradRuns
  bool winograd_loop_ = false;    // winogradLoopRuns
  bool stem_conv_ = false;        // stemConvApplies
  std::optional<pointwise::PointwiseActivation> pointwise_activation_;
  // The weight's output channels per block where small images run on the blocked GEMM
  // (smallImageBlockWidth), else nullopt.
  std::optional<int64_t> small_image_block_width_;
};

} // namespace

} // namespace onednn_conv

using namespace onednn_conv;

KernelFunction makeOneDnnConvKernel(std::shared_ptr<const OneDnnConvWeight> packed,
                                    ConvEpilogue epilogue, int residual_input, int scale_input,
                                    ConvOutputLayout output, KernelFunction fallback) {
  return OneDnnConv(std::move(packed), epilogue, residual_input, scale_input, output,
                    std::move(fallback));
}

} // namespace srt::ops
