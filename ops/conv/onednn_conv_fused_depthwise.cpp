// srt::blocked_conv2d_dw: a channel-blocked 1x1 convolution and the depthwise one that reads its
// output (an inverted residual block's expansion and depthwise layers), one node. Where the
// expanded image of the whole batch is large, oneDNN computes both in one primitive (its 1x1
// kernel with a depthwise post-op), which convolves each band of expanded rows while it is still
// in cache instead of writing the image out and reading it back: mobilenet_v2's 16 -> 96 at
// 112x112 and its stride-2 3x3 took 3.8 ms as two primitives at batch 8 and 1 thread, 2.4 fused
// (AMD EPYC, Zen 5, whose DRAM moves ~35 GB/s to one core: at batch 8 the 38.5 MB intermediate
// went there and back). Where it is small, the fused primitive is no faster than our own loops
// and oneDNN's pieces over the runtime's workers, so the two convolutions run on their own
// kernels, the intermediate in the node's planned scratch.
#include <algorithm>

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/blocked_layout.h"
#include "ops/conv/convolution.h"
#include "ops/conv/onednn_conv_internal.h"
#include "ops/conv/packed_conv.h"
#include "ops/core/nested_call.h"
#include "ops/core/onednn_engine.h"
#include "ops/core/registry.h"
#include "ops/core/worker_pool.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace onednn_conv {
namespace {

// The smallest intermediate image (the 1x1's output, all images of the call) for which the fused
// primitive runs. mobilenet_v2 at 1 thread, fused against the two convolutions as they run
// otherwise: its 16 -> 96 at 112x112 + 3x3 stride 2, batch 8 (38.5 MB) 2.4 against 3.3 ms, its
// 24 -> 144 at 56x56 + 3x3 (14.5 MB) 1.6-2.0 against 2.6; at batch 1 (4.8 and 1.8 MB) 226 against
// 253 us and 194 against 185, at 2 threads 165 against 146 and 151 against 107 (our pieces).
constexpr size_t kFusedMinIntermediateBytes = size_t{8} << 20;

// The fused primitive for a slab of a call's images, with the memories it reads and writes.
struct FusedSlab {
  int64_t first_image = 0;
  int64_t images = 0;
  size_t scratchpad_offset = 0; // into the node's scratch
  dnnl::primitive primitive;
  memory src, weights, bias, dst, dw_weights, dw_bias, scratchpad;
  dnnl::stream stream;
};

// The fused convolution of one input shape: one slab, or, over the runtime's own workers, one
// slab of images per worker, each on one OpenMP thread (the workers are the parallelism; under
// OMP_WAIT_POLICY=PASSIVE OpenMP's threads would sleep between regions and compete with them).
struct FusedPrimitive {
  int64_t batch = -1, height = -1, width = -1;
  int threads = 0;
  int slab_count = 0;
  bool built = false;
  bool supported = false;
  std::vector<FusedSlab> slabs;
  size_t scratch_bytes = 0;
};

struct FusedDepthwiseState final : NodeState {
  std::unique_ptr<NestedCall> pointwise, depthwise;
  FusedPrimitive fused;
  // The 1x1's output as a view of the node's scratch, kept while the scratch and the sizes stay
  // (a new view each call would allocate in the steady state). Held here only between calls:
  // during one it is the part's output, which the part's kernel reuses only when nothing else
  // holds it.
  c10::IValue mid;
};

// The constant inputs of one part, as its srt::blocked_conv2d node would have them (input 0
// set per call).
std::vector<c10::IValue> constantInputs(ConvInputs inputs) {
  std::vector<c10::IValue> values{c10::IValue()};
  for (size_t i = 1; i < inputs.size(); ++i) {
    values.push_back(*torch::jit::toIValue(inputs[i]));
  }
  return values;
}

std::shared_ptr<const OneDnnConvWeight> packedWeight(const torch::jit::Value* value) {
  return torch::jit::toIValue(value)->toCustomClass<PackedConvWeight>()->packed;
}

// `epilogue`'s activation appended to `post_ops` as oneDNN eltwise post-ops.
void appendActivation(dnnl::post_ops& post_ops, const ConvEpilogue& epilogue) {
  // get_post_ops() is a view of the attribute's own: the attribute must outlive it.
  const dnnl::primitive_attr attr = attributes(epilogue);
  const dnnl::post_ops activation = attr.get_post_ops();
  for (int i = 0; i < activation.len(); ++i) {
    float scale = 1.f, alpha = 0.f, beta = 0.f;
    dnnl::algorithm algorithm;
    activation.get_params_eltwise(i, scale, algorithm, alpha, beta);
    post_ops.append_eltwise(scale, algorithm, alpha, beta);
  }
}

class FusedDepthwiseConv {
public:
  FusedDepthwiseConv(const torch::jit::Node* node, KernelFunction pointwise_kernel,
                     KernelFunction depthwise_kernel, ConvEpilogue pointwise_epilogue,
                     ConvEpilogue depthwise_epilogue)
      : pointwise_weight_(packedWeight(node->input(kWeightInput))),
        depthwise_weight_(packedWeight(node->input(kDepthwiseInputs + kWeightInput - 1))),
        pointwise_(*pointwise_weight_), depthwise_(*depthwise_weight_),
        pointwise_kernel_(std::move(pointwise_kernel)),
        depthwise_kernel_(std::move(depthwise_kernel)), pointwise_epilogue_(pointwise_epilogue),
        depthwise_epilogue_(depthwise_epilogue) {
    const ConvInputs inputs = node->inputs();
    pointwise_inputs_ = constantInputs(inputs.slice(0, kDepthwiseInputs));
    depthwise_inputs_ = constantInputs(depthwiseInputs(inputs));
    if (!depthwise_.bias.defined()) {
      zero_bias_ = at::zeros({depthwise_.out_channels});
    }
  }

  // The depthwise part's inputs: the fused node's first (a stand-in for the 1x1's output), then
  // its own.
  static std::vector<const torch::jit::Value*> depthwiseInputs(ConvInputs inputs) {
    std::vector<const torch::jit::Value*> part{inputs[0]};
    part.insert(part.end(), inputs.begin() + kDepthwiseInputs, inputs.end());
    return part;
  }

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(0).toTensor();
    auto& state = p.state<FusedDepthwiseState>();
    const int64_t mid_blocks = (pointwise_.out_channels + kChannelBlock - 1) / kChannelBlock;
    // The 1x1's blocked output, [N, mid_blocks, H, W, 16], for a blocked input or a plain image
    // (a network's first layers; anything else is left to the 1x1's kernel to report).
    const bool blocked = x.dim() == 5 && isBlocked(x, pointwise_.in_channels);
    if (!blocked && x.dim() != 4) {
      runParts(p, x, state, {});
      return;
    }
    const std::vector<int64_t> mid{x.size(0), mid_blocks, x.size(2), x.size(3), kChannelBlock};
    const size_t mid_bytes = static_cast<size_t>(c10::multiply_integers(mid)) * sizeof(float);
    if (blocked && mid_bytes >= kFusedMinIntermediateBytes && runFused(p, x, state.fused)) {
      return;
    }
    runParts(p, x, state, mid);
  }

private:
  // Each convolution on its own kernel, the 1x1's output of `mid` sizes in the node's scratch
  // (none given: wherever that kernel puts it).
  void runParts(ProcessedNode& p, const at::Tensor& x, FusedDepthwiseState& state,
                const std::vector<int64_t>& mid_sizes) const {
    if (!state.pointwise) {
      state.pointwise = std::make_unique<NestedCall>(
          p, Kernel{KernelKind::kOutVariant, pointwise_kernel_}, pointwise_inputs_);
      state.depthwise = std::make_unique<NestedCall>(
          p, Kernel{KernelKind::kOutVariant, depthwise_kernel_}, depthwise_inputs_);
    }
    c10::IValue unplaced; // the 1x1's output wherever its kernel puts it
    c10::IValue& mid = !mid_sizes.empty() && x.scalar_type() == at::kFloat ? state.mid : unplaced;
    if (&mid == &state.mid) {
      void* data =
          p.scratch(static_cast<size_t>(c10::multiply_integers(mid_sizes)) * sizeof(float));
      if (!mid.isTensor() || mid.toTensor().data_ptr() != data ||
          mid.toTensor().sizes() != at::IntArrayRef(mid_sizes)) {
        mid = at::from_blob(data, mid_sizes, x.options());
      }
    }
    state.pointwise->run(x, mid);
    state.depthwise->run(mid.toTensor(), p.output(0));
  }

  // Both convolutions in oneDNN's fused primitive; false where oneDNN has none for this shape
  // (then runParts).
  bool runFused(ProcessedNode& p, const at::Tensor& x, FusedPrimitive& fused) const {
    const int64_t batch = x.size(0), height = x.size(2), width = x.size(3);
    const ConvArguments& dw = depthwise_.arguments;
    const int64_t out_height = outputSize(height, depthwise_.kernel[0], dw, 0);
    const int64_t out_width = outputSize(width, depthwise_.kernel[1], dw, 1);
    if (out_height <= 0 || out_width <= 0) {
      return false; // the parts' kernels report it
    }
    WorkerPool* workers = p.workers();
    const int64_t multiply_adds =
        batch * height * width * pointwise_.out_channels *
        (pointwise_.in_channels + depthwise_.kernel[0] * depthwise_.kernel[1]);
    // Slabs of images over the runtime's own workers, each on one OpenMP thread.
    const int slabs =
        workers != nullptr ? static_cast<int>(std::min<int64_t>(batch, workers->threads())) : 1;
    const OneDnnThreads threads(multiply_adds, slabs > 1 ? 1 : at::get_num_threads());
    if (!fused.built || fused.batch != batch || fused.height != height || fused.width != width ||
        fused.threads != threads.count() || fused.slab_count != slabs) {
      fused = FusedPrimitive();
      fused.batch = batch;
      fused.height = height;
      fused.width = width;
      fused.threads = threads.count();
      fused.slab_count = slabs;
      fused.built = true;
      build(fused, slabs);
    }
    if (!fused.supported) {
      return false;
    }
    at::Tensor& out = contiguousOutput(
        p, 0, blockedSizes({batch, depthwise_.out_channels, out_height, out_width}), x.options());
    char* scratch =
        static_cast<char*>(fused.scratch_bytes > 0 ? p.scratch(fused.scratch_bytes) : nullptr);
    auto* src = static_cast<char*>(x.data_ptr());
    auto* dst = static_cast<char*>(out.data_ptr());
    const size_t src_image = static_cast<size_t>(x.numel() / batch) * sizeof(float);
    const size_t dst_image = static_cast<size_t>(out.numel() / batch) * sizeof(float);
    const auto run_slab = [&](int64_t i) {
      FusedSlab& slab = fused.slabs[i];
      slab.src.set_data_handle(src + slab.first_image * src_image);
      slab.dst.set_data_handle(dst + slab.first_image * dst_image);
      slab.scratchpad.set_data_handle(scratch + slab.scratchpad_offset);
      slab.primitive.execute(slab.stream,
                             {{DNNL_ARG_SRC, slab.src},
                              {DNNL_ARG_WEIGHTS, slab.weights},
                              {DNNL_ARG_BIAS, slab.bias},
                              {DNNL_ARG_DST, slab.dst},
                              {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, slab.dw_weights},
                              {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, slab.dw_bias},
                              {DNNL_ARG_SCRATCHPAD, slab.scratchpad}});
    };
    if (slabs > 1) {
      workers->run(slabs, [&](int64_t i) {
        const OneDnnThreads one_thread(multiply_adds, 1);
        run_slab(i);
      });
    } else {
      run_slab(0);
    }
    return true;
  }

  // The primitives of `slabs` slabs of fused's images, reading both weights as they are packed
  // (the layouts oneDNN's 1x1 and depthwise kernels read alone are the ones its fused kernel
  // reads); unsupported where oneDNN would pick another layout or only its reference
  // implementation.
  void build(FusedPrimitive& fused, int slabs) const {
    const ConvArguments& dw = depthwise_.arguments;
    dnnl::primitive_attr attr = attributes(ConvEpilogue()); // the scratchpad the caller's
    dnnl::post_ops post_ops;
    appendActivation(post_ops, pointwise_epilogue_);
    post_ops.append_dw(kF32, kF32, kF32, depthwise_.kernel[0], dw.stride[0], dw.padding[0], 0, {});
    appendActivation(post_ops, depthwise_epilogue_);
    attr.set_post_ops(post_ops);
    const memory::desc bias = pointwise_.bias.defined() ? memory::desc({pointwise_.out_channels},
                                                                       kF32, memory::format_tag::x)
                                                        : memory::desc();
    auto* dw_bias = const_cast<float*>(depthwise_.bias.defined() ? depthwise_.bias.data_ptr<float>()
                                                                 : zero_bias_.data_ptr<float>());
    const dnnl::engine& engine = oneDnnEngine();
    try {
      for (int i = 0; i < slabs; ++i) {
        FusedSlab slab;
        slab.first_image = fused.batch * i / slabs;
        slab.images = fused.batch * (i + 1) / slabs - slab.first_image;
        const memory::desc src({slab.images, pointwise_.in_channels, fused.height, fused.width},
                               kF32, memory::format_tag::nChw16c);
        const memory::desc mid({slab.images, pointwise_.out_channels, fused.height, fused.width},
                               kF32, memory::format_tag::nChw16c);
        const dnnl::convolution_forward::primitive_desc pd(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                            dnnl::algorithm::convolution_direct, src,
                                            pointwise_.desc, bias, mid, {1, 1}, {0, 0}, {0, 0}),
            attr, engine);
        const memory::desc dw_weights =
            pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
        if (isReferenceImplementation(pd) || !(pd.weights_desc() == pointwise_.desc) ||
            !(dw_weights == depthwise_.desc)) {
          return;
        }
        slab.src = memory(src, engine, DNNL_MEMORY_NONE);
        slab.weights = memory(pointwise_.desc, engine, pointwise_.storage.data_ptr());
        slab.bias =
            memory(bias, engine,
                   pointwise_.bias.defined() ? pointwise_.bias.data_ptr() : DNNL_MEMORY_NONE);
        slab.dst = memory(pd.dst_desc(), engine, DNNL_MEMORY_NONE);
        slab.dw_weights = memory(depthwise_.desc, engine, depthwise_.storage.data_ptr());
        slab.dw_bias = memory(memory::desc({depthwise_.out_channels}, kF32, memory::format_tag::x),
                              engine, dw_bias);
        slab.scratchpad = memory(pd.scratchpad_desc(), engine, DNNL_MEMORY_NONE);
        slab.scratchpad_offset = fused.scratch_bytes;
        fused.scratch_bytes += alignScratchOffset(pd.scratchpad_desc().get_size());
        slab.primitive = dnnl::convolution_forward(pd);
        slab.stream = dnnl::stream(engine);
        fused.slabs.push_back(std::move(slab));
      }
      fused.supported = true;
    } catch (const dnnl::error&) {
      // No fused primitive for this shape: the parts run.
    }
  }

  static constexpr size_t kWeightInput = 1;

  std::shared_ptr<const OneDnnConvWeight> pointwise_weight_, depthwise_weight_;
  const OneDnnConvWeight& pointwise_;
  const OneDnnConvWeight& depthwise_;
  KernelFunction pointwise_kernel_, depthwise_kernel_;
  ConvEpilogue pointwise_epilogue_, depthwise_epilogue_;
  std::vector<c10::IValue> pointwise_inputs_, depthwise_inputs_;
  at::Tensor zero_bias_; // the depthwise post-op's bias where the convolution has none
};

std::optional<KernelFunction> fusedDepthwiseFactory(const torch::jit::Node* node,
                                                    const KernelOptions& options) {
  if (!options.enable_out_variant || !node->matches(kBlockedConv2dDwSchema)) {
    return std::nullopt;
  }
  const ConvInputs inputs = node->inputs();
  const std::vector<const torch::jit::Value*> depthwise =
      FusedDepthwiseConv::depthwiseInputs(inputs);
  std::optional<KernelFunction> pointwise_kernel =
      blockedConvKernel(inputs.slice(0, kDepthwiseInputs));
  std::optional<KernelFunction> depthwise_kernel = blockedConvKernel(depthwise);
  const std::optional<ConvEpilogue> pointwise_epilogue =
      constantConvEpilogue(inputs.slice(0, kDepthwiseInputs));
  const std::optional<ConvEpilogue> depthwise_epilogue = constantConvEpilogue(depthwise);
  if (!pointwise_kernel || !depthwise_kernel || !pointwise_epilogue || !depthwise_epilogue ||
      pointwise_epilogue->has_residual || depthwise_epilogue->has_residual) {
    return std::nullopt;
  }
  return KernelFunction(FusedDepthwiseConv(node, std::move(*pointwise_kernel),
                                           std::move(*depthwise_kernel), *pointwise_epilogue,
                                           *depthwise_epilogue));
}

} // namespace
} // namespace onednn_conv

SRT_REGISTER_KERNEL("srt::blocked_conv2d_dw", kOutVariant, onednn_conv::fusedDepthwiseFactory);

} // namespace srt::ops
