// One oneDNN (de)convolution primitive: memory descriptors, the epilogue as post-ops, building
// one for a shape (the layouts, the implementation, the reorders around it, the weight in the
// layout it reads) and running it on the caller's tensors.
#include "ops/conv/onednn_conv_internal.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstring>
#include <string>

#include "ops/conv/blocked_layout.h"
#include "ops/core/onednn_engine.h"
#include "ops/core/parallelism.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace onednn_conv {

namespace {

Dims spatial(const int64_t* values, int spatial_dims) {
  return Dims(values, values + spatial_dims);
}

// oneDNN's dilation counts the gaps between taps: PyTorch's dilation minus one.
Dims dilations(const ConvArguments& a) {
  Dims dims;
  for (int i = 0; i < a.spatial_dims; ++i) {
    dims.push_back(a.dilation[i] - 1);
  }
  return dims;
}

} // namespace

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

namespace {

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

} // namespace

void reorder(const memory& from, const memory& to) {
  dnnl::stream stream(oneDnnEngine());
  dnnl::reorder(from, to).execute(stream, const_cast<memory&>(from), const_cast<memory&>(to));
  stream.wait();
}

dnnl::primitive_attr attributes(const ConvEpilogue& epilogue, const memory::desc* binary_residual) {
  dnnl::primitive_attr attr;
  // The scratchpad comes from the node's planned scratch, not from a oneDNN allocation per call.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops post_ops;
  if (epilogue.has_residual && binary_residual != nullptr) {
    post_ops.append_binary(dnnl::algorithm::binary_add, *binary_residual);
  } else if (epilogue.has_residual) {
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

namespace {

Padding padding(const ConvArguments& a) {
  Padding padding{spatial(a.padding, a.spatial_dims), spatial(a.padding, a.spatial_dims)};
  for (int i = 0; i < a.spatial_dims; ++i) {
    // What makes the output output_padding larger, as ATen's oneDNN path does (may go negative).
    padding.right[i] -= a.transposed ? a.output_padding[i] : 0;
  }
  return padding;
}

} // namespace

// The primitive for these memory descriptors (any of them may be format any) computing by
// `algorithm` (transposed convolutions: direct) with `pad` (a piece's; default: the weight's
// arguments'); throws dnnl::error when oneDNN has none.
dnnl::primitive_desc primitiveDesc(const OneDnnConvWeight& w, const memory::desc& src,
                                   const memory::desc& weights, const memory::desc& dst,
                                   const dnnl::primitive_attr& attr, ConvAlgorithm algorithm,
                                   const Padding* pad) {
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

namespace {

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

} // namespace

memory::format_tag blockedTag(int spatial_dims) {
  return spatial_dims == 3 ? memory::format_tag::nCdhw16c : memory::format_tag::nChw16c;
}

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
  ConvShape shape;
  shape.src = activationDims(key.batch, w.in_channels, key.size, spatial_dims);
  shape.dst = activationDims(key.batch, w.out_channels, out_sizes, spatial_dims);
  shape.channels_last = key.channels_last;
  shape.pad = padding(w.arguments);
  shape.plain_into_channels_last = key.plain_into_channels_last;
  shape.src_blocked = key.src_blocked;
  shape.dst_blocked = key.dst_blocked;
  shape.scaled_weights = key.scaled_weights;
  shape.residual_in_place = key.residual_in_place;
  if (key.src_strided) {
    shape.src_strides.assign(key.src_strides, key.src_strides + spatial_dims + 2);
  }
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

namespace {

// Channels [offset, offset + dims[1]) of a dense `whole` laid out as `tag`: dims with the whole's
// strides (the offset is the caller's, on the data pointer).
memory::desc channelRange(const Dims& dims, const Dims& whole, memory::format_tag tag) {
  const memory::desc dense(whole, kF32, tag);
  const auto& strides = dense.data.format_desc.blocking.strides;
  return memory::desc(dims, kF32, Dims(strides, strides + whole.size()));
}

// Whether `desc` (of `dims`) is NCHW (NCDHW) images, each dense, the images as far apart as
// a dense batch's or farther (a range of a larger batch's channels).
bool denseImagesNchw(const memory::desc& desc, const Dims& dims) {
  const dnnl_memory_desc_t& md = desc.data;
  if (md.format_kind != dnnl_blocked || md.format_desc.blocking.inner_nblks != 0 ||
      md.offset0 != 0) {
    return false;
  }
  const Dims dense = plainStrides(dims);
  const dnnl_dims_t& strides = md.format_desc.blocking.strides;
  return strides[0] >= dense[0] && std::equal(dense.begin() + 1, dense.end(), strides + 1);
}

} // namespace

bool isReferenceImplementation(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

namespace {

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

// `pd`, whose epilogue adds a residual as a sum post-op, with the residual read by a binary
// addition instead, where the same implementation takes it; else nullopt. The sum post-op adds
// what dst holds, so the residual was copied into the output first: a pass over memory as large
// as the output, on the calling thread (resnet50's 1x1 expansions at batch 8, 56x56, 128 -> 256
// channels: 9.5 -> 8.5 ms at 1 thread, 5.1 -> 4.3 at 2, AMD EPYC, Zen 5).
std::optional<dnnl::primitive_desc> withBinaryResidual(const OneDnnConvWeight& w,
                                                       const dnnl::primitive_desc& pd,
                                                       const ConvEpilogue& epilogue,
                                                       const Padding& pad) {
  if (!epilogue.has_residual || w.algorithm != ConvAlgorithm::kDirect || w.arguments.transposed) {
    return std::nullopt;
  }
  const memory::desc dst = pd.dst_desc(0);
  try {
    dnnl::primitive_desc binary =
        primitiveDesc(w, pd.src_desc(0), pd.weights_desc(0), dst, attributes(epilogue, &dst),
                      ConvAlgorithm::kDirect, &pad);
    if (std::strcmp(binary.impl_info_str(), pd.impl_info_str()) != 0 ||
        binary.weights_desc(0) != pd.weights_desc(0)) {
      return std::nullopt;
    }
    return binary;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

} // namespace

// Builds `state` for `shape` with activations in `layout`; state.supported says whether oneDNN
// had a primitive (and reorders) for it.
void build(OneDnnConvState& state, const ConvShape& shape, const OneDnnConvWeight& w,
           const ConvEpilogue& epilogue, ActivationLayout layout, WeightCopy copy,
           DirectFallback direct_fallback) {
  state.supported = false;
  const int spatial_dims = w.arguments.spatial_dims;
  const Dims& src_dims = shape.src;
  const Dims& dst_dims = shape.dst;
  const auto user_tag = activationTag(spatial_dims, shape.channels_last);
  const memory::desc src_dense(src_dims, kF32,
                               shape.src_blocked ? blockedTag(spatial_dims) : user_tag);
  // A slab of a plain input, or a strided one: oneDNN's kernels read dense tensors only (its
  // reference one takes strides, 1000x slower), so the primitive reads src_dense, a copy of the
  // slab in scratch.
  const memory::desc src_user =
      !shape.src_strides.empty() ? memory::desc(src_dims, kF32, shape.src_strides)
      : shape.src_whole.empty()  ? src_dense
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
  // Where the primitive writes the caller's layout, the residual as it is: its own input.
  state.binary_residual = false;
  if (pd.dst_desc(0) == dst_user && !shape.residual_in_place) {
    if (std::optional<dnnl::primitive_desc> binary =
            withBinaryResidual(w, pd, epilogue, shape.pad)) {
      pd = std::move(*binary);
      state.binary_residual = true;
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
  if (state.binary_residual) {
    state.residual = memory(pd.dst_desc(0), engine, DNNL_MEMORY_NONE);
  }
  state.src_planes[0] = 0;
  if (state.reorder_src && denseImagesNchw(src_user, src_dims) &&
      pd.src_desc(0) == memory::desc(src_dims, kF32, blockedTag(spatial_dims))) {
    state.src_planes[0] = src_dims[0];
    state.src_planes[1] = src_dims[1];
    state.src_planes[2] = 1;
    for (int i = 0; i < spatial_dims; ++i) {
      state.src_planes[2] *= src_dims[2 + i];
    }
    state.src_planes[3] = src_user.data.format_desc.blocking.strides[0];
  }
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
           const ConvEpilogue& epilogue, ActivationLayout layout, WeightCopy copy) {
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

namespace {

void execute(dnnl::stream& stream, const dnnl::primitive& primitive,
             std::initializer_list<dnnl_exec_arg_t> arguments) {
  // The C call takes the arguments as an array: the C++ one wants an unordered_map per call.
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(),
                                                 static_cast<int>(arguments.size()),
                                                 arguments.begin()),
                          "oneDNN convolution failed");
}

} // namespace

// One convolution with `state` built: x and out in the caller's layout; `residual` (out's
// shape and layout) added first when the epilogue has one; scratch of state.scratch_bytes;
// `trailing` applied to out last (an activation oneDNN's post-ops would compute slower);
// `weight_scales` (one per input channel) multiply the weight first where the state was built
// for ConvKey::scaled_weights (else nullptr).
void run(OneDnnConvState& state, const OneDnnConvWeight& w, void* x, void* out,
         const void* residual, char* scratch, std::optional<TrailingActivation> trailing,
         const float* weight_scales) {
  state.src_user.set_data_handle(x);
  state.dst_user.set_data_handle(out);
  state.src.set_data_handle(state.reorder_src ? scratch + state.src_offset : x);
  state.dst.set_data_handle(state.reorder_dst ? scratch + state.dst_offset : out);
  if (residual != nullptr && !state.binary_residual) {
    // The sum post-op adds what dst holds: the residual, in the primitive's layout.
    if (state.reorder_dst) {
      memory from(state.dst_user.get_desc(), oneDnnEngine(), const_cast<void*>(residual));
      execute(state.stream, state.residual_reorder,
              {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, state.dst.get()}});
    } else if (residual != out) { // else written over it (ConvKey::residual_in_place)
      std::memcpy(out, residual, state.dst_user.get_desc().get_size());
    }
  }
  if (state.src_planes[0] > 0) {
    planesIntoBlocks(static_cast<const float*>(x),
                     reinterpret_cast<float*>(scratch + state.src_offset), state.src_planes[0],
                     state.src_planes[1], state.src_planes[2], state.src_planes[3]);
  } else if (state.reorder_src) {
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
  if (state.binary_residual) {
    TORCH_CHECK(residual != nullptr, "oneDNN convolution: built for a residual, given none");
    state.residual.set_data_handle(const_cast<void*>(residual));
    arguments.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, state.residual.get()});
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
    vec::mapFast(trailing->op, static_cast<float*>(state.dst.get_data_handle()),
                 static_cast<int64_t>(state.dst.get_desc().get_size() / sizeof(float)),
                 trailing->params);
    trailing.reset();
  }
  if (state.reorder_dst) {
    execute(state.stream, state.dst_reorder,
            {{DNNL_ARG_FROM, state.dst.get()}, {DNNL_ARG_TO, state.dst_user.get()}});
  }
  state.stream.wait();
  if (trailing) {
    const auto floats = static_cast<int64_t>(state.dst_user.get_desc().get_size() / sizeof(float));
    vec::mapFast(trailing->op, static_cast<float*>(out), floats, trailing->params);
  }
}

namespace {

// Timed runs of a trial, after one untimed: 1-D layouts differ by 1.5x where they differ, our
// loops and oneDNN's kernels by 5-10% (the best of two flipped the small CNN's 16 -> 32 from one
// process to the next).
constexpr int kLayoutRuns = 2;
constexpr int kLoopRuns = 6;

// Seconds `run` takes: the best of `runs` runs, after one untimed.
template <typename Run> double bestSeconds(int runs, Run&& run) {
  double best = 0;
  for (int i = 0; i <= runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i == 1 || (i > 1 && seconds < best)) {
      best = seconds;
    }
  }
  return best;
}

at::Tensor zeroBytes(size_t count) {
  return at::zeros({static_cast<int64_t>(count)}, at::kByte);
}

// Seconds one convolution of `key` takes with activations in `layout`, reorders to and from the
// caller's layout included, on zeros (bestSeconds of `runs`); nullopt when oneDNN has no
// primitive for it, or it fails to run. Allocates (once per shape and weight, on a first run).
std::optional<double> timeLayout(const OneDnnConvWeight& w, const ConvKey& key,
                                 const ConvEpilogue& epilogue, ActivationLayout layout, int runs) {
  OneDnnConvState state;
  build(state, key, w, epilogue, layout, WeightCopy::kOwn);
  if (!state.supported) {
    return std::nullopt;
  }
  const size_t images = std::max<int64_t>(1, state.images); // see runImages
  at::Tensor x = zeroBytes(images * state.src_user.get_desc().get_size());
  at::Tensor out = zeroBytes(images * state.dst_user.get_desc().get_size());
  at::Tensor residual = epilogue.has_residual ? zeroBytes(out.numel()) : at::Tensor();
  at::Tensor scratch = zeroBytes(state.scratch_bytes);
  try {
    return bestSeconds(runs, [&] {
      const void* residual_data = residual.defined() ? residual.data_ptr() : nullptr;
      char* scratch_data = static_cast<char*>(scratch.data_ptr());
      if (state.images > 0) {
        runImages(state, w, static_cast<char*>(x.data_ptr()), static_cast<char*>(out.data_ptr()),
                  static_cast<const char*>(residual_data), scratch_data, std::nullopt,
                  /*weight_scales=*/nullptr, 0);
      } else {
        run(state, w, x.data_ptr(), out.data_ptr(), residual_data, scratch_data, std::nullopt,
            /*weight_scales=*/nullptr);
      }
    });
  } catch (const dnnl::error&) {
    return std::nullopt; // a kernel that fails to run is no candidate
  }
}

// Seconds a Winograd loop takes for `shape` on each of `batch` images of zeros, adding a residual
// of zeros where `with_residual` (bestSeconds of `runs`): `run` (runWinograd or
// runStridedWinograd) over all of an image's `units` (tiles, or rows of them) with
// `scratch_floats`, into outputs of `out_pixels`.
using WinogradRun = void (*)(const winograd::WinogradConv& conv, float* scratch, int64_t first,
                             int64_t last);
double timeWinogradLoop(const winograd::WinogradConv& shape, int64_t out_pixels, int64_t units,
                        int64_t scratch_floats, WinogradRun run, int64_t batch, bool with_residual,
                        int runs) {
  constexpr int64_t kBlock = 16;
  const auto padded = [&](int64_t channels) {
    return shape.channels_last ? channels : (channels + kBlock - 1) / kBlock * kBlock;
  };
  const int64_t src_image = padded(shape.in_channels) * shape.height * shape.width;
  const int64_t out_image = padded(shape.out_channels) * out_pixels;
  const auto floats = [](int64_t count) { return at::zeros({count}, at::kFloat); };
  at::Tensor src = floats(batch * src_image);
  at::Tensor out = floats(batch * out_image);
  at::Tensor residual = with_residual ? floats(batch * out_image) : at::Tensor();
  at::Tensor scratch = floats(scratch_floats);
  return bestSeconds(runs, [&] {
    winograd::WinogradConv image = shape;
    for (int64_t n = 0; n < batch; ++n) {
      image.src = src.data_ptr<float>() + n * src_image;
      image.out = out.data_ptr<float>() + n * out_image;
      image.residual = residual.defined() ? residual.data_ptr<float>() + n * out_image : nullptr;
      run(image, scratch.data_ptr<float>(), 0, units);
    }
  });
}

// Seconds ops/conv/stem_conv.h's loop takes for `shape` on each of `batch` images of zeros
// (bestSeconds of `runs`).
double timeStemConv(const stem_conv::StemConv& shape, int64_t batch, int runs) {
  constexpr int64_t kBlock = 16;
  const int64_t out_channels = shape.channels_last_out
                                   ? shape.out_channels
                                   : (shape.out_channels + kBlock - 1) / kBlock * kBlock;
  const int64_t out_height = stem_conv::outputSize(shape, shape.height);
  const int64_t src_image = shape.in_channels * shape.height * shape.width;
  const int64_t out_image = out_channels * out_height * stem_conv::outputSize(shape, shape.width);
  at::Tensor src = at::zeros({batch * src_image}, at::kFloat);
  at::Tensor out = at::zeros({batch * out_image}, at::kFloat);
  return bestSeconds(runs, [&] {
    stem_conv::StemConv image = shape;
    for (int64_t n = 0; n < batch; ++n) {
      image.src = src.data_ptr<float>() + n * src_image;
      image.out = out.data_ptr<float>() + n * out_image;
      stem_conv::runStemConv(image, 0, out_height);
    }
  });
}

// What `measure` decides for `key`, decided once per weight and shape: looked up in `decisions`
// (one of w.shared's, under its mutex), else measured without the lock, which would hold up every
// other runtime building this weight's convolutions meanwhile; two runtimes meeting the shape at
// once may both measure it, and the first to finish decides for both.
template <typename Decision, typename Measure>
Decision decideOnce(const OneDnnConvWeight& w, std::vector<std::pair<ConvKey, Decision>>& decisions,
                    const ConvKey& key, Measure&& measure) {
  {
    std::lock_guard<std::mutex> lock(w.shared.mutex);
    for (const auto& [measured, decided] : decisions) {
      if (measured == key) {
        return decided;
      }
    }
  }
  const Decision decision = measure();
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  for (const auto& [measured, decided] : decisions) {
    if (measured == key) {
      return decided;
    }
  }
  decisions.emplace_back(key, decision);
  return decision;
}

} // namespace

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
  return decideOnce(w, w.shared.chosen, key, [&] {
    const std::optional<double> library =
        timeLayout(w, key, epilogue, ActivationLayout::kLibraryChoice, kLayoutRuns);
    const std::optional<double> blocked =
        timeLayout(w, key, epilogue, ActivationLayout::kChannelBlocked, kLayoutRuns);
    return blocked && (!library || *blocked < kMargin * *library)
               ? ActivationLayout::kChannelBlocked
               : ActivationLayout::kLibraryChoice;
  });
}

namespace {

// Whether our loop, `loop_seconds` for key's batch on one thread, beats oneDNN's kernel for `key`
// on one thread (what `decisions`, one of w.shared's, records per shape).
template <typename LoopSeconds>
bool loopFaster(const OneDnnConvWeight& w, std::vector<std::pair<ConvKey, bool>>& decisions,
                const ConvKey& key, const ConvEpilogue& epilogue, LoopSeconds&& loop_seconds) {
  return decideOnce(w, decisions, key, [&] {
    int64_t multiply_adds = key.batch * w.in_channels * w.out_channels * 9;
    for (int i = 0; i < 2; ++i) {
      multiply_adds *= outputSize(key.size[i], w.kernel[i], w.arguments, i);
    }
    const OneDnnThreads one(multiply_adds, 1);
    ConvKey library_key = key;
    library_key.threads = one.count();
    const std::optional<double> library =
        timeLayout(w, library_key, epilogue, ActivationLayout::kLibraryChoice, kLoopRuns);
    const double loop = loop_seconds();
    return !library || loop <= *library;
  });
}

} // namespace

// Whether ops/conv/strided_winograd.h's loop runs `w`'s convolution of `key`'s input faster than
// oneDNN's kernel: which is faster depends on the CPU and the channels. On an AMD EPYC (Zen 5) the
// loop ran the small CNN's 16 -> 32 at 64x64 in 34 us against oneDNN's 37.5, on an Intel Xeon
// (AVX-512, 2 MB of L2 a core) in 53 against 49.5 (its transforms, a fixed cost per tile and
// channel block, weigh more against 16 input channels), while the Xeon too ran resnet18's
// 64 -> 128 at 56x56 10% faster in the loop. So each weight's shapes are timed both ways once,
// on one thread, on zeros, by the first runtime to meet them, and shared so that every runtime
// computes alike: the faster wins (where they measure level, either is as good; there is no
// copy to keep for one of them). An activation either applies after both alike (trailing) is
// left out.
bool stridedWinogradFaster(const OneDnnConvWeight& w, const ConvKey& key,
                           const ConvEpilogue& epilogue,
                           const strided_winograd::StridedWinogradConv& conv) {
  return loopFaster(w, w.shared.strided_winograd_faster, key, epilogue, [&] {
    strided_winograd::StridedWinogradConv shape = conv;
    shape.weight = stridedWinogradWeight(w);
    return timeWinogradLoop(
        shape,
        strided_winograd::outputSize(shape.height) * strided_winograd::outputSize(shape.width),
        strided_winograd::tileRows(shape), strided_winograd::scratchFloats(shape),
        strided_winograd::runStridedWinograd, key.batch, epilogue.has_residual, kLoopRuns);
  });
}

// Whether ops/conv/winograd.h's loop runs `w`'s convolution of `key`'s input faster than oneDNN's
// kernel (its Winograd, or direct where Winograd does not pay): timed once per weight and shape
// like stridedWinogradFaster.
bool winogradLoopFaster(const OneDnnConvWeight& w, const ConvKey& key, const ConvEpilogue& epilogue,
                        const winograd::WinogradConv& conv) {
  return loopFaster(w, w.shared.winograd_loop_faster, key, epilogue, [&] {
    winograd::WinogradConv shape = conv;
    shape.weight = winogradLoopWeight(w);
    return timeWinogradLoop(shape, shape.height * shape.width, winograd::tiles(shape),
                            winograd::scratchFloats(shape), winograd::runWinograd, key.batch,
                            epilogue.has_residual, kLoopRuns);
  });
}

// Whether ops/conv/stem_conv.h's loop runs `w`'s convolution of `key`'s input faster than oneDNN's
// kernel: timed once per weight and shape like stridedWinogradFaster (on the AMD EPYC, Zen 5, the
// two measured within 1-11% of each other on torchvision's 3x3 stems, so the CPU decides).
bool stemConvFaster(const OneDnnConvWeight& w, const ConvKey& key, const ConvEpilogue& epilogue,
                    const stem_conv::StemConv& conv) {
  return loopFaster(w, w.shared.stem_conv_faster, key, epilogue, [&] {
    stem_conv::StemConv shape = conv;
    shape.weight = stemConvWeight(w);
    return timeStemConv(shape, key.batch, kLoopRuns);
  });
}

// run() of a state built for one image (state.images) on each image of x, out and residual,
// with each image's weight scales (`scales_per_image` floats apart; 0: shared) where there are.
void runImages(OneDnnConvState& state, const OneDnnConvWeight& w, char* x, char* out,
               const char* residual, char* scratch, std::optional<TrailingActivation> trailing,
               const float* weight_scales, int64_t scales_per_image) {
  const size_t src_image = state.key.src_strided
                               ? static_cast<size_t>(state.key.src_strides[0]) * sizeof(float)
                               : state.src_user.get_desc().get_size();
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
void applyTrailing(const TrailingActivation& activation, float* out, int64_t floats) {
  constexpr int64_t kGrain = 32768;
  splitIfWorthIt(floats, kGrain, static_cast<double>(floats) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   vec::mapFast(activation.op, out + begin, end - begin, activation.params);
                 });
}

// oneDNN's post-ops compute all of `epilogue` but the activation where it trails the primitive,
// applied by vec::mapFast:
//  - a sigmoid or silu, which vec::mapFast applies in a third of the time the post-op adds (about
//    0.2 against 0.6-0.7 ns an output on an AMD EPYC, Zen 4: efficientnet_b0's depthwise and 1x1
//    convolutions spent a third of their time in it). Measured faster on every kind of
//    convolution efficientnet_b0 has (3x3 and 5x5 depthwise, 1x1 expansions, the 320 -> 1280
//    head), and level on a compute-bound 3x3 of 64 channels;
//  - on a Winograd weight, an activation oneDNN's Winograd takes no post-op for (2.6's takes relu
//    and elu, not leaky_relu, the clamps of ReLU6, tanh, gelu or hardswish), which would leave
//    the layer to the direct algorithm: two 64-channel 3x3s at 56x56, 1 thread, AMD EPYC (Zen 5),
//    1868 us with leaky_relu, 1932 with tanh, 1852 with ReLU6, where relu's ran 1042.
EpilogueSplit splitEpilogue(const OneDnnConvWeight& w, const ConvEpilogue& epilogue) {
  EpilogueSplit split{epilogue, std::nullopt};
  if (!epilogue.activation) {
    return split;
  }
  bool trails = vec::hasFastFormula(*epilogue.activation);
  if (!trails && w.algorithm == ConvAlgorithm::kWinograd) {
    try {
      representativePrimitive(w, w.desc, attributes(epilogue), ConvAlgorithm::kWinograd);
    } catch (const dnnl::error&) {
      trails = true;
    }
  }
  if (trails) {
    split.trailing = TrailingActivation{*epilogue.activation, epilogue.params};
    split.library.activation.reset();
  }
  return split;
}

} // namespace onednn_conv

using namespace onednn_conv;

bool ConvArguments::operator==(const ConvArguments& o) const {
  for (int i = 0; i < kMaxConvSpatialDims; ++i) {
    if (stride[i] != o.stride[i] || padding[i] != o.padding[i] || dilation[i] != o.dilation[i] ||
        output_padding[i] != o.output_padding[i]) {
      return false;
    }
  }
  return spatial_dims == o.spatial_dims && groups == o.groups && transposed == o.transposed;
}

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
