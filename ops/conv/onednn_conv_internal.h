// What the files of oneDNN's convolution share (ops/conv/onednn_conv.h is the interface): the
// packed weight, a node's per-runtime primitive state, and the functions one file defines and the
// others call. Not installed; included by onednn_conv*.cpp only.
//
//   onednn_conv_weight.cpp     the weight: packing, layouts, Winograd, reading it back
//   onednn_conv_primitive.cpp  one primitive: descriptors, post-ops, building, running
//   onednn_conv_pieces.cpp     a convolution split into pieces over the runtime's own workers
//   onednn_conv.cpp            the node's kernel: our own loops or oneDNN, per input shape
//   onednn_conv_fused_depthwise.cpp  srt::blocked_conv2d_dw: a 1x1 and a depthwise convolution
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/conv/onednn_conv.h"
#include "ops/conv/stem_conv.h"
#include "ops/conv/strided_winograd.h"
#include "ops/conv/winograd.h"
#include "ops/core/processed_node.h"

namespace srt::ops {
namespace onednn_conv {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

// What a primitive was built for: the input's batch, spatial sizes and layout, the OpenMP thread
// count, and how many pieces the runtime's own workers run (0: one primitive for the whole).
struct ConvKey {
  int64_t batch = -1;
  int64_t size[kMaxConvSpatialDims] = {-1, -1, -1};
  bool channels_last = false;
  bool plain_into_channels_last = false; // an NCHW input, a channels-last output
  // A plain input that is not dense (a channel range of a larger batch, as torch.chunk and
  // split give): its strides, which the primitive's input reorder reads.
  bool src_strided = false;
  int64_t src_strides[kMaxConvSpatialDims + 2] = {};
  bool src_blocked = false;    // the input channel-blocked (nChw16c)
  bool dst_blocked = false;    // the output (and residual) channel-blocked
  bool scaled_weights = false; // the weight times per-channel factors each call
  // Nothing but the bias and a residual follows the sum of products (no activation), so pieces
  // may each take a share of the sum (splitsInputChannels).
  bool linear = false;
  // The output holds the residual when the convolution runs: the memory plan gave it the
  // residual's storage (Kernel::writes_over_input).
  bool residual_in_place = false;
  int threads = 0;
  int pieces = 0;

  bool operator==(const ConvKey& o) const {
    return batch == o.batch && std::equal(size, size + kMaxConvSpatialDims, o.size) &&
           channels_last == o.channels_last &&
           plain_into_channels_last == o.plain_into_channels_last && src_strided == o.src_strided &&
           std::equal(src_strides, src_strides + kMaxConvSpatialDims + 2, o.src_strides) &&
           src_blocked == o.src_blocked && dst_blocked == o.dst_blocked &&
           scaled_weights == o.scaled_weights && linear == o.linear &&
           residual_in_place == o.residual_in_place && threads == o.threads && pieces == o.pieces;
  }
};

// How a primitive's activations are laid out: as oneDNN picks (format any: channels last for
// brgconv on AVX-512), or blocked by 16 channels (nChw16c / nCdhw16c), which oneDNN's older
// AVX-512 kernels read. Which is faster depends on the shape and the CPU: on an AMD EPYC (Zen 4)
// wav2vec2's 1-D convolutions (512 channels, 3199 samples) ran 1.5x faster blocked, reorders
// included, while efficientnet_b0 ran 19% slower; so 1-D convolutions are timed both ways once
// per shape (chooseLayout).
enum class ActivationLayout { kLibraryChoice, kChannelBlocked };

// What every runtime of one packed weight shares beyond the weight: per input shape, the layout
// its trial chose, and the weight in the layouts other than the packed one that some shape's
// primitive wants (held once, not per runtime). A copy of the weight starts with none.
struct SharedLayouts {
  SharedLayouts() = default;
  SharedLayouts(const SharedLayouts&) {}
  SharedLayouts& operator=(const SharedLayouts&) = delete;

  std::mutex mutex;
  std::vector<std::pair<ConvKey, ActivationLayout>> chosen;
  std::vector<std::pair<dnnl::memory::desc, at::Tensor>> weights;
  // Its slices by input channels [first, second) (inputChannelSlice), each repacked once.
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::shared_ptr<const OneDnnConvWeight>>>
      input_slices;
  // A Winograd weight's slices by output channels (winogradOutputSlice), each packed once.
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::shared_ptr<const OneDnnConvWeight>>>
      winograd_output_slices;
  // A Winograd weight packed for the direct algorithm (directForm), on channels-last or plain
  // activations and on channel-blocked ones, each once a shape wanted it.
  std::shared_ptr<const OneDnnConvWeight> direct;
  std::shared_ptr<const OneDnnConvWeight> direct_blocked;
  // The weight transformed for our stride-2 Winograd loop (stridedWinogradWeight), once a shape
  // ran it.
  at::Tensor strided_winograd;
  // Per input shape, whether that loop measured faster than oneDNN's kernel
  // (stridedWinogradFaster).
  std::vector<std::pair<ConvKey, bool>> strided_winograd_faster;
  // The weight transformed for our stride-1 Winograd loop (winogradLoopWeight), once a shape ran
  // it, and per input shape whether that loop measured faster than oneDNN's kernel
  // (winogradLoopFaster).
  at::Tensor winograd_loop;
  std::vector<std::pair<ConvKey, bool>> winograd_loop_faster;
  // The weight packed for our stem loop (stemConvWeight), once a shape ran it, and per input
  // shape whether that loop measured faster than oneDNN's kernel (stemConvFaster).
  at::Tensor stem_conv;
  std::vector<std::pair<ConvKey, bool>> stem_conv_faster;
};

} // namespace onednn_conv

struct OneDnnConvWeight {
  ConvArguments arguments;
  ConvAlgorithm algorithm = ConvAlgorithm::kDirect;
  int64_t out_channels = 0;
  int64_t in_channels = 0;                  // of the input, all groups
  int64_t kernel[kMaxConvSpatialDims] = {}; // spatial_dims of them
  // What the products read: the weight is stored in it, and a bfloat16 convolution rounds its
  // float32 input to bfloat16 in scratch (the output stays float32).
  dnnl::memory::data_type multiply = dnnl::memory::data_type::f32;
  dnnl::memory::desc desc; // the packed layout, for `algorithm`
  // desc.get_size() bytes: the only copy once passes/conv_weight_packing.cpp has taken the
  // plain weight out of the graph. Shapes whose primitive wants another layout, and the
  // reference path, reorder (or, from Winograd's layout, unpack) from it.
  at::Tensor storage;
  at::Tensor bias; // [OC] float32 contiguous, or undefined
  mutable onednn_conv::SharedLayouts shared;
};

namespace onednn_conv {

// Zeros a convolution reads beyond each side of its input, per spatial dim.
struct Padding {
  Dims left, right;
};

// The image a weight's layout is chosen for: [1, C, 32, 32] (3-D: [1, C, 16, 16, 16]), or the
// kernel's span where that is larger, and the convolution's output on it.
struct RepresentativeImage {
  int64_t side[kMaxConvSpatialDims] = {};
  int64_t out[kMaxConvSpatialDims] = {};
};

// Where a primitive that wants the weight in a layout other than the packed one reads it from:
// a copy shared by every runtime (weightIn), or, for a trial that may not be kept, the state's own.
// kInPlace: the weight as it is laid out, or no primitive (a piece's slice of a weight its
// primitive would read in another layout: repacking would hold the weight twice).
enum class WeightCopy { kShared, kOwn, kInPlace };

// What one primitive computes: its input's and output's dims, whether the caller's tensors are
// channels last (or the input NCHW and the output channels last), and its padding.
struct ConvShape {
  Dims src, dst;
  bool channels_last = false;
  Padding pad;
  bool plain_into_channels_last = false;
  bool src_blocked = false;
  bool dst_blocked = false;
  // A plain (NCHW) input read as a slab of a larger one, whose dims these are: the slab's
  // elements are as far apart as the whole's (a stem's rows, each channel's apart). Empty: the
  // input is src, dense.
  Dims src_whole;
  // A plain input that is not dense: its strides (ConvKey::src_strides). Empty: dense.
  Dims src_strides;
  // A channels-last output written as a range of a larger one's channels, whose dims these are:
  // the primitive writes a dense result in scratch, which a reorder spreads into the range.
  // Empty: the output is dst, dense.
  Dims dst_whole;
  bool scaled_weights = false; // ConvKey::scaled_weights
  // ConvKey::residual_in_place: the residual is added where it is, by the sum post-op. (A binary
  // one would read it after the kernel stored partial sums over it, in kernels that split the
  // input channels.)
  bool residual_in_place = false;
};

// Whether a Winograd weight's convolution may fall back to the direct algorithm (repacking the
// weight for it) where no Winograd implementation reads the packed layout.
enum class DirectFallback { kAllowed, kRefused };

struct ConvPiece;

// One node's primitive in one runtime, for the last input shape. The activations are in the
// caller's layout (contiguous or channels last); where the primitive wants a blocked one, the input
// is reordered into scratch before and the result out of it after. Split over the runtime's own
// workers, the node runs pieces instead, each a primitive of its own.
struct OneDnnConvState final : NodeState {
  ConvKey key;
  bool built = false;
  bool supported = false;
  // Where the primitive is built for one image of a batch of `images`, which it computes one
  // after the other (0: the primitive computes the whole).
  int64_t images = 0;
  std::vector<ConvPiece> pieces;
  // Pieces splitting the sum by input channels: the floats of the output, and of each partial sum
  // added into it after them (ConvPiece::partial); 0 otherwise.
  int64_t partial_floats = 0;
  dnnl::primitive primitive; // a convolution_forward or deconvolution_forward
  memory src_user, src, weights, bias, dst, dst_user, scratchpad;
  dnnl::reorder src_reorder, dst_reorder, residual_reorder;
  // The residual read in place by a binary post-op (withBinaryResidual), not copied into dst.
  bool binary_residual = false;
  memory residual;
  bool reorder_src = false;
  // Where that source reorder is NCHW images, each dense, into the blocked layout: its images,
  // channels, pixels an image and floats from one image to the next, run as planesIntoBlocks
  // (images 0: src_reorder runs).
  int64_t src_planes[4] = {0, 0, 0, 0};
  bool reorder_dst = false;
  // dst_user is a range of a larger output's channels (ConvShape::dst_whole): a trailing
  // activation applies to the dense result in scratch, before the reorder into the range.
  bool dst_slab = false;
  // Built for ConvKey::scaled_weights: the reorder writing `weights` times one factor per input
  // channel (weight_scales) into scaled_weights, in scratch, which the primitive then reads.
  dnnl::reorder weight_scaling;
  memory weight_scales, scaled_weights;
  // Scratch regions, 64-byte aligned offsets: [blocked src | blocked dst | oneDNN scratchpad |
  // scaled weight].
  size_t src_offset = 0, dst_offset = 0, scratchpad_offset = 0, scaled_weights_offset = 0;
  size_t scratch_bytes = 0;
  size_t scratchpad_bytes = 0;
  at::Tensor own_weight; // a trial's weight in its primitive's layout (build, WeightCopy::kOwn)
  dnnl::stream stream;
  // stridedWinogradFaster's answer for the last shape this runtime asked it of.
  std::optional<std::pair<ConvKey, bool>> strided_winograd_faster;
  // winogradLoopFaster's, likewise.
  std::optional<std::pair<ConvKey, bool>> winograd_loop_faster;
  // stemConvFaster's, likewise.
  std::optional<std::pair<ConvKey, bool>> stem_conv_faster;
};

// A slab of a convolution's output (a range of images, or of rows where there is one image) with
// the primitive that computes it from the slab of input it reads. In channels-last tensors both
// slabs are contiguous: the piece runs on the tensors' addresses plus these byte offsets.
struct ConvPiece {
  OneDnnConvState state;
  size_t src_offset = 0, dst_offset = 0, scratch_offset = 0;
  // A piece of a channel-blocked convolution's output channels: the weight's and bias's slices
  // for them (views of the whole's storage), or none (the whole weight).
  std::shared_ptr<const OneDnnConvWeight> weight;
  int64_t first_image = 0; // of the batch: where its weight scales start (ConvKey::scaled_weights)
  // A piece of a sum split by input channels (splitsInputChannels): the first of them, whose
  // weight slice starts at it, and whether the piece writes a partial sum into scratch at
  // dst_offset (every piece but the first, which writes the output and adds bias and residual).
  int64_t first_input_channel = 0;
  bool partial = false;
};

// An activation applied to a convolution's output in place after its primitive
// (vec::mapFast), instead of as a oneDNN post-op (splitEpilogue).
struct TrailingActivation {
  vec::UnaryOp op;
  vec::Params params;
};

// What oneDNN's post-ops compute (`library`), and what follows the primitive (`trailing`).
struct EpilogueSplit {
  ConvEpilogue library;
  std::optional<TrailingActivation> trailing;
};

// ---- onednn_conv_weight.cpp: the weight

// The weight's dims as oneDNN's (de)convolution takes them: [OC, IC, k...], or with groups
// [G, OC / G, IC / G, k...].
Dims weightDims(const OneDnnConvWeight& w);
// PyTorch's layout of those dims (strides).
memory::desc plainWeightDesc(const OneDnnConvWeight& w);
RepresentativeImage representativeImage(const OneDnnConvWeight& w);
// The primitive of `algorithm` on the representative image, weights in `weights` (may be format
// any), activations in `activations` and, where given, the input in `input`. Throws dnnl::error
// when oneDNN has no such convolution. Winograd's is one OpenMP thread's (see the definition).
dnnl::primitive_desc
representativePrimitive(const OneDnnConvWeight& w, const memory::desc& weights,
                        const dnnl::primitive_attr& attr, ConvAlgorithm algorithm,
                        memory::format_tag activations = memory::format_tag::any,
                        memory::format_tag input = memory::format_tag::any);
// The layout `algorithm`'s primitive picks for the weight; throws dnnl::error when oneDNN has no
// such convolution.
memory::desc preferredWeightDesc(const OneDnnConvWeight& w, const dnnl::primitive_attr& attr,
                                 ConvAlgorithm algorithm);
// The weight in PyTorch's layout, a new tensor.
at::Tensor plainWeight(const OneDnnConvWeight& w);
// The weight reordered into `layout` at `data`.
void repackWeight(const OneDnnConvWeight& w, const memory::desc& layout, void* data);
// The packed weight in `layout`: its own storage, or a copy made once for every runtime.
void* weightIn(const OneDnnConvWeight& w, const memory::desc& layout);
// Whether Winograd pays on a convolution of `output_pixels` (batch x height x width) with a
// Winograd weight: below that, the direct algorithm on directForm(w) (see the definition).
bool winogradPays(int64_t output_pixels);
// A Winograd weight packed for the direct algorithm on channel-blocked activations or others (as
// passes/conv_weight_packing.cpp and passes/blocked_layout.cpp would have packed it): a copy
// made once for every runtime, the first time a shape wants it.
const OneDnnConvWeight& directForm(const OneDnnConvWeight& w, bool blocked_activations);
// The weight transformed for ops/conv/strided_winograd.h's loop (a stride-2, padding-1 3x3 float32
// direct weight): made once for every runtime, the first time a shape runs the loop.
const float* stridedWinogradWeight(const OneDnnConvWeight& w);
// The weight transformed for ops/conv/winograd.h's loop (a stride-1, padding-1 3x3 float32 weight,
// direct or oneDNN's Winograd): made once for every runtime, the first time a shape runs the loop.
const float* winogradLoopWeight(const OneDnnConvWeight& w);
// The weight packed for ops/conv/stem_conv.h's loop (a 3x3 float32 direct weight of few input
// channels): made once for every runtime, the first time a shape runs the loop.
const float* stemConvWeight(const OneDnnConvWeight& w);

// ---- onednn_conv_primitive.cpp: one primitive

int64_t outputSize(int64_t in, int64_t kernel, const ConvArguments& a, int dim);
// [N, C, spatial...] as oneDNN dims.
Dims activationDims(int64_t batch, int64_t channels, const int64_t* sizes, int spatial_dims);
memory::format_tag activationTag(int spatial_dims, bool channels_last);
memory::format_tag blockedTag(int spatial_dims);
at::MemoryFormat channelsLastFormat(int spatial_dims);
// A channels-last float32 tensor of `dims` (for 16 channels described as nChw16c: the same bytes).
memory::desc channelsLastDesc(const Dims& dims, int spatial_dims);
// The strides of a dense plain (NCHW / NCDHW) tensor of `dims`.
Dims plainStrides(const Dims& dims);
// A reorder between two memories, run now.
void reorder(const memory& from, const memory& to);
// The epilogue as post-ops, the scratchpad the caller's. The residual is a sum post-op (dst
// holds it when the primitive runs), or with `binary_residual` (its descriptor) a binary
// addition of a tensor of its own, the first post-op's DNNL_ARG_SRC_1.
dnnl::primitive_attr attributes(const ConvEpilogue& epilogue,
                                const memory::desc* binary_residual = nullptr);
// The primitive for these memory descriptors (any may be format any) computing by `algorithm`
// with `pad` (default: the weight's arguments'); throws dnnl::error when oneDNN has none.
dnnl::primitive_desc primitiveDesc(const OneDnnConvWeight& w, const memory::desc& src,
                                   const memory::desc& weights, const memory::desc& dst,
                                   const dnnl::primitive_attr& attr, ConvAlgorithm algorithm,
                                   const Padding* pad = nullptr);
bool isReferenceImplementation(const dnnl::primitive_desc& pd);
// The whole convolution of an input of `key`.
ConvShape wholeShape(const OneDnnConvWeight& w, const ConvKey& key);
// Builds `state` for `shape` with activations in `layout`; state.supported says whether oneDNN
// had a primitive (and reorders) for it.
void build(OneDnnConvState& state, const ConvShape& shape, const OneDnnConvWeight& w,
           const ConvEpilogue& epilogue, ActivationLayout layout, WeightCopy copy,
           DirectFallback direct_fallback = DirectFallback::kAllowed);
// Builds `state` for the whole convolution of `key` (see the definition for Winograd batches).
void build(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
           const ConvEpilogue& epilogue, ActivationLayout layout,
           WeightCopy copy = WeightCopy::kShared);
// One convolution with `state` built (see the definition for the arguments).
void run(OneDnnConvState& state, const OneDnnConvWeight& w, void* x, void* out,
         const void* residual, char* scratch, std::optional<TrailingActivation> trailing,
         const float* weight_scales);
// run() of a state built for one image (state.images) on each image.
void runImages(OneDnnConvState& state, const OneDnnConvWeight& w, char* x, char* out,
               const char* residual, char* scratch, std::optional<TrailingActivation> trailing,
               const float* weight_scales, int64_t scales_per_image);
// The activation layout of `w`'s convolutions at `key` (timed once for 1-D convolutions).
ActivationLayout chooseLayout(const OneDnnConvWeight& w, const ConvKey& key,
                              const ConvEpilogue& epilogue);
// Whether ops/conv/strided_winograd.h's loop runs `w`'s convolution of `key`'s input faster than
// oneDNN's kernel with `epilogue` (timed once per weight and shape; see the definition). `conv`
// is the loop's convolution of one image, but for its tensors.
bool stridedWinogradFaster(const OneDnnConvWeight& w, const ConvKey& key,
                           const ConvEpilogue& epilogue,
                           const strided_winograd::StridedWinogradConv& conv);
// Whether ops/conv/winograd.h's loop runs `w`'s convolution of `key`'s input faster than
// oneDNN's kernel, likewise.
bool winogradLoopFaster(const OneDnnConvWeight& w, const ConvKey& key, const ConvEpilogue& epilogue,
                        const winograd::WinogradConv& conv);
// Whether ops/conv/stem_conv.h's loop runs `w`'s convolution of `key`'s input faster than
// oneDNN's kernel, likewise.
bool stemConvFaster(const OneDnnConvWeight& w, const ConvKey& key, const ConvEpilogue& epilogue,
                    const stem_conv::StemConv& conv);
// A trailing activation on a whole output, over OpenMP's threads where it pays.
void applyTrailing(const TrailingActivation& activation, float* out, int64_t floats);
// How `epilogue` splits between oneDNN's post-ops and an activation after the primitive, for
// convolutions of `w` (see the definition).
EpilogueSplit splitEpilogue(const OneDnnConvWeight& w, const ConvEpilogue& epilogue);

// ---- onednn_conv_pieces.cpp: pieces over the runtime's own workers

// How many pieces the runtime's own workers run a convolution of `key` in (0: one primitive).
int piecesFor(const OneDnnConvWeight& w, const ConvKey& key, int64_t multiply_adds,
              const WorkerPool& workers);
// Builds `state` for `key` as key.pieces pieces (piecesFor): for channels-last activations,
// slabs of the output along splitDim, each read from the input rows its windows cover, the padding
// of the whole where the slab meets the input's border and none elsewhere. A piece whose primitive
// wants another layout (a stem's three channels) reorders its own slabs, in its own scratch.
// state.supported is false (and there are no pieces) where oneDNN has no primitive for a piece. For
// a channel-blocked output, ranges of images, of one image's output or input channel blocks, or of
// rows (see onednn_conv_pieces.cpp).
void buildPieces(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
                 const ConvEpilogue& epilogue);
// run() of every piece of `state`, spread over `workers`; then, for a sum split by input
// channels, the partial sums added into the output.
void runPieces(OneDnnConvState& state, const OneDnnConvWeight& w, char* x, char* out,
               const char* residual, char* scratch, std::optional<TrailingActivation> trailing,
               const float* weight_scales, int64_t scales_per_image, WorkerPool& workers);

} // namespace onednn_conv
} // namespace srt::ops
