// A oneDNN convolution split into pieces over the runtime's own workers, each a primitive of its
// own on a slab of the tensors: by images, rows or output channels of channels-last activations;
// by images, output or input channel blocks, or rows of channel-blocked ones.
#include "ops/conv/onednn_conv_internal.h"

#include <algorithm>

#include "ops/core/onednn_engine.h"
#include "ops/core/parallelism.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace onednn_conv {

namespace {

// The dim (0: batch, 2 + i: spatial i) along which a convolution of `whole` splits into `pieces`
// slabs contiguous in channels-last tensors: the batch where it has that many images, else the
// first spatial dim with that many output rows and no dim before it longer than one; -1: none.
int splitDim(const ConvShape& whole, int pieces) {
  if (whole.dst[0] >= pieces) {
    return 0;
  }
  if (whole.dst[0] != 1) {
    return -1;
  }
  for (size_t d = 2; d < whole.dst.size(); ++d) {
    if (whole.dst[d] >= pieces) {
      return static_cast<int>(d);
    }
    if (whole.dst[d] != 1 || whole.src[d] != 1) {
      return -1;
    }
  }
  return -1;
}

// Bytes from one index of `dim` to the next in a channels-last float32 tensor of `dims`.
size_t channelsLastStride(const Dims& dims, int dim) {
  int64_t elements = dims[1];
  for (auto d = static_cast<size_t>(std::max(dim + 1, 2)); d < dims.size(); ++d) {
    elements *= dims[d];
  }
  return static_cast<size_t>(elements) * sizeof(float);
}

// Output channels a piece of one image's Winograd convolution keeps at least (piecesFor).
constexpr int64_t kMinWinogradSliceChannels = 64;

// How a channel-blocked convolution splits into pieces whose slabs are contiguous: by images, or,
// for one image, by blocks of output channels (a depthwise one's input blocks with them, so its
// input must be blocked too), or, where the output is one block (a 16-channel stem, depthwise
// layer or squeeze), by rows (of an input that is one block too, channels last, or plain: each
// piece then copies its rows of every channel).
enum class BlockedSplit { kNone, kImages, kChannelBlocks, kInputChannelBlocks, kRows };

// Channels [begin, end) of `channels` that piece k of `pieces` takes, in whole blocks.
std::pair<int64_t, int64_t> blockRange(int64_t channels, int k, int pieces) {
  const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock;
  return {kChannelBlock * (blocks * k / pieces),
          std::min(channels, kChannelBlock * (blocks * (k + 1) / pieces))};
}

// The largest share of `channels` one of `pieces` block ranges holds.
double largestShare(int64_t channels, int pieces) {
  int64_t largest = 0;
  for (int k = 0; k < pieces; ++k) {
    const auto [begin, end] = blockRange(channels, k, pieces);
    largest = std::max(largest, end - begin);
  }
  return static_cast<double>(largest) / static_cast<double>(channels);
}

// Whether one image's channel-blocked convolution splits better by input channel blocks, each
// piece convolving its blocks into a partial sum that is added into the output after, than by
// output channel blocks. That pays where the output has fewer blocks than pieces, or blocks that
// split unevenly: mobilenet_v2's projections (32 -> 16 channels at 112x112, 96 or 144 -> 24 at
// 56x56, one and a half blocks) ran on one thread, or 16 channels against 8. The partial sums
// are added in a pass over the output that costs about as much as kAddInMultiplyAdds
// multiply-adds an output (memory-bound: 19 us for 16 x 112 x 112 floats against 38 for the
// 16 -> 16 convolution making them, Intel Xeon, 1 thread). Only for sums nothing nonlinear
// follows (ConvKey::linear), and weights small enough that their slices' copy (kept beside the
// packed weight, once for every runtime) costs little.
bool splitsInputChannels(const OneDnnConvWeight& w, const ConvKey& key, int pieces) {
  constexpr double kAddInMultiplyAdds = 4;
  constexpr size_t kMostSlicedWeightBytes = 256 << 10;
  const int64_t in_blocks = (w.in_channels + kChannelBlock - 1) / kChannelBlock;
  if (!key.linear || key.batch != 1 || !key.src_blocked || in_blocks < pieces ||
      w.arguments.groups != 1 || w.arguments.transposed || w.algorithm != ConvAlgorithm::kDirect ||
      w.multiply != kF32 || w.desc.get_size() > kMostSlicedWeightBytes) {
    return false;
  }
  int64_t multiply_adds_per_output = w.in_channels;
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    multiply_adds_per_output *= w.kernel[i];
  }
  const int64_t out_blocks = (w.out_channels + kChannelBlock - 1) / kChannelBlock;
  const double by_output = out_blocks >= pieces ? largestShare(w.out_channels, pieces) : 1.0;
  const double by_input =
      largestShare(w.in_channels, pieces) +
      kAddInMultiplyAdds * (pieces - 1) / (static_cast<double>(pieces) * multiply_adds_per_output);
  return by_input < by_output;
}

BlockedSplit blockedSplit(const OneDnnConvWeight& w, const ConvKey& key, int pieces) {
  if (key.batch >= pieces) {
    return BlockedSplit::kImages;
  }
  if (splitsInputChannels(w, key, pieces)) {
    return BlockedSplit::kInputChannelBlocks;
  }
  const bool depthwise = w.arguments.groups > 1 && w.arguments.groups == w.in_channels;
  const int64_t blocks = (w.out_channels + kChannelBlock - 1) / kChannelBlock;
  if (key.batch == 1 && blocks >= pieces &&
      (w.arguments.groups == 1 || (depthwise && key.src_blocked))) {
    return BlockedSplit::kChannelBlocks;
  }
  if (key.batch == 1 && blocks == 1 && (!key.src_blocked || w.in_channels <= kChannelBlock) &&
      wholeShape(w, key).dst[2] >= pieces) {
    return BlockedSplit::kRows;
  }
  return BlockedSplit::kNone;
}

// Bytes of one image of a float32 tensor of `dims`, channel-blocked or not.
size_t imageBytes(const Dims& dims, bool blocked) {
  int64_t elements =
      blocked ? (dims[1] + kChannelBlock - 1) / kChannelBlock * kChannelBlock : dims[1];
  for (size_t d = 2; d < dims.size(); ++d) {
    elements *= dims[d];
  }
  return static_cast<size_t>(elements) * sizeof(float);
}

// `w` restricted to output channels [begin, end) (a depthwise one's groups with them): views of
// its weight and bias, described as the layout a primitive of those channels reads where the
// whole's slice is that layout (oneDNN's blocked weights keep output blocks outermost), which
// weightIn then uses in place.
std::shared_ptr<const OneDnnConvWeight> outputChannelSlice(const OneDnnConvWeight& w, int64_t begin,
                                                           int64_t end) {
  auto slice = std::make_shared<OneDnnConvWeight>(w); // arguments, kernel, precision
  const bool depthwise = w.arguments.groups > 1;
  slice->out_channels = end - begin;
  if (depthwise) {
    slice->in_channels = end - begin;
    slice->arguments.groups = end - begin;
  }
  Dims dims = weightDims(*slice);
  Dims offsets(dims.size(), 0);
  offsets[0] = begin;
  dnnl_memory_desc_t sliced = w.desc.submemory_desc(dims, offsets).data;
  const auto offset_bytes =
      static_cast<int64_t>(sliced.offset0 * memory::data_type_size(w.desc.data_type()));
  sliced.offset0 = 0;
  slice->desc = memory::desc(sliced);
  slice->storage = w.storage.narrow(0, offset_bytes, static_cast<int64_t>(slice->desc.get_size()));
  if (w.bias.defined()) {
    slice->bias = w.bias.narrow(0, begin, end - begin);
  }
  return slice;
}

// `w` restricted to input channels [begin, end) (ungrouped), with its bias only where the slice
// starts at channel 0 (the piece that writes the output adds it): a view of the whole's storage,
// strided, which build repacks into the layout the slice's primitive reads, once in the slice's
// own SharedLayouts. The slices are kept in the whole's, so every runtime shares them.
std::shared_ptr<const OneDnnConvWeight> inputChannelSlice(const OneDnnConvWeight& w, int64_t begin,
                                                          int64_t end) {
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  for (const auto& [range, slice] : w.shared.input_slices) {
    if (range == std::make_pair(begin, end)) {
      return slice;
    }
  }
  auto slice = std::make_shared<OneDnnConvWeight>(w); // arguments, kernel, precision
  slice->in_channels = end - begin;
  const Dims dims = weightDims(*slice);
  Dims offsets(dims.size(), 0);
  offsets[1] = begin;
  slice->desc = w.desc.submemory_desc(dims, offsets);
  if (begin > 0) {
    slice->bias = at::Tensor();
  }
  w.shared.input_slices.emplace_back(std::make_pair(begin, end), slice);
  return slice;
}

// `w`, a Winograd weight, restricted to output channels [begin, end): a Winograd layout has no
// slices to view, so its plain weight's slice is packed for Winograd again, once, kept in the
// whole's SharedLayouts for every runtime (the layer's weight held twice while runtimes split
// one image so: resnet18 6.3 MB more). nullptr where oneDNN has no Winograd for the slice.
std::shared_ptr<const OneDnnConvWeight> winogradOutputSlice(const OneDnnConvWeight& w,
                                                            int64_t begin, int64_t end) {
  const auto range = std::make_pair(begin, end);
  const auto find = [&]() -> std::shared_ptr<const OneDnnConvWeight> {
    for (const auto& [slice_range, slice] : w.shared.winograd_output_slices) {
      if (slice_range == range) {
        return slice;
      }
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(w.shared.mutex);
    if (auto slice = find()) {
      return slice;
    }
  }
  const at::Tensor weight = plainWeight(w).narrow(0, begin, end - begin).contiguous();
  const at::Tensor bias =
      w.bias.defined() ? w.bias.narrow(0, begin, end - begin).contiguous() : at::Tensor();
  const auto direct = packConvWeight(weight, bias, w.arguments);
  std::shared_ptr<const OneDnnConvWeight> packed;
  try {
    packed = direct ? packForWinograd(*direct) : nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  if (auto slice = find()) { // another runtime packed it meanwhile
    return slice;
  }
  w.shared.winograd_output_slices.emplace_back(range, packed);
  return packed;
}

} // namespace

// How many pieces the runtime's own workers run a convolution of `key` in: one per thread where
// its activations are channels-last float32 ones (so that slabs are contiguous), or an NCHW input
// into a channels-last output (a stem: by images, or one image's rows, each piece copying its
// rows of every input channel together), it is large enough to pay for handing out the pieces,
// and it has a dim to split; else 0 (one primitive, on OpenMP's threads). A bfloat16 weight's
// pieces each round their own slab of the input: as one primitive it woke OpenMP's threads, which
// under OMP_WAIT_POLICY=PASSIVE sleep between regions (fp32_precision="bf16", 2 threads, batch 1:
// mobilenet_v2 4.1-4.8 -> 1.8-2.7 ms, efficientnet_b0 7.1-8.7 -> 3.1-5.0, AMD EPYC, Zen 5).
int piecesFor(const OneDnnConvWeight& w, const ConvKey& key, int64_t multiply_adds,
              const WorkerPool& workers) {
  // Winograd splits by whole images, which read its weight as it is, or one image by blocks of
  // output channels, each piece its own Winograd weight (winogradOutputSlice) and reading the
  // whole input. One image on OpenMP's threads ran slower, and far slower where they sleep
  // between regions: resnet18's 128-channel layers at 28x28 343-362 us a node at 2 threads,
  // 500-600 with OMP_WAIT_POLICY=PASSIVE, where half of the output channels take 205 us on one
  // thread with the weight hot and 275 cold (AMD EPYC, Zen 5). Slabs of rows ran slower still
  // (460-510 us under PASSIVE): each slab reads all of the 2.3 MB weight, which in a model comes
  // from memory (604 us a node cold against 351 hot on one thread, in a probe).
  // Every piece of one image transforms the whole input, which pays where each keeps
  // kMinWinogradSliceChannels output channels or more: resnet18's 64-channel layers at 56x56 in
  // two pieces of 32 took 538-563 us a node, as one primitive on OpenMP's sleeping threads
  // 382-444, while its 128-channel ones at 28x28 took 341-349 in pieces of 64 against 372-404
  // (Intel Xeon, 2 threads, OMP_WAIT_POLICY=PASSIVE).
  const bool winograd_pieces =
      w.algorithm == ConvAlgorithm::kWinograd && key.dst_blocked &&
      (key.batch >= workers.threads() ||
       (key.src_blocked && w.out_channels >= kMinWinogradSliceChannels * workers.threads()));
  // A strided input's slabs would need its strides in every piece: it runs whole.
  if ((w.algorithm != ConvAlgorithm::kDirect && !winograd_pieces) || w.arguments.transposed ||
      key.src_strided || !(key.channels_last || key.dst_blocked || key.plain_into_channels_last) ||
      !worthSplittingOver(workers,
                          static_cast<double>(multiply_adds) * kNanosecondsPerMultiplyAdd)) {
    return 0;
  }
  const int threads = workers.threads();
  if (key.dst_blocked) {
    return blockedSplit(w, key, threads) != BlockedSplit::kNone ? threads : 0;
  }
  return splitDim(wholeShape(w, key), threads) >= 0 ? threads : 0;
}

namespace {

// Whether slabs of `whole` along `dim` read a plain input's rows (ConvShape::src_whole).
bool plainRows(const ConvShape& whole, int dim) {
  return dim >= 2 && !whole.channels_last && !whole.src_blocked;
}

// Bytes from one index of `dim` to the next in a plain float32 tensor of `dims`.
size_t plainStride(const Dims& dims, int dim) {
  return static_cast<size_t>(plainStrides(dims)[dim]) * sizeof(float);
}

// Piece k of `pieces` of `whole` along `dim` (0: images; 2 and on: a spatial dim) as `shape`:
// its share of the output, the input its windows read (from in_begin on), and the whole's
// padding where the slab meets the input's border, none elsewhere. False for a slab that would
// read padding only.
bool slabOf(const OneDnnConvWeight& w, const ConvShape& whole, int dim, int k, int pieces,
            ConvShape& shape, int64_t& in_begin, int64_t& out_begin) {
  const ConvArguments& a = w.arguments;
  out_begin = whole.dst[dim] * k / pieces;
  const int64_t out_end = whole.dst[dim] * (k + 1) / pieces;
  shape = whole;
  in_begin = out_begin;
  int64_t in_end = out_end;
  if (dim >= 2) {
    const int i = dim - 2;
    const int64_t first = out_begin * a.stride[i] - whole.pad.left[i];
    const int64_t last = (out_end - 1) * a.stride[i] - whole.pad.left[i] +
                         (w.kernel[i] - 1) * a.dilation[i]; // inclusive
    in_begin = std::max<int64_t>(first, 0);
    in_end = std::min<int64_t>(last + 1, whole.src[dim]);
    if (in_end <= in_begin) {
      return false;
    }
    shape.pad.left[i] = in_begin - first;
    shape.pad.right[i] = last + 1 - in_end;
  }
  shape.src[dim] = in_end - in_begin;
  shape.dst[dim] = out_end - out_begin;
  if (plainRows(whole, dim)) {
    shape.src_whole = whole.src;
  }
  return true;
}

void buildBlockedPieces(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
                        const ConvEpilogue& epilogue);

// Output channels per block of `w`'s layout where its slices by such blocks are contiguous
// (output blocks outermost, as oneDNN's channels-last kernels lay them out: Acdb64a), else 0.
int64_t outputChannelBlock(const OneDnnConvWeight& w) {
  const dnnl_memory_desc_t& desc = w.desc.data;
  if (desc.format_kind != dnnl_blocked || desc.offset0 != 0) {
    return 0;
  }
  const auto& blocking = desc.format_desc.blocking;
  for (int d = 1; d < desc.ndims; ++d) {
    if (blocking.strides[d] > blocking.strides[0]) {
      return 0;
    }
  }
  int64_t block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    if (blocking.inner_idxs[i] == 0) {
      block *= blocking.inner_blks[i];
    }
  }
  return block;
}

// Whether one channels-last image is better split into ranges of output channels than into rows:
// where the weight outweighs the output many times over, every row piece would read all of it
// (one core's bandwidth is the limit then), and few rows split unevenly. resnet18's layer4 (3x3s
// of 512 channels at 7x7: 9.4 MB of weight for 98 KB of output, 3 + 4 rows) on the runtime's own
// 2 workers: 3391 -> 3003 us; resnet34 27.8 -> 26.1 ms, resnet50 39.4 -> 38.4 (Intel Xeon,
// OMP_WAIT_POLICY=PASSIVE, interleaved in one process, rows against this through a switch). Its
// layer3 (256 at 14x14, 12x, 7 + 7 rows) measured level either way: 16x is the bar.
bool splitsOutputChannels(const OneDnnConvWeight& w, const ConvShape& whole, int pieces) {
  constexpr size_t kMinWeightPerOutput = 16;
  const int64_t block = outputChannelBlock(w);
  return whole.dst[0] == 1 && whole.channels_last && whole.src_whole.empty() &&
         !whole.plain_into_channels_last && !whole.scaled_weights && w.arguments.groups == 1 &&
         w.algorithm == ConvAlgorithm::kDirect && w.multiply == kF32 && block > 0 &&
         w.out_channels % (block * pieces) == 0 &&
         w.desc.get_size() >= kMinWeightPerOutput * imageBytes(whole.dst, /*blocked=*/false);
}

// buildPieces by ranges of output channels (splitsOutputChannels): each piece reads the whole
// input and its slice of the weight in place, and writes its channels of every pixel.
void buildOutputChannelPieces(OneDnnConvState& state, const ConvShape& whole, int pieces,
                              const OneDnnConvWeight& w, const ConvEpilogue& epilogue) {
  const int64_t block = outputChannelBlock(w);
  const int64_t blocks = w.out_channels / block;
  size_t scratch = 0;
  for (int k = 0; k < pieces; ++k) {
    const int64_t begin = block * (blocks * k / pieces);
    const int64_t end = block * (blocks * (k + 1) / pieces);
    ConvPiece& piece = state.pieces.emplace_back();
    piece.weight = outputChannelSlice(w, begin, end);
    ConvShape shape = whole;
    shape.dst[1] = end - begin;
    shape.dst_whole = whole.dst;
    build(piece.state, shape, *piece.weight, epilogue, ActivationLayout::kLibraryChoice,
          WeightCopy::kInPlace);
    if (!piece.state.supported) {
      state.pieces.clear();
      return;
    }
    piece.dst_offset = static_cast<size_t>(begin) * sizeof(float);
    piece.scratch_offset = scratch;
    scratch += alignScratchOffset(piece.state.scratch_bytes);
  }
  state.scratch_bytes = scratch;
  state.supported = true;
}

} // namespace

void buildPieces(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
                 const ConvEpilogue& epilogue) {
  state.key = key;
  state.built = true;
  state.supported = false;
  state.pieces.clear();
  state.partial_floats = 0;
  if (key.dst_blocked) {
    buildBlockedPieces(state, key, w, epilogue);
    return;
  }
  const ConvShape whole = wholeShape(w, key);
  if (splitsOutputChannels(w, whole, key.pieces)) {
    buildOutputChannelPieces(state, whole, key.pieces, w, epilogue);
    if (state.supported) {
      return;
    }
  }
  const int dim = splitDim(whole, key.pieces);
  const size_t src_stride =
      plainRows(whole, dim) ? plainStride(whole.src, dim) : channelsLastStride(whole.src, dim);
  const size_t dst_stride = channelsLastStride(whole.dst, dim);
  size_t scratch = 0;
  for (int k = 0; k < key.pieces; ++k) {
    ConvShape shape;
    int64_t in_begin = 0;
    int64_t out_begin = 0;
    if (!slabOf(w, whole, dim, k, key.pieces, shape, in_begin, out_begin)) {
      state.pieces.clear();
      return; // a slab of padding only
    }
    ConvPiece& piece = state.pieces.emplace_back();
    const int64_t images = shape.dst[0];
    const bool image_by_image = shape.scaled_weights && images > 1; // each its own scaled weight
    if (image_by_image) {
      shape.src[0] = shape.dst[0] = 1;
    }
    build(piece.state, shape, w, epilogue, ActivationLayout::kLibraryChoice, WeightCopy::kShared);
    if (!piece.state.supported) {
      state.pieces.clear();
      return;
    }
    if (image_by_image) {
      piece.state.images = images;
    }
    piece.first_image = dim == 0 ? in_begin : 0;
    piece.src_offset = static_cast<size_t>(in_begin) * src_stride;
    piece.dst_offset = static_cast<size_t>(out_begin) * dst_stride;
    piece.scratch_offset = scratch;
    scratch += alignScratchOffset(piece.state.scratch_bytes);
  }
  state.scratch_bytes = scratch;
  state.supported = true;
}

namespace {

// buildBlockedPieces by input channel blocks (splitsInputChannels): piece k convolves its blocks
// of the input (a contiguous slab) with its slice of the weight; the first writes the output,
// with the bias and the residual, the others partial sums into scratch, which runPieces adds in.
void buildInputChannelPieces(OneDnnConvState& state, const ConvShape& whole, int pieces,
                             const OneDnnConvWeight& w, const ConvEpilogue& epilogue) {
  const size_t block_bytes = imageBytes(whole.src, /*blocked=*/true) /
                             ((w.in_channels + kChannelBlock - 1) / kChannelBlock);
  const size_t dst_bytes = imageBytes(whole.dst, /*blocked=*/true);
  ConvEpilogue partial_epilogue; // a bare sum
  size_t scratch = 0;
  for (int k = 0; k < pieces; ++k) {
    const auto [begin, end] = blockRange(w.in_channels, k, pieces);
    ConvPiece& piece = state.pieces.emplace_back();
    piece.first_input_channel = begin;
    piece.partial = k > 0;
    piece.src_offset = static_cast<size_t>(begin / kChannelBlock) * block_bytes;
    ConvShape shape = whole;
    shape.src[1] = end - begin;
    // The slice is a view of the packed weight at a block boundary of the activations, which a
    // weight layout blocking input channels otherwise (by 64, say) cannot describe, and its
    // repacking a reorder from that strided view: oneDNN may refuse either.
    try {
      piece.weight = inputChannelSlice(w, begin, end);
      build(piece.state, shape, *piece.weight, piece.partial ? partial_epilogue : epilogue,
            ActivationLayout::kLibraryChoice, WeightCopy::kShared);
    } catch (const dnnl::error&) {
      piece.state.supported = false;
    }
    if (!piece.state.supported) {
      state.pieces.clear();
      return;
    }
    if (piece.partial) {
      piece.dst_offset = scratch;
      scratch += alignScratchOffset(dst_bytes);
    }
  }
  // The pieces' own scratch after the partial sums.
  for (ConvPiece& piece : state.pieces) {
    piece.scratch_offset = scratch;
    scratch += alignScratchOffset(piece.state.scratch_bytes);
  }
  state.partial_floats = static_cast<int64_t>(dst_bytes / sizeof(float));
  state.scratch_bytes = scratch;
  state.supported = true;
}

// buildPieces for a channel-blocked output (blockedSplit): ranges of images, or of one image's
// output channel blocks, each piece a convolution of its own on dense slabs.
void buildBlockedPieces(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
                        const ConvEpilogue& epilogue) {
  const ConvShape whole = wholeShape(w, key);
  const BlockedSplit split = blockedSplit(w, key, key.pieces);
  if (split == BlockedSplit::kInputChannelBlocks) {
    buildInputChannelPieces(state, whole, key.pieces, w, epilogue);
    return;
  }
  const size_t src_image = imageBytes(whole.src, key.src_blocked);
  const size_t dst_image = imageBytes(whole.dst, /*blocked=*/true);
  size_t scratch = 0;
  for (int k = 0; k < key.pieces && split != BlockedSplit::kNone; ++k) {
    ConvPiece& piece = state.pieces.emplace_back();
    ConvShape shape = whole;
    const OneDnnConvWeight* weight = &w;
    if (split == BlockedSplit::kRows) {
      int64_t in_begin = 0;
      int64_t out_begin = 0;
      if (!slabOf(w, whole, /*dim=*/2, k, key.pieces, shape, in_begin, out_begin)) {
        state.pieces.clear();
        return; // a slab of padding only
      }
      const size_t src_row = key.src_blocked       ? imageBytes(whole.src, true) / whole.src[2]
                             : plainRows(whole, 2) ? plainStride(whole.src, 2)
                                                   : channelsLastStride(whole.src, 2);
      piece.src_offset = static_cast<size_t>(in_begin) * src_row;
      piece.dst_offset =
          static_cast<size_t>(out_begin) * imageBytes(whole.dst, true) / whole.dst[2];
    } else if (split == BlockedSplit::kImages) {
      const int64_t begin = whole.dst[0] * k / key.pieces;
      const int64_t end = whole.dst[0] * (k + 1) / key.pieces;
      shape.src[0] = shape.dst[0] = end - begin;
      piece.first_image = begin;
      piece.src_offset = static_cast<size_t>(begin) * src_image;
      piece.dst_offset = static_cast<size_t>(begin) * dst_image;
    } else {
      const auto [begin, end] = blockRange(w.out_channels, k, key.pieces);
      piece.weight = w.algorithm == ConvAlgorithm::kWinograd ? winogradOutputSlice(w, begin, end)
                                                             : outputChannelSlice(w, begin, end);
      if (!piece.weight) {
        state.pieces.clear();
        return;
      }
      weight = piece.weight.get();
      shape.dst[1] = end - begin;
      const size_t plane = static_cast<size_t>(whole.dst[2] * whole.dst[3]) * sizeof(float);
      piece.dst_offset = static_cast<size_t>(begin) * plane;
      if (w.arguments.groups > 1) { // depthwise: its input blocks with its output's
        shape.src[1] = end - begin;
        piece.src_offset = static_cast<size_t>(begin) * whole.src[2] * whole.src[3] * sizeof(float);
      }
    }
    if (weight->algorithm == ConvAlgorithm::kWinograd ||
        (shape.scaled_weights && shape.dst[0] > 1)) {
      // Its images one after the other on a primitive for one (see build for a key).
      const int64_t images = shape.dst[0];
      shape.src[0] = shape.dst[0] = 1;
      build(piece.state, shape, *weight, epilogue, ActivationLayout::kLibraryChoice,
            WeightCopy::kShared, DirectFallback::kRefused);
      piece.state.images = images;
    } else {
      build(piece.state, shape, *weight, epilogue, ActivationLayout::kLibraryChoice,
            WeightCopy::kShared);
    }
    if (!piece.state.supported) {
      state.pieces.clear();
      return;
    }
    piece.scratch_offset = scratch;
    scratch += alignScratchOffset(piece.state.scratch_bytes);
  }
  if (state.pieces.empty()) {
    return;
  }
  state.scratch_bytes = scratch;
  state.supported = true;
}

} // namespace

// run() of every piece of `state`, spread over `workers`; then, for a sum split by input
// channels, the partial sums added into the output.
void runPieces(OneDnnConvState& state, const OneDnnConvWeight& w, char* x, char* out,
               const char* residual, char* scratch, std::optional<TrailingActivation> trailing,
               const float* weight_scales, int64_t scales_per_image, WorkerPool& workers) {
  workers.run(static_cast<int64_t>(state.pieces.size()), [&](int64_t k) {
    ConvPiece& piece = state.pieces[k];
    const OneDnnConvWeight& weight = piece.weight ? *piece.weight : w;
    char* piece_out = (piece.partial ? scratch : out) + piece.dst_offset;
    const char* piece_residual =
        residual != nullptr && !piece.partial ? residual + piece.dst_offset : nullptr;
    const float* scales =
        weight_scales != nullptr
            ? weight_scales + piece.first_image * scales_per_image + piece.first_input_channel
            : nullptr;
    if (piece.state.images > 0) {
      runImages(piece.state, weight, x + piece.src_offset, piece_out, piece_residual,
                scratch + piece.scratch_offset, trailing, scales, scales_per_image);
    } else {
      run(piece.state, weight, x + piece.src_offset, piece_out, piece_residual,
          scratch + piece.scratch_offset, trailing, scales);
    }
  });
  auto* sum = reinterpret_cast<float*>(out);
  for (const ConvPiece& piece : state.pieces) {
    if (piece.partial) {
      vec::map(vec::BinaryOp::kAdd, sum, reinterpret_cast<const float*>(scratch + piece.dst_offset),
               sum, state.partial_floats, vec::Params{1.f, 0.f}, &workers);
    }
  }
}

} // namespace onednn_conv

} // namespace srt::ops
