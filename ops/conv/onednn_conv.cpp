#include "ops/conv/onednn_conv.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/conv/blocked_layout.h"
#include "ops/conv/depthwise_blocked.h"
#include "ops/conv/pointwise_blocked.h"
#include "ops/conv/small_image_gemm.h"
#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/elementwise/channel_scale.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {

// What a primitive was built for: the input's batch, spatial sizes and layout, the OpenMP thread
// count, and how many pieces the runtime's own workers run (0: one primitive for the whole).
struct ConvKey {
  int64_t batch = -1;
  int64_t size[kMaxConvSpatialDims] = {-1, -1, -1};
  bool channels_last = false;
  bool plain_into_channels_last = false; // an NCHW input, a channels-last output
  bool src_blocked = false;              // the input channel-blocked (nChw16c)
  bool dst_blocked = false;              // the output (and residual) channel-blocked
  bool scaled_weights = false;           // the weight times per-channel factors each call
  // Nothing but the bias and a residual follows the sum of products (no activation), so pieces
  // may each take a share of the sum (splitsInputChannels).
  bool linear = false;
  int threads = 0;
  int pieces = 0;

  bool operator==(const ConvKey& o) const {
    return batch == o.batch && std::equal(size, size + kMaxConvSpatialDims, o.size) &&
           channels_last == o.channels_last &&
           plain_into_channels_last == o.plain_into_channels_last && src_blocked == o.src_blocked &&
           dst_blocked == o.dst_blocked && scaled_weights == o.scaled_weights &&
           linear == o.linear && threads == o.threads && pieces == o.pieces;
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
};

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
  mutable SharedLayouts shared;
};

bool ConvArguments::operator==(const ConvArguments& o) const {
  for (int i = 0; i < kMaxConvSpatialDims; ++i) {
    if (stride[i] != o.stride[i] || padding[i] != o.padding[i] || dilation[i] != o.dilation[i] ||
        output_padding[i] != o.output_padding[i]) {
      return false;
    }
  }
  return spatial_dims == o.spatial_dims && groups == o.groups && transposed == o.transposed;
}

namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

Dims spatial(const int64_t* values, int spatial_dims) {
  return Dims(values, values + spatial_dims);
}

// The weight's dims as oneDNN's (de)convolution takes them: [OC, IC, k...], or with groups
// [G, OC / G, IC / G, k...].
Dims weightDims(const OneDnnConvWeight& w) {
  const int64_t g = w.arguments.groups;
  Dims dims =
      g == 1 ? Dims{w.out_channels, w.in_channels} : Dims{g, w.out_channels / g, w.in_channels / g};
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    dims.push_back(w.kernel[i]);
  }
  return dims;
}

// PyTorch's weight as those dims with strides: [OC, IC / G, k...] is [G, OC / G, IC / G, k...]
// contiguous; the transposed [IC, OC / G, k...] is [G, IC / G, OC / G, k...] contiguous.
memory::desc plainWeightDesc(const OneDnnConvWeight& w) {
  const Dims dims = weightDims(w);
  const int64_t g = w.arguments.groups;
  const int64_t oc = w.out_channels / g;
  const int64_t ic = w.in_channels / g;
  int64_t kernel_size = 1;
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    kernel_size *= w.kernel[i];
  }
  const int64_t o_stride = w.arguments.transposed ? kernel_size : ic * kernel_size;
  const int64_t i_stride = w.arguments.transposed ? oc * kernel_size : kernel_size;
  Dims strides =
      g == 1 ? Dims{o_stride, i_stride} : Dims{oc * ic * kernel_size, o_stride, i_stride};
  int64_t stride = kernel_size;
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    stride /= w.kernel[i];
    strides.push_back(stride);
  }
  return memory::desc(dims, kF32, strides);
}

// The weight's shape in PyTorch.
std::vector<int64_t> plainWeightSizes(const OneDnnConvWeight& w) {
  const int64_t g = w.arguments.groups;
  std::vector<int64_t> sizes = w.arguments.transposed
                                   ? std::vector<int64_t>{w.in_channels, w.out_channels / g}
                                   : std::vector<int64_t>{w.out_channels, w.in_channels / g};
  sizes.insert(sizes.end(), w.kernel, w.kernel + w.arguments.spatial_dims);
  return sizes;
}

// oneDNN's dilation counts the gaps between taps: PyTorch's dilation minus one.
Dims dilations(const ConvArguments& a) {
  Dims dims;
  for (int i = 0; i < a.spatial_dims; ++i) {
    dims.push_back(a.dilation[i] - 1);
  }
  return dims;
}

int64_t outputSize(int64_t in, int64_t kernel, const ConvArguments& a, int dim) {
  const int64_t span = a.dilation[dim] * (kernel - 1) + 1;
  if (a.transposed) {
    return (in - 1) * a.stride[dim] - 2 * a.padding[dim] + span + a.output_padding[dim];
  }
  const int64_t padded = in + 2 * a.padding[dim];
  return padded < span ? 0 : (padded - span) / a.stride[dim] + 1;
}

// [N, C, spatial...] as oneDNN dims.
Dims activationDims(int64_t batch, int64_t channels, const int64_t* sizes, int spatial_dims) {
  Dims dims{batch, channels};
  dims.insert(dims.end(), sizes, sizes + spatial_dims);
  return dims;
}

memory::format_tag activationTag(int spatial_dims, bool channels_last) {
  if (spatial_dims == 3) {
    return channels_last ? memory::format_tag::ndhwc : memory::format_tag::ncdhw;
  }
  return channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw;
}

at::MemoryFormat channelsLastFormat(int spatial_dims) {
  return spatial_dims == 3 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
}

// An activation as oneDNN eltwise post-ops (hardsigmoid takes two).
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0.f;
  float beta = 0.f;
};

std::vector<Eltwise> eltwisesFor(vec::UnaryOp op, vec::Params params) {
  switch (op) {
  case vec::UnaryOp::kRelu:
    return {{dnnl::algorithm::eltwise_relu}};
  case vec::UnaryOp::kLeakyRelu:
    return {{dnnl::algorithm::eltwise_relu, params.a}};
  case vec::UnaryOp::kClamp:
    return {{dnnl::algorithm::eltwise_clip, params.a, params.b}};
  case vec::UnaryOp::kClampMin:
    return {{dnnl::algorithm::eltwise_clip, params.a, FLT_MAX}};
  case vec::UnaryOp::kClampMax:
    return {{dnnl::algorithm::eltwise_clip, -FLT_MAX, params.b}};
  case vec::UnaryOp::kSigmoid:
    return {{dnnl::algorithm::eltwise_logistic}};
  case vec::UnaryOp::kTanh:
    return {{dnnl::algorithm::eltwise_tanh}};
  case vec::UnaryOp::kSilu:
    return {{dnnl::algorithm::eltwise_swish, 1.f}}; // x * sigmoid(1 * x)
  case vec::UnaryOp::kGelu:
    return {{dnnl::algorithm::eltwise_gelu_erf}};
  case vec::UnaryOp::kGeluTanh:
    return {{dnnl::algorithm::eltwise_gelu_tanh}};
  case vec::UnaryOp::kHardswish:
    return {{dnnl::algorithm::eltwise_hardswish}};
  case vec::UnaryOp::kHardsigmoid: // oneDNN 2.6 has none: clip(x / 6 + 1 / 2, 0, 1)
    return {{dnnl::algorithm::eltwise_linear, 1.f / 6.f, 0.5f},
            {dnnl::algorithm::eltwise_clip, 0.f, 1.f}};
  default:
    return {};
  }
}

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
  bool reorder_src = false;
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

void reorder(const memory& from, const memory& to) {
  dnnl::stream stream(oneDnnEngine());
  dnnl::reorder(from, to).execute(stream, const_cast<memory&>(from), const_cast<memory&>(to));
  stream.wait();
}

dnnl::primitive_attr attributes(const ConvEpilogue& epilogue) {
  dnnl::primitive_attr attr;
  // The scratchpad comes from the node's planned scratch, not from a oneDNN allocation per call.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops post_ops;
  if (epilogue.has_residual) {
    post_ops.append_sum(1.f); // dst holds the residual when the convolution runs
  }
  if (epilogue.activation) {
    for (const Eltwise& e : eltwisesFor(*epilogue.activation, epilogue.params)) {
      post_ops.append_eltwise(1.f, e.algorithm, e.alpha, e.beta);
    }
  }
  if (post_ops.len() > 0) {
    attr.set_post_ops(post_ops);
  }
  return attr;
}

// Zeros a convolution reads beyond each side of its input, per spatial dim.
struct Padding {
  Dims left, right;
};

Padding padding(const ConvArguments& a) {
  Padding padding{spatial(a.padding, a.spatial_dims), spatial(a.padding, a.spatial_dims)};
  for (int i = 0; i < a.spatial_dims; ++i) {
    // What makes the output output_padding larger, as ATen's oneDNN path does (may go negative).
    padding.right[i] -= a.transposed ? a.output_padding[i] : 0;
  }
  return padding;
}

// The primitive for these memory descriptors (any of them may be format any) computing by
// `algorithm` (transposed convolutions: direct) with `pad` (a piece's; default: the weight's
// arguments'); throws dnnl::error when oneDNN has none.
dnnl::primitive_desc primitiveDesc(const OneDnnConvWeight& w, const memory::desc& src,
                                   const memory::desc& weights, const memory::desc& dst,
                                   const dnnl::primitive_attr& attr, ConvAlgorithm algorithm,
                                   const Padding* pad = nullptr) {
  const ConvArguments& a = w.arguments;
  const Dims strides = spatial(a.stride, a.spatial_dims);
  const Padding whole = pad == nullptr ? padding(a) : Padding{};
  const Dims& padding_l = pad == nullptr ? whole.left : pad->left;
  const Dims& padding_r = pad == nullptr ? whole.right : pad->right;
  const memory::desc bias = w.bias.defined()
                                ? memory::desc({w.out_channels}, kF32, memory::format_tag::x)
                                : memory::desc();
  const auto inference = dnnl::prop_kind::forward_inference;
  if (a.transposed) {
    using Deconv = dnnl::deconvolution_forward;
    const auto direct = dnnl::algorithm::deconvolution_direct;
    return Deconv::primitive_desc(w.bias.defined()
                                      ? Deconv::desc(inference, direct, src, weights, bias, dst,
                                                     strides, dilations(a), padding_l, padding_r)
                                      : Deconv::desc(inference, direct, src, weights, dst, strides,
                                                     dilations(a), padding_l, padding_r),
                                  attr, oneDnnEngine());
  }
  using Conv = dnnl::convolution_forward;
  const auto how = algorithm == ConvAlgorithm::kWinograd ? dnnl::algorithm::convolution_winograd
                                                         : dnnl::algorithm::convolution_direct;
  return Conv::primitive_desc(w.bias.defined()
                                  ? Conv::desc(inference, how, src, weights, bias, dst, strides,
                                               dilations(a), padding_l, padding_r)
                                  : Conv::desc(inference, how, src, weights, dst, strides,
                                               dilations(a), padding_l, padding_r),
                              attr, oneDnnEngine());
}

// The image a weight's layout is chosen for: [1, C, 32, 32] (3-D: [1, C, 16, 16, 16]), or the
// kernel's span where that is larger, and the convolution's output on it.
struct RepresentativeImage {
  int64_t side[kMaxConvSpatialDims] = {};
  int64_t out[kMaxConvSpatialDims] = {};
};

RepresentativeImage representativeImage(const OneDnnConvWeight& w) {
  const ConvArguments& a = w.arguments;
  RepresentativeImage image;
  for (int i = 0; i < a.spatial_dims; ++i) {
    image.side[i] =
        std::max<int64_t>(a.spatial_dims == 3 ? 16 : 32, a.dilation[i] * (w.kernel[i] - 1) + 1);
    image.out[i] = outputSize(image.side[i], w.kernel[i], a, i);
  }
  return image;
}

// The primitive of `algorithm` on the representative image, weights in `weights` (may be format
// any). Throws dnnl::error when oneDNN has no such convolution.
//
// oneDNN's Winograd also picks its weight layout by the OpenMP thread count the primitive is
// created with (64 -> 128 channels at 32x32: output blocks paired on two threads, not on one):
// a weight packed on one count could not be read back on another (the direct fallback's repack
// threw). So Winograd's representative is always one thread's, the count the pieces of one
// image on the runtime's own workers and one-thread runtimes run with; an image whose primitive
// wants another layout gets it packed once more (build).
dnnl::primitive_desc
representativePrimitive(const OneDnnConvWeight& w, const memory::desc& weights,
                        const dnnl::primitive_attr& attr, ConvAlgorithm algorithm,
                        memory::format_tag activations = memory::format_tag::any,
                        memory::format_tag input = memory::format_tag::any) {
  std::optional<OneDnnThreads> one_thread;
  if (algorithm == ConvAlgorithm::kWinograd) {
    one_thread.emplace(/*multiply_adds=*/0, /*most=*/1);
  }
  const int dims = w.arguments.spatial_dims;
  const RepresentativeImage image = representativeImage(w);
  const memory::desc src(activationDims(1, w.in_channels, image.side, dims), w.multiply,
                         input == memory::format_tag::any ? activations : input);
  const memory::desc dst(activationDims(1, w.out_channels, image.out, dims), kF32, activations);
  return primitiveDesc(w, src, weights, dst, attr, algorithm);
}

// The layout `algorithm`'s primitive picks for the weight. For the direct algorithm it depends on
// the channels, the kernel and the instruction set, not on the image; Winograd's also depends on
// the image (its blocking), and the representative one's suits resnet-sized layers (56x56,
// 28x28). A shape whose primitive wants another layout repacks for itself
// (OneDnnConvState::repacked). Throws dnnl::error when oneDNN has no such convolution.
memory::desc preferredWeightDesc(const OneDnnConvWeight& w, const dnnl::primitive_attr& attr,
                                 ConvAlgorithm algorithm) {
  return representativePrimitive(
             w, memory::desc(weightDims(w), w.multiply, memory::format_tag::any), attr, algorithm)
      .weights_desc(0);
}

// oneDNN has no reorder out of its Winograd weight layouts, and only primitives on the image the
// layout was chosen for read it: the weight is read back by convolving unit impulses on that
// image. An impulse at (y, x) of input channel c (bias zero) makes output
// (y + padding - ky, x + padding - kx) weight[:, c, ky, kx]; impulses 3 pixels apart do not
// overlap, so one run reads up to 100 channels. Exact but for the rounding of the tile
// transforms (a few ulp).
at::Tensor unpackWinogradWeight(const OneDnnConvWeight& w) {
  // The primitive runs on the thread count it was created for (representativePrimitive's).
  const OneDnnThreads one_thread(/*multiply_adds=*/0, /*most=*/1);
  const int64_t ic = w.in_channels;
  const int64_t oc = w.out_channels;
  const RepresentativeImage image = representativeImage(w);
  const dnnl::primitive_desc pd =
      representativePrimitive(w, w.desc, dnnl::primitive_attr(), ConvAlgorithm::kWinograd);
  const dnnl::engine& engine = oneDnnEngine();
  const memory::desc src_plain(activationDims(1, ic, image.side, 2), kF32,
                               memory::format_tag::nchw);
  const memory::desc dst_plain(activationDims(1, oc, image.out, 2), kF32, memory::format_tag::nchw);
  memory src(pd.src_desc(0), engine);
  memory dst(pd.dst_desc(0), engine);
  memory weights(w.desc, engine, w.storage.data_ptr());
  const at::Tensor zero_bias = at::zeros({oc}, at::kFloat);
  memory bias(memory::desc({oc}, kF32, memory::format_tag::x), engine, zero_bias.data_ptr());
  dnnl::primitive conv(pd);
  dnnl::stream stream(engine);

  const int64_t pad_y = w.arguments.padding[0];
  const int64_t pad_x = w.arguments.padding[1];
  // Impulse rows and columns: 2, 5, 8, ... while every tap's output stays inside the image.
  std::vector<std::pair<int64_t, int64_t>> slots;
  for (int64_t y = 2; y + pad_y < image.out[0] && y + pad_y >= 2; y += 3) {
    for (int64_t x = 2; x + pad_x < image.out[1] && x + pad_x >= 2; x += 3) {
      if (y < image.side[0] && x < image.side[1]) {
        slots.emplace_back(y, x);
      }
    }
  }
  TORCH_CHECK(!slots.empty(), "unpackConvWeight: no room for impulses");
  at::Tensor plain = at::empty({oc, ic, 3, 3}, at::kFloat);
  auto weight = plain.accessor<float, 4>();
  at::Tensor impulses = at::empty({1, ic, image.side[0], image.side[1]}, at::kFloat);
  at::Tensor responses = at::empty({1, oc, image.out[0], image.out[1]}, at::kFloat);
  auto in = impulses.accessor<float, 4>();
  auto out = responses.accessor<float, 4>();
  for (int64_t first = 0; first < ic; first += static_cast<int64_t>(slots.size())) {
    const int64_t count = std::min<int64_t>(ic - first, static_cast<int64_t>(slots.size()));
    impulses.zero_();
    for (int64_t i = 0; i < count; ++i) {
      in[0][first + i][slots[i].first][slots[i].second] = 1.f;
    }
    reorder(memory(src_plain, engine, impulses.data_ptr()), src);
    std::unordered_map<int, memory> arguments{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (w.bias.defined()) {
      arguments.emplace(DNNL_ARG_BIAS, bias);
    }
    conv.execute(stream, arguments);
    stream.wait();
    reorder(dst, memory(dst_plain, engine, responses.data_ptr()));
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t o = 0; o < oc; ++o) {
        for (int64_t ky = 0; ky < 3; ++ky) {
          for (int64_t kx = 0; kx < 3; ++kx) {
            weight[o][first + i][ky][kx] =
                out[0][o][slots[i].first + pad_y - ky][slots[i].second + pad_x - kx];
          }
        }
      }
    }
  }
  return plain;
}

// The weight in PyTorch's layout, a new tensor.
at::Tensor plainWeight(const OneDnnConvWeight& w) {
  if (w.algorithm == ConvAlgorithm::kWinograd) {
    return unpackWinogradWeight(w);
  }
  at::Tensor plain = at::empty(plainWeightSizes(w), at::kFloat);
  reorder(memory(w.desc, oneDnnEngine(), w.storage.data_ptr()),
          memory(plainWeightDesc(w), oneDnnEngine(), plain.data_ptr()));
  return plain;
}

// The weight reordered into `layout` at `data`. oneDNN reorders into and out of Winograd's
// layouts from PyTorch's only.
void repackWeight(const OneDnnConvWeight& w, const memory::desc& layout, void* data) {
  if (w.algorithm == ConvAlgorithm::kWinograd || layout.data.format_kind == dnnl_format_kind_wino) {
    const at::Tensor plain = plainWeight(w);
    reorder(memory(plainWeightDesc(w), oneDnnEngine(), plain.data_ptr()),
            memory(layout, oneDnnEngine(), data));
    return;
  }
  reorder(memory(w.desc, oneDnnEngine(), w.storage.data_ptr()),
          memory(layout, oneDnnEngine(), data));
}

// The packed weight in `layout`: its own storage, or a copy made once for every runtime.
void* weightIn(const OneDnnConvWeight& w, const memory::desc& layout) {
  if (layout == w.desc) {
    return w.storage.data_ptr();
  }
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  for (auto& [desc, storage] : w.shared.weights) {
    if (desc == layout) {
      return storage.data_ptr();
    }
  }
  at::Tensor storage = at::empty({static_cast<int64_t>(layout.get_size())}, at::kByte);
  repackWeight(w, layout, storage.data_ptr());
  w.shared.weights.emplace_back(layout, storage);
  return storage.data_ptr();
}

// Whether `layout` is one `w`'s convolutions can be built for: the blocked one needs float32
// direct convolutions, ungrouped, of whole blocks of channels.
bool layoutApplies(const OneDnnConvWeight& w, ActivationLayout layout) {
  if (layout == ActivationLayout::kLibraryChoice) {
    return true;
  }
  return w.algorithm == ConvAlgorithm::kDirect && w.multiply == kF32 && !w.arguments.transposed &&
         w.arguments.groups == 1 && w.in_channels % kChannelBlock == 0 &&
         w.out_channels % kChannelBlock == 0;
}

memory::format_tag blockedTag(int spatial_dims) {
  return spatial_dims == 3 ? memory::format_tag::nCdhw16c : memory::format_tag::nChw16c;
}

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
  // A channels-last output written as a range of a larger one's channels, whose dims these are:
  // the primitive writes a dense result in scratch, which a reorder spreads into the range.
  // Empty: the output is dst, dense.
  Dims dst_whole;
  bool scaled_weights = false; // ConvKey::scaled_weights
};

// The strides of a dense plain (NCHW / NCDHW) tensor of `dims`.
Dims plainStrides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size() - 1; d > 0; --d) {
    strides[d - 1] = strides[d] * dims[d];
  }
  return strides;
}

// The whole convolution of an input of `key`.
ConvShape wholeShape(const OneDnnConvWeight& w, const ConvKey& key) {
  const int spatial_dims = w.arguments.spatial_dims;
  int64_t out_sizes[kMaxConvSpatialDims] = {};
  for (int i = 0; i < spatial_dims; ++i) {
    out_sizes[i] = outputSize(key.size[i], w.kernel[i], w.arguments, i);
  }
  ConvShape shape{activationDims(key.batch, w.in_channels, key.size, spatial_dims),
                  activationDims(key.batch, w.out_channels, out_sizes, spatial_dims),
                  key.channels_last,
                  padding(w.arguments),
                  key.plain_into_channels_last,
                  key.src_blocked,
                  key.dst_blocked};
  shape.scaled_weights = key.scaled_weights;
  return shape;
}

// A channels-last float32 tensor of `dims`: NHWC (NDHWC), or for 16 channels the same bytes
// described as 16-channel blocks (nChw16c), the layout oneDNN's first-layer kernel writes.
memory::desc channelsLastDesc(const Dims& dims, int spatial_dims) {
  return memory::desc(dims, kF32,
                      dims[1] == kChannelBlock
                          ? blockedTag(spatial_dims)
                          : activationTag(spatial_dims, /*channels_last=*/true));
}

// Channels [offset, offset + dims[1]) of a dense `whole` laid out as `tag`: dims with the whole's
// strides (the offset is the caller's, on the data pointer).
memory::desc channelRange(const Dims& dims, const Dims& whole, memory::format_tag tag) {
  const memory::desc dense(whole, kF32, tag);
  const auto& strides = dense.data.format_desc.blocking.strides;
  return memory::desc(dims, kF32, Dims(strides, strides + whole.size()));
}

bool isReferenceImplementation(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// For a plain input into a channels-last or channel-blocked output: the primitive reading
// `src_user` and writing `dst_user` as they are (no reorder on either side), where oneDNN has a
// kernel for that other than its reference one (float32, direct, a stem's few input channels
// read from NCHW); else empty, and the caller's primitive reorders.
dnnl::primitive_desc plainIntoOtherLayout(const OneDnnConvWeight& w, const ConvShape& shape,
                                          const memory::desc& src_user,
                                          const memory::desc& dst_user,
                                          const memory::desc& any_weights,
                                          const dnnl::primitive_attr& attr) {
  const bool plain_into_other =
      shape.plain_into_channels_last || (shape.dst_blocked && !shape.src_blocked);
  if (!plain_into_other || w.algorithm != ConvAlgorithm::kDirect || w.multiply != kF32) {
    return {};
  }
  try {
    dnnl::primitive_desc pd =
        primitiveDesc(w, src_user, any_weights, dst_user, attr, ConvAlgorithm::kDirect, &shape.pad);
    return isReferenceImplementation(pd) ? dnnl::primitive_desc() : pd;
  } catch (const dnnl::error&) {
    return {};
  }
}

// Where activations forced into the blocked layout left oneDNN only its reference kernel
// (`forced`): the direct convolution with activations in the layout oneDNN picks, reordered from
// and to the blocked tensors by the caller, where that is not the reference kernel; else `forced`.
// oneDNN's blocked kernels take a few channels (a bottleneck's 8 or 12, padded to a block) only
// from a plain input: RAFT's 8 -> 8 3x3 at 64x64 between blocked 1x1s took 68 ms on the
// reference kernel, hundreds of times what the reorders cost.
dnnl::primitive_desc unforcedLayout(const OneDnnConvWeight& w, const ConvShape& shape,
                                    const dnnl::primitive_attr& attr, dnnl::primitive_desc forced) {
  try {
    const memory::desc any_src(shape.src, w.multiply, memory::format_tag::any);
    const memory::desc any_dst(shape.dst, kF32, memory::format_tag::any);
    const memory::desc any_weights(weightDims(w), w.multiply, memory::format_tag::any);
    dnnl::primitive_desc pd =
        primitiveDesc(w, any_src, any_weights, any_dst, attr, ConvAlgorithm::kDirect, &shape.pad);
    return isReferenceImplementation(pd) ? forced : pd;
  } catch (const dnnl::error&) {
    return forced;
  }
}

bool isGemmImplementation(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// Where oneDNN, free to pick the activations' layout (`picked`), picked im2col + GEMM, or another
// layout than the caller's channels last: the direct kernel on channels-last activations, where
// it has one (as ATen asks oneDNN for the input's layout); else `picked`. It picks them for grouped
// convolutions of few channels per group: 64 channels in 32 groups at 56x56 took 2.05 ms on GEMM
// on NCHW (and the reorders from and to channels last) against 0.44 ms direct, 8 -> 100 channels
// in 2 groups 1.15 against 0.29 ms; 256 channels in 64 groups ran in a 4-channel blocked layout,
// whose reorders took 2.8 of its 3.2 ms.
dnnl::primitive_desc directChannelsLast(const OneDnnConvWeight& w, const ConvShape& shape,
                                        const dnnl::primitive_attr& attr,
                                        dnnl::primitive_desc picked) {
  try {
    const auto tag = activationTag(w.arguments.spatial_dims, /*channels_last=*/true);
    const memory::desc any_weights(weightDims(w), w.multiply, memory::format_tag::any);
    dnnl::primitive_desc pd =
        primitiveDesc(w, memory::desc(shape.src, w.multiply, tag), any_weights,
                      memory::desc(shape.dst, kF32, tag), attr, ConvAlgorithm::kDirect, &shape.pad);
    return isReferenceImplementation(pd) || isGemmImplementation(pd) ? picked : pd;
  } catch (const dnnl::error&) {
    return picked;
  }
}

// Whether a Winograd weight's convolution may fall back to the direct algorithm (repacking the
// weight for it) where no Winograd implementation reads the packed layout.
enum class DirectFallback { kAllowed, kRefused };

// Builds `state` for `shape` with activations in `layout`; state.supported says whether oneDNN
// had a primitive (and reorders) for it.
void build(OneDnnConvState& state, const ConvShape& shape, const OneDnnConvWeight& w,
           const ConvEpilogue& epilogue, ActivationLayout layout, WeightCopy copy,
           DirectFallback direct_fallback = DirectFallback::kAllowed) {
  state.supported = false;
  const int spatial_dims = w.arguments.spatial_dims;
  const Dims& src_dims = shape.src;
  const Dims& dst_dims = shape.dst;
  const auto user_tag = activationTag(spatial_dims, shape.channels_last);
  const memory::desc src_dense(src_dims, kF32,
                               shape.src_blocked ? blockedTag(spatial_dims) : user_tag);
  // A slab of a plain input: oneDNN's kernels read dense tensors only (its reference one takes
  // strides, 1000x slower), so the primitive reads src_dense, a copy of the slab in scratch.
  const memory::desc src_user = shape.src_whole.empty()
                                    ? src_dense
                                    : memory::desc(src_dims, kF32, plainStrides(shape.src_whole));
  const memory::desc dst_user =
      !shape.dst_whole.empty()         ? channelRange(dst_dims, shape.dst_whole, user_tag)
      : shape.dst_blocked              ? memory::desc(dst_dims, kF32, blockedTag(spatial_dims))
      : shape.plain_into_channels_last ? channelsLastDesc(dst_dims, spatial_dims)
                                       : memory::desc(dst_dims, kF32, user_tag);
  const bool blocked = layout == ActivationLayout::kChannelBlocked || shape.dst_blocked;
  const auto activation_tag = blocked ? blockedTag(spatial_dims) : memory::format_tag::any;
  // A bfloat16 weight's input differs from src_user in type, so it is always reordered (rounded).
  const memory::desc any_src(src_dims, w.multiply, activation_tag);
  const memory::desc any_dst(dst_dims, kF32, activation_tag);
  const memory::desc any_weights(weightDims(w), w.multiply, memory::format_tag::any);
  const dnnl::primitive_attr attr = attributes(epilogue);
  dnnl::primitive_desc pd = plainIntoOtherLayout(w, shape, src_dense, dst_user, any_weights, attr);
  if (!pd) {
    try {
      // Winograd on the shared packed weight: oneDNN has more than one Winograd implementation
      // (another for larger batches), each with its own weight layout, and letting it choose
      // would repack the weight for every shape. Where no implementation reads that layout
      // (or with direct weights), direct, in the layout it prefers.
      pd = w.algorithm == ConvAlgorithm::kWinograd
               ? primitiveDesc(w, any_src, w.desc, any_dst, attr, ConvAlgorithm::kWinograd,
                               &shape.pad)
               : primitiveDesc(w, any_src, any_weights, any_dst, attr, ConvAlgorithm::kDirect,
                               &shape.pad);
    } catch (const dnnl::error&) {
      // One image whose Winograd primitive wants another layout than the packed one, chosen on
      // the representative image and one thread (representativePrimitive): a larger image
      // (efficientnet_v2_s's 48 -> 192 at 56x56: 2.1 ms direct, 1.2-1.4 in that layout) or more
      // OpenMP threads. Winograd in that layout, packed once in SharedLayouts (weightIn).
      if (w.algorithm == ConvAlgorithm::kWinograd && src_dims[0] == 1) {
        try {
          pd = primitiveDesc(w, any_src, any_weights, any_dst, attr, ConvAlgorithm::kWinograd,
                             &shape.pad);
        } catch (const dnnl::error&) {
          pd = dnnl::primitive_desc();
        }
      }
      if (!pd && w.algorithm == ConvAlgorithm::kWinograd &&
          direct_fallback == DirectFallback::kRefused) {
        return;
      }
      try {
        if (!pd) {
          pd = primitiveDesc(w, any_src, any_weights, any_dst, attr, ConvAlgorithm::kDirect,
                             &shape.pad);
        }
      } catch (const dnnl::error&) {
        return; // no implementation for these arguments: the fallback runs the node
      }
    }
    if (blocked && isReferenceImplementation(pd)) {
      pd = unforcedLayout(w, shape, attr, std::move(pd));
    } else if (!blocked && w.algorithm == ConvAlgorithm::kDirect && w.multiply == kF32 &&
               (isGemmImplementation(pd) ||
                (shape.channels_last &&
                 (pd.src_desc(0) != src_dense || pd.dst_desc(0) != dst_user)))) {
      pd = directChannelsLast(w, shape, attr, std::move(pd));
    }
  }
  // An implementation can accept the descriptors and still fail to generate its kernel (oneDNN
  // 2.6's AMX bfloat16 convolution for a grouped, dilated 1-D layer): the next one may not.
  for (;;) {
    try {
      state.primitive = dnnl::primitive(pd);
      break;
    } catch (const dnnl::error&) {
      if (!pd.next_impl()) {
        return; // the fallback runs the node
      }
    }
  }
  const dnnl::engine& engine = oneDnnEngine();
  state.reorder_src = pd.src_desc(0) != src_user;
  state.reorder_dst = pd.dst_desc(0) != dst_user;
  state.src_user = memory(src_user, engine, DNNL_MEMORY_NONE);
  state.dst_user = memory(dst_user, engine, DNNL_MEMORY_NONE);
  state.src = memory(pd.src_desc(0), engine, DNNL_MEMORY_NONE);
  state.dst = memory(pd.dst_desc(0), engine, DNNL_MEMORY_NONE);
  try {
    if (state.reorder_src) {
      state.src_reorder = dnnl::reorder(state.src_user, state.src);
    }
    if (state.reorder_dst) {
      state.dst_reorder = dnnl::reorder(state.dst, state.dst_user);
      if (epilogue.has_residual) {
        state.residual_reorder = dnnl::reorder(state.dst_user, state.dst);
      }
    }
  } catch (const dnnl::error&) {
    return; // no reorder between these layouts: the fallback runs the node
  }
  if (copy == WeightCopy::kInPlace && pd.weights_desc(0) != w.desc) {
    return;
  }
  state.dst_slab = !shape.dst_whole.empty();
  void* weight_data = nullptr;
  if (copy == WeightCopy::kOwn && pd.weights_desc(0) != w.desc) {
    state.own_weight = at::empty({static_cast<int64_t>(pd.weights_desc(0).get_size())}, at::kByte);
    repackWeight(w, pd.weights_desc(0), state.own_weight.data_ptr());
    weight_data = state.own_weight.data_ptr();
  } else {
    weight_data = weightIn(w, pd.weights_desc(0));
  }
  state.weights = memory(pd.weights_desc(0), engine, weight_data);
  if (w.bias.defined()) {
    state.bias = memory(memory::desc({w.out_channels}, kF32, memory::format_tag::x), engine,
                        w.bias.data_ptr());
  }
  state.scratchpad_bytes = pd.scratchpad_desc().get_size();
  size_t offset = 0;
  if (state.reorder_src) {
    state.src_offset = offset;
    offset += alignScratchOffset(pd.src_desc(0).get_size());
  }
  if (state.reorder_dst) {
    state.dst_offset = offset;
    offset += alignScratchOffset(pd.dst_desc(0).get_size());
  }
  state.scratchpad_offset = offset;
  if (state.scratchpad_bytes > 0) {
    state.scratchpad = memory(pd.scratchpad_desc(), engine, DNNL_MEMORY_NONE);
    offset += alignScratchOffset(state.scratchpad_bytes);
  }
  if (shape.scaled_weights) {
    // Ungrouped weights are [OC, IC, k...]: the factors scale dim 1, whatever the blocking.
    dnnl::primitive_attr scaling;
    scaling.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
    const memory::desc& layout = pd.weights_desc(0);
    try {
      state.weight_scaling =
          dnnl::reorder(dnnl::reorder::primitive_desc(engine, layout, engine, layout, scaling));
    } catch (const dnnl::error&) {
      return; // the fallback runs the node
    }
    state.weight_scales = memory(memory::desc({w.in_channels}, kF32, memory::format_tag::a), engine,
                                 DNNL_MEMORY_NONE);
    state.scaled_weights = memory(layout, engine, DNNL_MEMORY_NONE);
    state.scaled_weights_offset = offset;
    offset += alignScratchOffset(layout.get_size());
  }
  state.scratch_bytes = offset;
  state.stream = dnnl::stream(engine);
  state.supported = true;
}

// Builds `state` for the whole convolution of `key`: one primitive, or for a Winograd weight
// that oneDNN's Winograd for the whole batch does not read, one for an image, run image after
// image. oneDNN 2.6 has two Winograd implementations with their own weight layouts, and the
// packed one is chosen for one image (packForWinograd); for a batch it takes the other, whose
// layout differs. One image at a time on the packed weight keeps Winograd's saving without a
// second copy of the weight (resnet18 at batch 8, Intel Xeon, 1 thread: a 64-channel 3x3 at
// 56x56 6.4 ms so, 10.9 ms direct on the batch, the fallback before).
void build(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
           const ConvEpilogue& epilogue, ActivationLayout layout,
           WeightCopy copy = WeightCopy::kShared) {
  state.key = key;
  state.built = true;
  state.images = 0;
  state.pieces.clear();
  state.partial_floats = 0;
  const ConvShape whole = wholeShape(w, key);
  if (key.scaled_weights && key.batch > 1) { // each image's weight scaled by its factors
    ConvShape image = whole;
    image.src[0] = image.dst[0] = 1;
    build(state, image, w, epilogue, layout, copy);
    state.images = key.batch;
    return;
  }
  if (w.algorithm == ConvAlgorithm::kWinograd && key.batch > 1) {
    build(state, whole, w, epilogue, layout, copy, DirectFallback::kRefused);
    if (state.supported) {
      return;
    }
    ConvShape image = whole;
    image.src[0] = image.dst[0] = 1;
    build(state, image, w, epilogue, layout, copy, DirectFallback::kRefused);
    if (state.supported) {
      state.images = key.batch;
      return;
    }
  }
  build(state, whole, w, epilogue, layout, copy);
}

void execute(dnnl::stream& stream, const dnnl::primitive& primitive,
             std::initializer_list<dnnl_exec_arg_t> arguments) {
  // The C call takes the arguments as an array: the C++ one wants an unordered_map per call.
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(),
                                                 static_cast<int>(arguments.size()),
                                                 arguments.begin()),
                          "oneDNN convolution failed");
}

// One convolution with `state` built: x and out in the caller's layout; `residual` (out's
// shape and layout) added first when the epilogue has one; scratch of state.scratch_bytes;
// `trailing` applied to out last (an activation oneDNN's post-ops would compute slower);
// `weight_scales` (one per input channel) multiply the weight first where the state was built
// for ConvKey::scaled_weights (else nullptr).
void run(OneDnnConvState& state, const OneDnnConvWeight& w, void* x, void* out,
         const void* residual, char* scratch, std::optional<vec::UnaryOp> trailing,
         const float* weight_scales) {
  state.src_user.set_data_handle(x);
  state.dst_user.set_data_handle(out);
  state.src.set_data_handle(state.reorder_src ? scratch + state.src_offset : x);
  state.dst.set_data_handle(state.reorder_dst ? scratch + state.dst_offset : out);
  if (residual != nullptr) {
    // The sum post-op adds what dst holds: the residual, in the primitive's layout.
    if (state.reorder_dst) {
      memory from(state.dst_user.get_desc(), oneDnnEngine(), const_cast<void*>(residual));
      execute(state.stream, state.residual_reorder,
              {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, state.dst.get()}});
    } else {
      std::memcpy(out, residual, state.dst_user.get_desc().get_size());
    }
  }
  if (state.reorder_src) {
    execute(state.stream, state.src_reorder,
            {{DNNL_ARG_FROM, state.src_user.get()}, {DNNL_ARG_TO, state.src.get()}});
  }
  dnnl_memory_t weights = state.weights.get();
  if (weight_scales != nullptr) {
    state.weight_scales.set_data_handle(const_cast<float*>(weight_scales));
    state.scaled_weights.set_data_handle(scratch + state.scaled_weights_offset);
    execute(state.stream, state.weight_scaling,
            {{DNNL_ARG_FROM, state.weights.get()},
             {DNNL_ARG_TO, state.scaled_weights.get()},
             {DNNL_ARG_ATTR_OUTPUT_SCALES, state.weight_scales.get()}});
    weights = state.scaled_weights.get();
  }
  std::vector<dnnl_exec_arg_t> arguments{{DNNL_ARG_SRC, state.src.get()},
                                         {DNNL_ARG_WEIGHTS, weights},
                                         {DNNL_ARG_DST, state.dst.get()}};
  if (w.bias.defined()) {
    arguments.push_back({DNNL_ARG_BIAS, state.bias.get()});
  }
  if (state.scratchpad_bytes > 0) {
    state.scratchpad.set_data_handle(scratch + state.scratchpad_offset);
    arguments.push_back({DNNL_ARG_SCRATCHPAD, state.scratchpad.get()});
  }
  dnnl::error::wrap_c_api(dnnl_primitive_execute(state.primitive.get(), state.stream.get(),
                                                 static_cast<int>(arguments.size()),
                                                 arguments.data()),
                          "oneDNN convolution failed");
  if (trailing && state.dst_slab) {
    state.stream.wait();
    vec::mapFast(*trailing, static_cast<float*>(state.dst.get_data_handle()),
                 static_cast<int64_t>(state.dst.get_desc().get_size() / sizeof(float)));
    trailing.reset();
  }
  if (state.reorder_dst) {
    execute(state.stream, state.dst_reorder,
            {{DNNL_ARG_FROM, state.dst.get()}, {DNNL_ARG_TO, state.dst_user.get()}});
  }
  state.stream.wait();
  if (trailing) {
    const auto floats = static_cast<int64_t>(state.dst_user.get_desc().get_size() / sizeof(float));
    vec::mapFast(*trailing, static_cast<float*>(out), floats);
  }
}

// Seconds one convolution of `key` takes with activations in `layout`, reorders to and from the
// caller's layout included: the best of a few runs on zeros, after one untimed; nullopt when
// oneDNN has no primitive for it, or it fails to run. Allocates (once per shape and weight, on a
// first run).
std::optional<double> timeLayout(const OneDnnConvWeight& w, const ConvKey& key,
                                 const ConvEpilogue& epilogue, ActivationLayout layout) {
  constexpr int kTimedRuns = 2;
  OneDnnConvState state;
  build(state, key, w, epilogue, layout, WeightCopy::kOwn);
  if (!state.supported) {
    return std::nullopt;
  }
  const auto bytes = [](size_t count) {
    return at::zeros({static_cast<int64_t>(count)}, at::kByte);
  };
  at::Tensor x = bytes(state.src_user.get_desc().get_size());
  at::Tensor out = bytes(state.dst_user.get_desc().get_size());
  at::Tensor residual = epilogue.has_residual ? bytes(out.numel()) : at::Tensor();
  at::Tensor scratch = bytes(state.scratch_bytes);
  char* scratch_data = static_cast<char*>(scratch.data_ptr());
  double best = 0;
  for (int i = 0; i <= kTimedRuns; ++i) {
    const auto start = std::chrono::steady_clock::now();
    try {
      run(state, w, x.data_ptr(), out.data_ptr(),
          residual.defined() ? residual.data_ptr() : nullptr, scratch_data, std::nullopt,
          /*weight_scales=*/nullptr);
    } catch (const dnnl::error&) {
      return std::nullopt; // a kernel that fails to run is no candidate
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i == 1 || (i > 1 && seconds < best)) {
      best = seconds;
    }
  }
  return best;
}

// The activation layout of `w`'s convolutions at `key`: oneDNN's choice, unless the blocked one
// measured faster by more than the timing's noise. Measured once per weight and shape, by the
// first runtime to meet it, and shared, so that every runtime computes alike. Only 1-D
// convolutions (lowered to [N, C, 1, L]) are timed: on 2-D networks the choice measured no
// faster (resnet18, mobilenet_v2 / v3_small, efficientnet_b0 within 1%, in one process with
// and without it), while the trials' second copy of each weight, and the copies kept where the
// blocked kernel won by noise, raised resnet18's peak RSS growth over its calls 14 -> 45 MiB.
ActivationLayout chooseLayout(const OneDnnConvWeight& w, const ConvKey& key,
                              const ConvEpilogue& epilogue) {
  constexpr double kMargin = 0.95;
  const bool one_dimensional =
      w.arguments.spatial_dims == 2 && w.kernel[0] == 1 && key.size[0] == 1;
  if (!one_dimensional || key.plain_into_channels_last ||
      !layoutApplies(w, ActivationLayout::kChannelBlocked)) {
    return ActivationLayout::kLibraryChoice;
  }
  {
    std::lock_guard<std::mutex> lock(w.shared.mutex);
    for (const auto& [measured, layout] : w.shared.chosen) {
      if (measured == key) {
        return layout;
      }
    }
  }
  // Timed without the lock, which would hold up every other runtime building this weight's
  // convolutions meanwhile; two runtimes meeting the shape at once may both time it, and the
  // first to finish decides for both.
  ActivationLayout layout = ActivationLayout::kLibraryChoice;
  const std::optional<double> library = timeLayout(w, key, epilogue, layout);
  const std::optional<double> blocked =
      timeLayout(w, key, epilogue, ActivationLayout::kChannelBlocked);
  if (blocked && (!library || *blocked < kMargin * *library)) {
    layout = ActivationLayout::kChannelBlocked;
  }
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  for (const auto& [measured, decided] : w.shared.chosen) {
    if (measured == key) {
      return decided;
    }
  }
  w.shared.chosen.emplace_back(key, layout);
  return layout;
}

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
  const auto offset_bytes = static_cast<int64_t>(sliced.offset0 * sizeof(float));
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

// How many pieces the runtime's own workers run a convolution of `key` in: one per thread where
// its activations are channels-last float32 ones (so that slabs are contiguous), or an NCHW input
// into a channels-last output (a stem: by images, or one image's rows, each piece copying its
// rows of every input channel together), it is large enough to pay for handing out the pieces,
// and it has a dim to split; else 0 (one primitive, on OpenMP's threads).
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
  const bool winograd_pieces = w.algorithm == ConvAlgorithm::kWinograd && key.dst_blocked &&
                               (key.batch >= workers.threads() || key.src_blocked);
  if ((w.algorithm != ConvAlgorithm::kDirect && !winograd_pieces) || w.arguments.transposed ||
      !(key.channels_last || key.dst_blocked || key.plain_into_channels_last) ||
      w.multiply != kF32 ||
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

// Builds `state` for `key` as key.pieces pieces (piecesFor): slabs of the output along
// splitDim, each read from the input rows its windows cover, the padding of the whole where the
// slab meets the input's border and none elsewhere. A piece whose primitive wants another layout
// (a stem's three channels) reorders its own slabs, in its own scratch. state.supported is false
// (and there are no pieces) where oneDNN has no primitive for a piece.
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

// buildPieces for a channel-blocked output (blockedSplit): ranges of images, or of one image's
// output channel blocks, each piece a convolution of its own on dense slabs.
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

// run() of a state built for one image (state.images) on each image of x, out and residual,
// with each image's weight scales (`scales_per_image` floats apart; 0: shared) where there are.
void runImages(OneDnnConvState& state, const OneDnnConvWeight& w, char* x, char* out,
               const char* residual, char* scratch, std::optional<vec::UnaryOp> trailing,
               const float* weight_scales, int64_t scales_per_image) {
  const size_t src_image = state.src_user.get_desc().get_size();
  const size_t dst_image = state.dst_user.get_desc().get_size();
  for (int64_t i = 0; i < state.images; ++i) {
    run(state, w, x + i * src_image, out + i * dst_image,
        residual != nullptr ? residual + i * dst_image : nullptr, scratch, trailing,
        weight_scales != nullptr ? weight_scales + i * scales_per_image : nullptr);
  }
}

// A trailing activation on a whole output, over the threads the primitive had (OpenMP's): on the
// calling thread alone it would be the serial part of every SiLU convolution (efficientnet_b0 at
// batch 8 and 2 threads spent a quarter of its time there). Pieces apply theirs to their slabs.
void applyTrailing(vec::UnaryOp activation, float* out, int64_t floats) {
  constexpr int64_t kGrain = 32768;
  splitIfWorthIt(
      floats, kGrain, static_cast<double>(floats) * kNanosecondsPerElement,
      [&](int64_t begin, int64_t end) { vec::mapFast(activation, out + begin, end - begin); });
}

// run() of every piece of `state`, spread over `workers`; then, for a sum split by input
// channels, the partial sums added into the output.
void runPieces(OneDnnConvState& state, const OneDnnConvWeight& w, char* x, char* out,
               const char* residual, char* scratch, std::optional<vec::UnaryOp> trailing,
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

// The part of `epilogue` oneDNN's post-ops compute: all of it but a sigmoid or silu, which
// vec::mapFast applies after the primitive in a third of the time the post-op adds (about 0.2
// against 0.6-0.7 ns an output on an AMD EPYC, Zen 4: efficientnet_b0's depthwise and 1x1
// convolutions spent a third of their time in it). Measured faster on every kind of
// convolution efficientnet_b0 has (3x3 and 5x5 depthwise, 1x1 expansions, the 320 -> 1280
// head), and level on a compute-bound 3x3 of 64 channels.
ConvEpilogue libraryEpilogue(ConvEpilogue epilogue) {
  if (epilogue.activation && vec::hasFastFormula(*epilogue.activation)) {
    epilogue.activation.reset();
  }
  return epilogue;
}

std::optional<vec::UnaryOp> trailingActivation(const ConvEpilogue& epilogue) {
  if (epilogue.activation && vec::hasFastFormula(*epilogue.activation)) {
    return epilogue.activation;
  }
  return std::nullopt;
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

class OneDnnConv {
public:
  OneDnnConv(std::shared_ptr<const OneDnnConvWeight> weight, ConvEpilogue epilogue,
             int residual_input, int scale_input, ConvOutputLayout output, KernelFunction fallback)
      : weight_(std::move(weight)), epilogue_(libraryEpilogue(epilogue)),
        trailing_(trailingActivation(epilogue)), residual_input_(residual_input),
        scale_input_(scale_input), output_(output), fallback_(std::move(fallback)) {
    pointwise_weight_block_stride_ = pointwiseWeightBlockStride(*weight_);
    depthwise_in_place_ = depthwiseReadsInPlace(*weight_);
    small_image_block_width_ = smallImageBlockWidth(*weight_);
    if (output_ == ConvOutputLayout::kBlocked &&
        (pointwise_weight_block_stride_ || depthwise_in_place_)) {
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
                     : x.dim() != spatial_dims + 2 || x.size(1) != w.in_channels ||
                           !(x.is_contiguous() || x.is_contiguous(channels_last_format)))) {
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
    key.channels_last =
        !src_blocked && (!x.is_contiguous() || x.suggest_memory_format() == channels_last_format);
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
    // Few output pixels against the weight: the product on our GEMM, which prefetches the weight
    // (ops/conv/small_image_gemm.h).
    if (small_image_block_width_ && !scale && out_channels_last && spatial_dims == 2 &&
        x.is_contiguous(channels_last_format) &&
        out_sizes[2] * out_sizes[3] <= conv_gemm::kMaxPixels) {
      runSmallImage(p, x, out_sizes, residual);
      return;
    }
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

private:
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
                      vec::mapFast(*trailing_, image.out + begin * block_floats,
                                   (end - begin) * block_floats);
                    }
                  }
                });
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
    conv.activation = epilogue_.activation ? epilogue_.activation : trailing_;
    conv.params = epilogue_.params;
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
  std::optional<vec::UnaryOp> trailing_;
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
  std::optional<pointwise::PointwiseActivation> pointwise_activation_;
  // The weight's output channels per block where small images run on the blocked GEMM
  // (smallImageBlockWidth), else nullopt.
  std::optional<int64_t> small_image_block_width_;
};

} // namespace

namespace {

// `w` (arguments, sizes and precision set) with `plain`, its weight in PyTorch's layout, stored in
// the layout the direct algorithm prefers; nullptr when oneDNN has no such convolution.
std::shared_ptr<const OneDnnConvWeight> storeDirect(std::shared_ptr<OneDnnConvWeight> w,
                                                    const at::Tensor& plain) {
  try {
    w->desc = preferredWeightDesc(*w, dnnl::primitive_attr(), ConvAlgorithm::kDirect);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  w->storage = at::empty({static_cast<int64_t>(w->desc.get_size())}, at::kByte);
  reorder(memory(plainWeightDesc(*w), oneDnnEngine(), plain.data_ptr()),
          memory(w->desc, oneDnnEngine(), w->storage.data_ptr()));
  return w;
}

} // namespace

bool oneDnnConvPrefersChannelsLast(int spatial_dims) {
  // What a typical 3x3(x3) convolution of the middle of a CNN picks for its activations.
  const auto prefers = [](int dims) {
    OneDnnConvWeight w;
    w.arguments.spatial_dims = dims;
    w.arguments.padding[0] = w.arguments.padding[1] = w.arguments.padding[2] = 1;
    w.out_channels = w.in_channels = 64;
    w.kernel[0] = w.kernel[1] = w.kernel[2] = 3;
    const int64_t sizes[kMaxConvSpatialDims] = {dims == 3 ? 8 : 28, 28, 28};
    const memory::desc activation(activationDims(1, 64, sizes, dims), kF32,
                                  memory::format_tag::any);
    try {
      const dnnl::primitive_desc pd =
          primitiveDesc(w, activation, memory::desc(weightDims(w), kF32, memory::format_tag::any),
                        activation, dnnl::primitive_attr(), ConvAlgorithm::kDirect);
      return pd.src_desc(0) == memory::desc(activationDims(1, 64, sizes, dims), kF32,
                                            activationTag(dims, /*channels_last=*/true));
    } catch (const dnnl::error&) {
      return false;
    }
  };
  static const bool prefers_2d = prefers(2);
  static const bool prefers_3d = prefers(3);
  return spatial_dims == 3 ? prefers_3d : prefers_2d;
}

bool oneDnnConvTakes(vec::UnaryOp activation) {
  return !eltwisesFor(activation, {}).empty();
}

std::shared_ptr<const OneDnnConvWeight>
packConvWeight(const at::Tensor& weight, const at::Tensor& bias, const ConvArguments& arguments) {
  const ConvArguments& a = arguments;
  if ((a.spatial_dims != 2 && a.spatial_dims != 3) || weight.scalar_type() != at::kFloat ||
      weight.dim() != a.spatial_dims + 2 || !weight.is_cpu() || weight.numel() == 0 ||
      a.groups <= 0 || weight.size(0) % a.groups != 0) {
    return nullptr;
  }
  auto packed = std::make_shared<OneDnnConvWeight>();
  packed->arguments = a;
  // PyTorch's weight is [OC, IC / G, k...], transposed [IC, OC / G, k...].
  packed->out_channels = a.transposed ? weight.size(1) * a.groups : weight.size(0);
  packed->in_channels = a.transposed ? weight.size(0) : weight.size(1) * a.groups;
  for (int i = 0; i < a.spatial_dims; ++i) {
    packed->kernel[i] = weight.size(2 + i);
  }
  if (bias.defined() && (bias.scalar_type() != at::kFloat || bias.dim() != 1 ||
                         bias.size(0) != packed->out_channels || !bias.is_cpu())) {
    return nullptr;
  }
  packed->bias = bias.defined() ? bias.contiguous() : at::Tensor();
  return storeDirect(std::move(packed), weight.contiguous());
}

// Where Winograd measured faster, in resnet18 on this AVX-512 machine at 1 thread, its tile
// reorders included: 3x3 stride-1 layers of 64 and 128 channels (26.1 -> 23.5 ms). Fewer
// channels: the tile transforms cost more than the multiplications saved (32 channels measured
// slower alone). More: at the small images such layers see (14x14 and below), reading the
// larger weight cost what was saved (the 256- and 512-channel layers gained nothing). The
// weight grows: oneDNN 2.6 takes F(2x2, 3x3) for 64 channels (16/9 the direct weight) and
// F(4x4, 3x3) for 128 (4x): resnet18 holds 5.6 MiB more, for 11% of its time at batch 1 and 8
// (the 128-channel layers alone: 28.5 -> 25.5 ms, AMD EPYC, 1 thread, one process).
// What bounds the weight is the product of the channel counts, not the larger one: layers of
// 32 to 256 channels whose weight is no larger than a 128 -> 128 one's gained too (AMD EPYC, Zen
// 5, 1 thread, two modules in one process): efficientnet_v2_s's 48 -> 192 and 64 -> 256 (its
// fused MBConv expansions, SiLU after) 28.7 -> 25.0 ms, inception_v3 25.7 -> 23.9, googlenet
// 13.4 -> 12.6, densenet121's 128 -> 32 26.3 -> 25.3; resnet18, resnet50 and vgg11 level.
bool winogradSuits(const OneDnnConvWeight& w, const ConvEpilogue& epilogue) {
  const ConvArguments& a = w.arguments;
  constexpr int64_t kMinChannels = 32;
  constexpr int64_t kMostChannelProduct = 128 * 128;
  if (a.spatial_dims != 2 || a.transposed || a.groups != 1 || w.multiply != kF32 ||
      w.kernel[0] != 3 || w.kernel[1] != 3 || a.stride[0] != 1 || a.stride[1] != 1 ||
      a.dilation[0] != 1 || a.dilation[1] != 1 || w.algorithm != ConvAlgorithm::kDirect ||
      std::min(w.in_channels, w.out_channels) < kMinChannels ||
      w.in_channels % kChannelBlock != 0 || w.out_channels % kChannelBlock != 0 ||
      w.in_channels * w.out_channels > kMostChannelProduct) {
    return false;
  }
  try {
    // oneDNN's Winograd takes fewer post-ops than its direct convolution (the residual sum and
    // relu, not the other activations), and exists for some instruction sets only. A sigmoid
    // or SiLU runs after the primitive anyway (libraryEpilogue).
    preferredWeightDesc(w, attributes(libraryEpilogue(epilogue)), ConvAlgorithm::kWinograd);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

std::shared_ptr<const OneDnnConvWeight> packForWinograd(const OneDnnConvWeight& packed) {
  TORCH_CHECK(packed.algorithm == ConvAlgorithm::kDirect, "packForWinograd: already Winograd");
  auto winograd = std::make_shared<OneDnnConvWeight>(packed); // arguments, sizes, bias
  winograd->algorithm = ConvAlgorithm::kWinograd;
  winograd->desc = preferredWeightDesc(packed, dnnl::primitive_attr(), ConvAlgorithm::kWinograd);
  winograd->storage = at::empty({static_cast<int64_t>(winograd->desc.get_size())}, at::kByte);
  repackWeight(packed, winograd->desc, winograd->storage.data_ptr());
  return winograd;
}

bool bfloat16Pays(const OneDnnConvWeight& packed) {
  const bool depthwise =
      packed.arguments.groups > 1 && packed.arguments.groups == packed.in_channels;
  return !depthwise;
}

std::shared_ptr<const OneDnnConvWeight> repackConvWeight(const OneDnnConvWeight& packed,
                                                         MultiplyPrecision precision) {
  auto repacked = std::make_shared<OneDnnConvWeight>(packed); // arguments, sizes, bias
  repacked->algorithm = ConvAlgorithm::kDirect;
  repacked->multiply =
      precision == MultiplyPrecision::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  return storeDirect(std::move(repacked), plainWeight(packed));
}

MultiplyPrecision multiplyPrecision(const OneDnnConvWeight& packed) {
  return packed.multiply == memory::data_type::bf16 ? MultiplyPrecision::kBFloat16
                                                    : MultiplyPrecision::kFloat32;
}

ConvAlgorithm convAlgorithm(const OneDnnConvWeight& packed) {
  return packed.algorithm;
}

at::Tensor unpackConvWeight(const OneDnnConvWeight& packed) {
  return plainWeight(packed);
}

const at::Tensor& convBias(const OneDnnConvWeight& packed) {
  return packed.bias;
}

const ConvArguments& convArguments(const OneDnnConvWeight& packed) {
  return packed.arguments;
}

int64_t convInChannels(const OneDnnConvWeight& packed) {
  return packed.in_channels;
}

int64_t convOutChannels(const OneDnnConvWeight& packed) {
  return packed.out_channels;
}

bool blockedLayoutSuits(const OneDnnConvWeight& packed) {
  return packed.arguments.spatial_dims == 2 && !packed.arguments.transposed &&
         packed.multiply == kF32;
}

BlockedLayoutGain blockedLayoutGain(const OneDnnConvWeight& packed) {
  const ConvArguments& a = packed.arguments;
  const bool depthwise = a.groups > 1 && a.groups == packed.in_channels;
  const bool pointwise = packed.kernel[0] == 1 && packed.kernel[1] == 1;
  if (depthwise || pointwise || packed.algorithm == ConvAlgorithm::kWinograd) {
    return BlockedLayoutGain::kFaster;
  }
  // Grouped ones of any width run as fast on either layout (320 channels in groups of 16 at
  // 14x14: 74.4 us blocked, 74.8 channels last), so they keep a chain blocked rather than split it
  // with conversions on each side: regnet_y_800mf 8.56 -> 7.98 ms, resnext50_32x4d 40.6 -> 39.1.
  constexpr int64_t kMaxDenseChannels = 128;
  const bool grouped = a.groups > 1;
  return grouped || std::max(packed.in_channels, packed.out_channels) <= kMaxDenseChannels
             ? BlockedLayoutGain::kLevel
             : BlockedLayoutGain::kNone;
}

std::shared_ptr<const OneDnnConvWeight> packForBlockedActivations(const OneDnnConvWeight& packed) {
  TORCH_CHECK(blockedLayoutSuits(packed),
              "packForBlockedActivations: not a 2-D float32 convolution");
  try {
    const memory::desc weights =
        packed.algorithm == ConvAlgorithm::kWinograd
            ? packed.desc
            : memory::desc(weightDims(packed), kF32, memory::format_tag::any);
    // A stem's few input channels: oneDNN's first-layer kernel reads them from NCHW.
    const bool stem = packed.in_channels < kChannelBlock && packed.arguments.groups == 1;
    dnnl::primitive_desc pd =
        representativePrimitive(packed, weights, dnnl::primitive_attr(), packed.algorithm,
                                blockedTag(2), stem ? memory::format_tag::nchw : blockedTag(2));
    if (isReferenceImplementation(pd)) {
      return nullptr;
    }
    if (pd.weights_desc(0) == packed.desc) {
      return std::make_shared<OneDnnConvWeight>(packed); // shares the storage
    }
    auto repacked = std::make_shared<OneDnnConvWeight>(packed); // arguments, sizes, bias
    repacked->desc = pd.weights_desc(0);
    repacked->storage = at::empty({static_cast<int64_t>(repacked->desc.get_size())}, at::kByte);
    repackWeight(packed, repacked->desc, repacked->storage.data_ptr());
    return repacked;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

KernelFunction makeOneDnnConvKernel(std::shared_ptr<const OneDnnConvWeight> packed,
                                    ConvEpilogue epilogue, int residual_input, int scale_input,
                                    ConvOutputLayout output, KernelFunction fallback) {
  return OneDnnConv(std::move(packed), epilogue, residual_input, scale_input, output,
                    std::move(fallback));
}

bool oneDnnConvReadsPlainIntoChannelsLast(const at::Tensor& weight,
                                          const ConvArguments& arguments) {
  if (arguments.spatial_dims != 2 || arguments.transposed || arguments.groups != 1 ||
      weight.scalar_type() != at::kFloat || weight.dim() != 4 || weight.size(0) != kChannelBlock ||
      weight.size(1) >= kChannelBlock) {
    return false;
  }
  OneDnnConvWeight w;
  w.arguments = arguments;
  w.out_channels = weight.size(0);
  w.in_channels = weight.size(1);
  w.kernel[0] = weight.size(2);
  w.kernel[1] = weight.size(3);
  const RepresentativeImage image = representativeImage(w);
  try {
    const dnnl::primitive_desc pd =
        primitiveDesc(w,
                      memory::desc(activationDims(1, w.in_channels, image.side, 2), kF32,
                                   memory::format_tag::nchw),
                      memory::desc(weightDims(w), kF32, memory::format_tag::any),
                      channelsLastDesc(activationDims(1, w.out_channels, image.out, 2), 2),
                      dnnl::primitive_attr(), ConvAlgorithm::kDirect);
    return !isReferenceImplementation(pd);
  } catch (const dnnl::error&) {
    return false;
  }
}

bool oneDnnDepthwiseWantsExplicitPadding(const at::Tensor& weight, const ConvArguments& arguments) {
  if (arguments.spatial_dims != 2 || arguments.transposed || weight.scalar_type() != at::kFloat ||
      weight.dim() != 4 || weight.size(1) != 1 || weight.size(0) % arguments.groups != 0 ||
      (arguments.padding[0] == 0 && arguments.padding[1] == 0)) {
    return false;
  }
  OneDnnConvWeight w;
  w.out_channels = weight.size(0);
  w.in_channels = arguments.groups;
  w.kernel[0] = weight.size(2);
  w.kernel[1] = weight.size(3);
  // Whether oneDNN runs a convolution of these arguments on one of its depthwise kernels
  // (jit_dw, brdgmm_dw) with channels-last activations.
  const auto runsDepthwiseKernel = [&](const ConvArguments& a) {
    w.arguments = a;
    const RepresentativeImage image = representativeImage(w);
    try {
      const dnnl::primitive_desc pd =
          primitiveDesc(w, channelsLastDesc(activationDims(1, w.in_channels, image.side, 2), 2),
                        memory::desc(weightDims(w), kF32, memory::format_tag::any),
                        channelsLastDesc(activationDims(1, w.out_channels, image.out, 2), 2),
                        dnnl::primitive_attr(), ConvAlgorithm::kDirect);
      return std::string(pd.impl_info_str()).find("_dw") != std::string::npos;
    } catch (const dnnl::error&) {
      return false;
    }
  };
  ConvArguments unpadded = arguments;
  unpadded.padding[0] = 0;
  unpadded.padding[1] = 0;
  return !runsDepthwiseKernel(arguments) && runsDepthwiseKernel(unpadded);
}

} // namespace srt::ops
