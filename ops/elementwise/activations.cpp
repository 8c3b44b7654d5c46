// Activations: relu, gelu, sigmoid, tanh, silu, leaky_relu, hardswish, hardsigmoid, hardtanh
// (ReLU6) and clamp, as out-variant kernels. Contiguous float32 inputs run the vectorized loops;
// others run `at::cpu::*_out`.
#include <cmath>

#include <ATen/CPUFunctions.h>
#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "ops/core/onednn_engine.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// ATen's relu is clamp_min(self, 0).
void relu(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  if (isDenseFloat(x)) {
    mapToOutput(p, vec::UnaryOp::kRelu, x);
    return;
  }
  TORCH_CHECK(x.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  at::cpu::clamp_min_out(outputTensorLike(p, 0, x), x, 0);
}

// gelu on oneDNN's eltwise primitive, for one element count and thread count.
struct GeluState final : NodeState {
  int64_t numel = -1;
  int threads = 0;
  dnnl::eltwise_forward primitive;
  dnnl::memory src, dst;
  dnnl::stream stream;
};

// What one element of gelu costs, in multiply-adds, for the thread cost model.
constexpr int64_t kGeluMultiplyAdds = 16;

// out = gelu(x) (erf, approximate="none") for a dense float32 x, in memory order into an output
// laid out as x. For a contiguous x this is what ATen computes: its use_mkldnn path runs oneDNN's
// gelu primitive, so these are ATen's bits, 5x faster here than the vectorized loops' Sleef erf
// (a 512 x 3199 activation: 5.7 -> 1.1 ms). A channels-last x (a 1-D convolution's output, as
// wav2vec2's feature extractor keeps them) takes the same primitive, where ATen would use its
// own erf: the results differ from ATen's by rounding only.
void oneDnnGelu(ProcessedNode& p, const at::Tensor& x) {
  at::Tensor* out_ptr = nullptr;
  if (x.is_contiguous()) {
    out_ptr = &contiguousOutput(p, 0, x.sizes(), x.options());
  } else {
    out_ptr = &outputTensorLike(p, 0, x);
    resizePreservingLayout(*out_ptr, x);
  }
  at::Tensor& out = *out_ptr;
  const OneDnnThreads threads(x.numel() * kGeluMultiplyAdds);
  auto& state = p.state<GeluState>();
  if (state.numel != x.numel() || state.threads != threads.count()) {
    const dnnl::memory::desc desc({x.numel()}, dnnl::memory::data_type::f32,
                                  dnnl::memory::format_tag::x);
    state.primitive = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::eltwise_gelu_erf, desc),
        oneDnnEngine()));
    state.src = dnnl::memory(desc, oneDnnEngine(), DNNL_MEMORY_NONE);
    state.dst = dnnl::memory(desc, oneDnnEngine(), DNNL_MEMORY_NONE);
    state.stream = dnnl::stream(oneDnnEngine());
    state.numel = x.numel();
    state.threads = threads.count();
  }
  state.src.set_data_handle(x.data_ptr());
  state.dst.set_data_handle(out.data_ptr());
  state.primitive.execute(state.stream, {{DNNL_ARG_SRC, state.src}, {DNNL_ARG_DST, state.dst}});
  state.stream.wait();
}

// gelu(Tensor self, *, str approximate="none")
void gelu(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const std::string& approximate = p.input(1).toStringRef();
  // ATen's own choice (use_mkldnn in its Activation.cpp): oneDNN for contiguous float32 of more
  // than one element while mkldnn is enabled; a single element goes to its scalar loop. Ours
  // also for dense float32 in another order (oneDnnGelu).
  if (approximate == "none" && isDenseFloat(x) && x.numel() > 1 &&
      at::globalContext().userEnabledMkldnn()) {
    oneDnnGelu(p, x);
    return;
  }
  if ((approximate == "none" || approximate == "tanh") && isDenseFloat(x) && x.numel() > 1) {
    mapToOutput(p, approximate == "none" ? vec::UnaryOp::kGelu : vec::UnaryOp::kGeluTanh, x);
    return;
  }
  at::cpu::gelu_out(outputTensorLike(p, 0, x), x, approximate);
}

// leaky_relu(Tensor self, Scalar negative_slope=0.01)
void leakyRelu(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const c10::Scalar slope = p.input(1).toScalar();
  if (isDenseFloat(x) && !slope.isComplex()) {
    mapToOutput(p, vec::UnaryOp::kLeakyRelu, x, {slope.to<float>()});
    return;
  }
  at::cpu::leaky_relu_out(outputTensorLike(p, 0, x), x, slope);
}

// hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1): ATen's is clamp with the bounds
// (integer tensors take integer bounds), so float32 runs the clamp loop.
void hardtanh(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const c10::Scalar min = p.input(1).toScalar();
  const c10::Scalar max = p.input(2).toScalar();
  if (isDenseFloat(x) && !min.isComplex() && !max.isComplex() && !std::isnan(min.toDouble()) &&
      !std::isnan(max.toDouble())) {
    mapToOutput(p, vec::UnaryOp::kClamp, x, {min.to<float>(), max.to<float>()});
    return;
  }
  at::hardtanh_outf(x, min, max, outputTensorLike(p, 0, x));
}

bool isNan(const c10::optional<c10::Scalar>& s) {
  return s && std::isnan(s->toDouble());
}

// clamp(Tensor self, Scalar? min=None, Scalar? max=None). Integer tensors promote with the bounds
// (clamp(int_tensor, 0.5) is float); a NaN bound makes ATen fill NaN, left to ATen.
void clampScalar(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const c10::optional<c10::Scalar> min = p.input(1).toOptional<c10::Scalar>();
  const c10::optional<c10::Scalar> max = p.input(2).toOptional<c10::Scalar>();
  const bool complex_bound = (min && min->isComplex()) || (max && max->isComplex());
  if (isDenseFloat(x) && (min || max) && !complex_bound && !isNan(min) && !isNan(max)) {
    if (min && max) {
      mapToOutput(p, vec::UnaryOp::kClamp, x, {min->to<float>(), max->to<float>()});
    } else if (min) {
      mapToOutput(p, vec::UnaryOp::kClampMin, x, {min->to<float>()});
    } else {
      mapToOutput(p, vec::UnaryOp::kClampMax, x, {0.f, max->to<float>()});
    }
    return;
  }
  at::ScalarType type = x.scalar_type();
  if (!c10::isFloatingType(type) && !c10::isComplexType(type) && !complex_bound) {
    at::native::ResultTypeState state = at::native::update_result_type_state(x, {});
    if (min) {
      state = at::native::update_result_type_state(*min, state);
    }
    if (max) {
      state = at::native::update_result_type_state(*max, state);
    }
    type = at::native::result_type(state);
  }
  at::cpu::clamp_out(outputTensor(p, 0, x.options().dtype(type)), x, min, max);
}

// clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None): bounds broadcast and promote.
void clampTensor(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const c10::optional<at::Tensor> min = optionalTensor(p.input(1));
  const c10::optional<at::Tensor> max = optionalTensor(p.input(2));
  at::native::ResultTypeState state = at::native::update_result_type_state(x, {});
  if (min) {
    state = at::native::update_result_type_state(*min, state);
  }
  if (max) {
    state = at::native::update_result_type_state(*max, state);
  }
  at::cpu::clamp_out(outputTensor(p, 0, x.options().dtype(at::native::result_type(state))), x, min,
                     max);
}

std::optional<KernelFunction> clamp(const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", clampScalar}, {"Tensor", clampTensor}});
}

using vec::UnaryOp;
constexpr auto sigmoidKernel = unaryKernel<UnaryOp::kSigmoid, at::cpu::sigmoid_out, true>;
constexpr auto tanhKernel = unaryKernel<UnaryOp::kTanh, at::cpu::tanh_out, true>;
constexpr auto siluKernel = unaryKernel<UnaryOp::kSilu, at::cpu::silu_out, false>;
constexpr auto hardswishKernel = unaryKernel<UnaryOp::kHardswish, at::cpu::hardswish_out, false>;
constexpr auto hardsigmoidKernel =
    unaryKernel<UnaryOp::kHardsigmoid, at::cpu::hardsigmoid_out, false>;

} // namespace

SRT_REGISTER_KERNEL("aten::relu", kOutVariant, tensorOverload<relu>);
SRT_REGISTER_KERNEL("aten::gelu", kOutVariant, tensorOverload<gelu>);
SRT_REGISTER_KERNEL("aten::sigmoid", kOutVariant, tensorOverload<sigmoidKernel>);
SRT_REGISTER_KERNEL("aten::tanh", kOutVariant, tensorOverload<tanhKernel>);
SRT_REGISTER_KERNEL("aten::silu", kOutVariant, tensorOverload<siluKernel>);
SRT_REGISTER_KERNEL("aten::leaky_relu", kOutVariant, tensorOverload<leakyRelu>);
SRT_REGISTER_KERNEL("aten::hardswish", kOutVariant, tensorOverload<hardswishKernel>);
SRT_REGISTER_KERNEL("aten::hardsigmoid", kOutVariant, tensorOverload<hardsigmoidKernel>);
SRT_REGISTER_KERNEL("aten::hardtanh", kOutVariant, tensorOverload<hardtanh>);
SRT_REGISTER_KERNEL("aten::clamp", kOutVariant, clamp);

} // namespace srt::ops
