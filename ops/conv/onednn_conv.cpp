#include "ops/conv/onednn_conv.h"

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {

struct OneDnnConvWeight {
  ConvArguments arguments;
  int64_t out_channels = 0;
  int64_t in_channels = 0; // of the input, all groups
  int64_t kernel_h = 0;
  int64_t kernel_w = 0;
  dnnl::memory::desc desc; // the packed layout
  // desc.get_size() bytes: the only copy once passes/conv_weight_packing.cpp has taken the
  // plain weight out of the graph. Shapes whose primitive wants another layout, and the
  // reference path, reorder from it.
  at::Tensor storage;
  at::Tensor bias; // [OC] float32 contiguous, or undefined
};

namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

// The weight's dims as oneDNN's convolution takes them: [OC, IC, KH, KW], or with groups
// [G, OC / G, IC / G, KH, KW].
Dims weightDims(const OneDnnConvWeight& w) {
  const int64_t g = w.arguments.groups;
  if (g == 1) {
    return {w.out_channels, w.in_channels, w.kernel_h, w.kernel_w};
  }
  return {g, w.out_channels / g, w.in_channels / g, w.kernel_h, w.kernel_w};
}

memory::format_tag plainWeightTag(const OneDnnConvWeight& w) {
  return w.arguments.groups == 1 ? memory::format_tag::oihw : memory::format_tag::goihw;
}

// oneDNN's dilation counts the gaps between taps: PyTorch's dilation minus one.
Dims dilations(const ConvArguments& a) {
  return {a.dilation[0] - 1, a.dilation[1] - 1};
}

int64_t outputSize(int64_t in, int64_t kernel, const ConvArguments& a, int dim) {
  const int64_t span = a.dilation[dim] * (kernel - 1) + 1;
  return (in + 2 * a.padding[dim] - span) / a.stride[dim] + 1;
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

// What a primitive was built for: the input's batch, size and layout, and the thread count.
struct ConvKey {
  int64_t batch = -1;
  int64_t height = -1;
  int64_t width = -1;
  bool channels_last = false;
  int threads = 0;

  bool operator==(const ConvKey& o) const {
    return batch == o.batch && height == o.height && width == o.width &&
           channels_last == o.channels_last && threads == o.threads;
  }
};

// One node's primitive in one runtime, for the last input shape. The activations are in the
// caller's layout (NCHW or channels last); where the primitive wants a blocked one, the input is
// reordered into scratch before and the result out of it after.
struct OneDnnConvState final : NodeState {
  ConvKey key;
  bool built = false;
  bool supported = false;
  dnnl::convolution_forward primitive;
  memory src_user, src, weights, bias, dst, dst_user, scratchpad;
  dnnl::reorder src_reorder, dst_reorder, residual_reorder;
  bool reorder_src = false;
  bool reorder_dst = false;
  // Scratch regions, 64-byte aligned offsets: [blocked src | blocked dst | oneDNN scratchpad].
  size_t src_offset = 0, dst_offset = 0, scratchpad_offset = 0, scratch_bytes = 0;
  size_t scratchpad_bytes = 0;
  // The weight in the layout this shape's primitive wants, when not the packed one.
  at::Tensor repacked;
  dnnl::stream stream;
};

size_t alignUp(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

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

dnnl::convolution_forward::desc convDesc(const OneDnnConvWeight& w, const memory::desc& src,
                                         const memory::desc& weights, const memory::desc& dst) {
  const ConvArguments& a = w.arguments;
  const Dims strides{a.stride[0], a.stride[1]};
  const Dims padding{a.padding[0], a.padding[1]};
  if (w.bias.defined()) {
    return dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, weights,
        memory::desc({w.out_channels}, kF32, memory::format_tag::x), dst, strides, dilations(a),
        padding, padding);
  }
  return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, src, weights, dst,
                                         strides, dilations(a), padding, padding);
}

void build(OneDnnConvState& state, const ConvKey& key, const OneDnnConvWeight& w,
           const ConvEpilogue& epilogue) {
  state.key = key;
  state.built = true;
  state.supported = false;
  const int64_t out_h = outputSize(key.height, w.kernel_h, w.arguments, 0);
  const int64_t out_w = outputSize(key.width, w.kernel_w, w.arguments, 1);
  const auto user_tag = key.channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw;
  const memory::desc src_user({key.batch, w.in_channels, key.height, key.width}, kF32, user_tag);
  const memory::desc dst_user({key.batch, w.out_channels, out_h, out_w}, kF32, user_tag);
  const memory::desc any_src({key.batch, w.in_channels, key.height, key.width}, kF32,
                             memory::format_tag::any);
  const memory::desc any_dst({key.batch, w.out_channels, out_h, out_w}, kF32,
                             memory::format_tag::any);
  const memory::desc any_weights(weightDims(w), kF32, memory::format_tag::any);
  dnnl::convolution_forward::primitive_desc pd;
  try {
    pd = dnnl::convolution_forward::primitive_desc(convDesc(w, any_src, any_weights, any_dst),
                                                   attributes(epilogue), oneDnnEngine());
  } catch (const dnnl::error&) {
    return; // no implementation for these arguments: the fallback runs the node
  }
  state.primitive = dnnl::convolution_forward(pd);
  const dnnl::engine& engine = oneDnnEngine();
  state.reorder_src = pd.src_desc() != src_user;
  state.reorder_dst = pd.dst_desc() != dst_user;
  state.src_user = memory(src_user, engine, DNNL_MEMORY_NONE);
  state.dst_user = memory(dst_user, engine, DNNL_MEMORY_NONE);
  state.src = memory(pd.src_desc(), engine, DNNL_MEMORY_NONE);
  state.dst = memory(pd.dst_desc(), engine, DNNL_MEMORY_NONE);
  if (state.reorder_src) {
    state.src_reorder = dnnl::reorder(state.src_user, state.src);
  }
  if (state.reorder_dst) {
    state.dst_reorder = dnnl::reorder(state.dst, state.dst_user);
    if (epilogue.has_residual) {
      state.residual_reorder = dnnl::reorder(state.dst_user, state.dst);
    }
  }
  // The shared packed weight, unless this shape's primitive wants another layout.
  void* weight_data = w.storage.data_ptr();
  if (pd.weights_desc() != w.desc) {
    state.repacked = at::empty({static_cast<int64_t>(pd.weights_desc().get_size())}, at::kByte);
    reorder(memory(w.desc, engine, w.storage.data_ptr()),
            memory(pd.weights_desc(), engine, state.repacked.data_ptr()));
    weight_data = state.repacked.data_ptr();
  }
  state.weights = memory(pd.weights_desc(), engine, weight_data);
  if (w.bias.defined()) {
    state.bias = memory(memory::desc({w.out_channels}, kF32, memory::format_tag::x), engine,
                        w.bias.data_ptr());
  }
  state.scratchpad_bytes = pd.scratchpad_desc().get_size();
  size_t offset = 0;
  if (state.reorder_src) {
    state.src_offset = offset;
    offset += alignUp(pd.src_desc().get_size());
  }
  if (state.reorder_dst) {
    state.dst_offset = offset;
    offset += alignUp(pd.dst_desc().get_size());
  }
  state.scratchpad_offset = offset;
  if (state.scratchpad_bytes > 0) {
    state.scratchpad = memory(pd.scratchpad_desc(), engine, DNNL_MEMORY_NONE);
    offset += alignUp(state.scratchpad_bytes);
  }
  state.scratch_bytes = offset;
  state.stream = dnnl::stream(engine);
  state.supported = true;
}

void execute(dnnl::stream& stream, const dnnl::primitive& primitive,
             std::initializer_list<dnnl_exec_arg_t> arguments) {
  // The C call takes the arguments as an array: the C++ one wants an unordered_map per call.
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(),
                                                 static_cast<int>(arguments.size()),
                                                 arguments.begin()),
                          "oneDNN convolution failed");
}

class OneDnnConv2d {
public:
  OneDnnConv2d(std::shared_ptr<const OneDnnConvWeight> weight, ConvEpilogue epilogue,
               int residual_input, KernelFunction fallback)
      : weight_(std::move(weight)), epilogue_(epilogue), residual_input_(residual_input),
        fallback_(std::move(fallback)) {}

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(0).toTensor();
    const OneDnnConvWeight& w = *weight_;
    const bool layout_fits = x.is_contiguous() || x.is_contiguous(at::MemoryFormat::ChannelsLast);
    if (x.scalar_type() != at::kFloat || x.dim() != 4 || !x.is_cpu() || !layout_fits ||
        x.size(1) != w.in_channels || x.numel() == 0 ||
        outputSize(x.size(2), w.kernel_h, w.arguments, 0) <= 0 ||
        outputSize(x.size(3), w.kernel_w, w.arguments, 1) <= 0) {
      fallback_(p);
      return;
    }
    const at::Tensor* residual = nullptr;
    if (epilogue_.has_residual) {
      residual = &p.input(residual_input_).toTensor();
    }
    const int64_t out_h = outputSize(x.size(2), w.kernel_h, w.arguments, 0);
    const int64_t out_w = outputSize(x.size(3), w.kernel_w, w.arguments, 1);
    // A 4-D input that is contiguous both ways (one pixel, or one channel) is NCHW.
    const bool channels_last = !x.is_contiguous();
    const std::vector<int64_t> out_sizes{x.size(0), w.out_channels, out_h, out_w};
    if (residual != nullptr &&
        (residual->scalar_type() != at::kFloat || residual->sizes() != out_sizes ||
         !residual->is_contiguous(channels_last ? at::MemoryFormat::ChannelsLast
                                                : at::MemoryFormat::Contiguous))) {
      fallback_(p);
      return;
    }
    const OneDnnThreads threads(x.size(0) * w.out_channels * out_h * out_w *
                                (w.in_channels / w.arguments.groups) * w.kernel_h * w.kernel_w);
    const ConvKey key{x.size(0), x.size(2), x.size(3), channels_last, threads.count()};
    auto& state = p.state<OneDnnConvState>();
    if (!state.built || !(state.key == key)) {
      build(state, key, w, epilogue_);
    }
    if (!state.supported) {
      fallback_(p);
      return;
    }
    at::Tensor& out = channels_last ? outputChannelsLast(p, out_sizes)
                                    : contiguousOutput(p, 0, out_sizes, x.options());
    char* scratch =
        static_cast<char*>(state.scratch_bytes > 0 ? p.scratch(state.scratch_bytes) : nullptr);
    state.src_user.set_data_handle(x.data_ptr());
    state.dst_user.set_data_handle(out.data_ptr());
    state.src.set_data_handle(state.reorder_src ? scratch + state.src_offset : x.data_ptr());
    state.dst.set_data_handle(state.reorder_dst ? scratch + state.dst_offset : out.data_ptr());
    if (residual != nullptr) {
      // The sum post-op adds what dst holds: the residual, in the primitive's layout.
      if (state.reorder_dst) {
        memory from(state.dst_user.get_desc(), oneDnnEngine(), residual->data_ptr());
        execute(state.stream, state.residual_reorder,
                {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, state.dst.get()}});
      } else {
        std::memcpy(out.data_ptr(), residual->data_ptr(), out.nbytes());
      }
    }
    if (state.reorder_src) {
      execute(state.stream, state.src_reorder,
              {{DNNL_ARG_FROM, state.src_user.get()}, {DNNL_ARG_TO, state.src.get()}});
    }
    std::vector<dnnl_exec_arg_t> arguments{{DNNL_ARG_SRC, state.src.get()},
                                           {DNNL_ARG_WEIGHTS, state.weights.get()},
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
    if (state.reorder_dst) {
      execute(state.stream, state.dst_reorder,
              {{DNNL_ARG_FROM, state.dst.get()}, {DNNL_ARG_TO, state.dst_user.get()}});
    }
    state.stream.wait();
  }

private:
  // Last run's output 0 in channels-last layout, or a new one.
  static at::Tensor& outputChannelsLast(ProcessedNode& p, at::IntArrayRef sizes) {
    at::Tensor& out = outputTensor(p, 0, at::TensorOptions().dtype(at::kFloat));
    at::native::resize_(out, sizes, at::MemoryFormat::ChannelsLast);
    return out;
  }

  std::shared_ptr<const OneDnnConvWeight> weight_;
  ConvEpilogue epilogue_;
  int residual_input_;
  KernelFunction fallback_;
};

} // namespace

bool oneDnnConvPrefersChannelsLast() {
  // What a typical 3x3 convolution of the middle of a CNN picks for its activations.
  static const bool prefers = [] {
    const Dims activation{1, 64, 28, 28};
    try {
      const dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          memory::desc(activation, kF32, memory::format_tag::any),
          memory::desc({64, 64, 3, 3}, kF32, memory::format_tag::any),
          memory::desc(activation, kF32, memory::format_tag::any), {1, 1}, {1, 1}, {1, 1});
      const dnnl::convolution_forward::primitive_desc pd(desc, oneDnnEngine());
      return pd.src_desc() == memory::desc(activation, kF32, memory::format_tag::nhwc);
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return prefers;
}

bool oneDnnConvTakes(vec::UnaryOp activation) {
  return !eltwisesFor(activation, {}).empty();
}

std::shared_ptr<const OneDnnConvWeight>
packConvWeight(const at::Tensor& weight, const at::Tensor& bias, const ConvArguments& arguments) {
  if (weight.scalar_type() != at::kFloat || weight.dim() != 4 || !weight.is_cpu() ||
      weight.numel() == 0 || arguments.groups <= 0 || weight.size(0) % arguments.groups != 0 ||
      (bias.defined() &&
       (bias.scalar_type() != at::kFloat || bias.dim() != 1 || bias.size(0) != weight.size(0)))) {
    return nullptr;
  }
  auto packed = std::make_shared<OneDnnConvWeight>();
  packed->arguments = arguments;
  packed->out_channels = weight.size(0);
  packed->in_channels = weight.size(1) * arguments.groups;
  packed->kernel_h = weight.size(2);
  packed->kernel_w = weight.size(3);
  const at::Tensor plain = weight.contiguous();
  packed->bias = bias.defined() ? bias.contiguous() : at::Tensor();
  // The layout oneDNN's convolution picks for the weight depends on the channels, the kernel and
  // the instruction set, not on the image: one representative size decides it; a shape whose
  // primitive wants another layout repacks for itself (OneDnnConvState::repacked).
  const ConvArguments& a = arguments;
  const int64_t side = std::max<int64_t>(
      32,
      std::max(a.dilation[0] * (packed->kernel_h - 1), a.dilation[1] * (packed->kernel_w - 1)) + 1);
  const int64_t out_h = outputSize(side, packed->kernel_h, a, 0);
  const int64_t out_w = outputSize(side, packed->kernel_w, a, 1);
  try {
    const memory::desc src({1, packed->in_channels, side, side}, kF32, memory::format_tag::any);
    const memory::desc dst({1, packed->out_channels, out_h, out_w}, kF32, memory::format_tag::any);
    const memory::desc any(weightDims(*packed), kF32, memory::format_tag::any);
    const dnnl::convolution_forward::primitive_desc pd(convDesc(*packed, src, any, dst),
                                                       oneDnnEngine());
    packed->desc = pd.weights_desc();
  } catch (const dnnl::error&) {
    return nullptr;
  }
  packed->storage = at::empty({static_cast<int64_t>(packed->desc.get_size())}, at::kByte);
  reorder(memory(memory::desc(weightDims(*packed), kF32, plainWeightTag(*packed)), oneDnnEngine(),
                 plain.data_ptr()),
          memory(packed->desc, oneDnnEngine(), packed->storage.data_ptr()));
  return packed;
}

at::Tensor unpackConvWeight(const OneDnnConvWeight& packed) {
  at::Tensor plain = at::empty({packed.out_channels, packed.in_channels / packed.arguments.groups,
                                packed.kernel_h, packed.kernel_w},
                               at::kFloat);
  reorder(memory(packed.desc, oneDnnEngine(), packed.storage.data_ptr()),
          memory(memory::desc(weightDims(packed), kF32, plainWeightTag(packed)), oneDnnEngine(),
                 plain.data_ptr()));
  return plain;
}

const at::Tensor& convBias(const OneDnnConvWeight& packed) {
  return packed.bias;
}

const ConvArguments& convArguments(const OneDnnConvWeight& packed) {
  return packed.arguments;
}

KernelFunction makeOneDnnConvKernel(std::shared_ptr<const OneDnnConvWeight> packed,
                                    ConvEpilogue epilogue, int residual_input,
                                    KernelFunction fallback) {
  return OneDnnConv2d(std::move(packed), epilogue, residual_input, std::move(fallback));
}

} // namespace srt::ops
