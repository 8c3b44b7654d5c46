// aten::lstm, aten::gru, aten::rnn_tanh and aten::rnn_relu as out-variant kernels, on padded input
// (the `input` overloads, batch first or not) and on packed sequences (the `data` overloads that
// nn.LSTM & co. call after pack_padded_sequence), on weights packed at build
// (ops/recurrent/recurrent_weights.h), running ops/recurrent/recurrent_layers.h with each layer's
// input projection on oneDNN (the weight packed at build, a primitive per layer, runtime and
// shape in the node's state, its scratchpad after the loop's scratch). A node whose weights are
// not constants, or that trains with dropout, runs ATen's op; so does a call the kernel does not
// take (another dtype, a hidden state of the wrong shape, invalid batch sizes: ATen's errors).
#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/onednn.h"
#include "ops/recurrent/recurrent_layers.h"

namespace srt::ops {
namespace {

using recurrent::RecurrentMode;
using recurrent::RecurrentWeights;

// The `input` overloads' arguments: (input, hx, params, has_biases, num_layers, dropout, train,
// bidirectional, batch_first). The `data` overloads take (data, batch_sizes, hx, ...) and no
// batch_first: their indices from kHx on are one more.
enum Argument {
  kInput,
  kHx,
  kParams,
  kHasBiases,
  kNumLayers,
  kDropout,
  kTrain,
  kBidirectional,
  kBatchFirst
};

// The initial state tensor `t` ([layers * directions, batch, hidden] float32) as contiguous
// data; nullopt when it has another shape or dtype.
std::optional<at::Tensor> initialState(const at::Tensor& t, int64_t states, int64_t batch,
                                       int64_t hidden) {
  if (t.scalar_type() != at::kFloat || !t.is_cpu() || t.dim() != 3 || t.size(0) != states ||
      t.size(1) != batch || t.size(2) != hidden) {
    return std::nullopt;
  }
  return t.contiguous();
}

// Per runtime: each layer's input-projection primitive.
struct LayerState final : NodeState {
  std::vector<OneDnnGemmSlot> projections;
};

class RecurrentLayerKernel {
public:
  RecurrentLayerKernel(std::shared_ptr<const RecurrentWeights> weights, bool batch_first,
                       bool packed, KernelFunction fallback)
      : weights_(std::move(weights)), batch_first_(batch_first), packed_(packed),
        fallback_(std::move(fallback)) {}

  void operator()(ProcessedNode& p) const {
    const RecurrentWeights& w = *weights_;
    const at::Tensor& x = p.input(kInput).toTensor();
    const int64_t input_size = w.layers.front().input_size;
    recurrent::RecurrentCall call;
    call.workers = p.workers();
    std::array<int64_t, 3> out_sizes{};
    size_t out_dims = 3;
    int64_t rows = 0;
    if (packed_) {
      // data [rows, input_size], batch_sizes [steps] int64: non-increasing, positive, summing
      // to rows.
      const at::Tensor& batch_sizes = p.input(1).toTensor();
      if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.dim() != 2 || x.size(1) != input_size ||
          batch_sizes.scalar_type() != at::kLong || !batch_sizes.is_cpu() ||
          batch_sizes.dim() != 1 || batch_sizes.numel() == 0 || !batch_sizes.is_contiguous() ||
          !validBatchSizes(batch_sizes, x.size(0))) {
        fallback_(p);
        return;
      }
      call.batch_sizes = batch_sizes.data_ptr<int64_t>();
      call.steps = batch_sizes.numel();
      call.batch = call.batch_sizes[0];
      rows = x.size(0);
      out_sizes = {rows, w.numDirections() * w.stateSize(), 0};
      out_dims = 2;
    } else {
      if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.dim() != 3 || x.size(2) != input_size ||
          x.size(0) == 0 || x.size(1) == 0) {
        fallback_(p);
        return;
      }
      call.steps = x.size(batch_first_ ? 1 : 0);
      call.batch = x.size(batch_first_ ? 0 : 1);
      call.batch_first = batch_first_;
      rows = call.steps * call.batch;
      out_sizes = {x.size(0), x.size(1), w.numDirections() * w.stateSize()};
    }
    const int64_t states = static_cast<int64_t>(w.layers.size()) * w.numDirections();
    const bool lstm = w.mode == RecurrentMode::kLstm;
    const size_t hx_index = packed_ ? kHx + 1 : kHx;
    std::optional<at::Tensor> h0;
    std::optional<at::Tensor> c0;
    if (lstm) {
      const auto hx = p.input(hx_index).toListRef();
      if (hx.size() != 2) {
        fallback_(p);
        return;
      }
      h0 = initialState(hx[0].toTensor(), states, call.batch, w.stateSize());
      c0 = initialState(hx[1].toTensor(), states, call.batch, w.hidden);
    } else {
      h0 = initialState(p.input(hx_index).toTensor(), states, call.batch, w.stateSize());
    }
    if (!h0 || (lstm && !c0)) {
      fallback_(p);
      return;
    }
    const at::Tensor input = x.contiguous();
    at::Tensor& out =
        contiguousOutput(p, 0, at::IntArrayRef(out_sizes.data(), out_dims), x.options());
    at::Tensor& h_n = contiguousOutput(p, 1, {states, call.batch, w.stateSize()}, x.options());
    call.input = input.data_ptr<float>();
    call.h0 = h0->data_ptr<float>();
    call.output = out.data_ptr<float>();
    call.h_n = h_n.data_ptr<float>();
    if (lstm) {
      at::Tensor& c_n = contiguousOutput(p, 2, {states, call.batch, w.hidden}, x.options());
      call.c0 = c0->data_ptr<float>();
      call.c_n = c_n.data_ptr<float>();
    }
    // The projections' primitives first: their scratchpad goes after the loop's scratch.
    auto& state = p.state<LayerState>();
    state.projections.resize(w.layers.size());
    const auto multiply_adds = [&](const recurrent::LayerWeights& lw) {
      return rows * lw.input_size * lw.w_ih.size(0);
    };
    size_t scratchpad_bytes = 0;
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const recurrent::LayerWeights& lw = w.layers[l];
      if (lw.w_ih_packed) {
        const OneDnnThreads threads(multiply_adds(lw));
        const auto bytes = state.projections[l].prepare(*lw.w_ih_packed, rows, false, threads);
        scratchpad_bytes = std::max(scratchpad_bytes, bytes.value_or(0));
      }
    }
    const size_t loop_bytes = recurrent::recurrentScratchBytes(w, call.steps, call.batch);
    char* scratch = static_cast<char*>(p.scratch(loop_bytes + scratchpad_bytes));
    const auto project = [&](int64_t layer, const float* in, int64_t, float* projections) {
      const recurrent::LayerWeights& lw = w.layers[static_cast<size_t>(layer)];
      if (!lw.w_ih_packed) {
        return false;
      }
      OneDnnGemmSlot& slot = state.projections[static_cast<size_t>(layer)];
      const OneDnnThreads threads(multiply_adds(lw));
      if (!slot.prepare(*lw.w_ih_packed, rows, false, threads)) {
        return false;
      }
      slot.run(p, in, nullptr, projections, scratch + loop_bytes);
      return true;
    };
    // By reference: a std::function holding the lambda's captures would allocate per call.
    recurrent::runRecurrent(w, call, scratch, std::ref(project));
  }

private:
  // What pack_padded_sequence produces: positive, non-increasing, summing to the data's rows.
  static bool validBatchSizes(const at::Tensor& batch_sizes, int64_t rows) {
    const int64_t* sizes = batch_sizes.data_ptr<int64_t>();
    int64_t sum = 0;
    for (int64_t t = 0; t < batch_sizes.numel(); ++t) {
      if (sizes[t] <= 0 || (t > 0 && sizes[t] > sizes[t - 1])) {
        return false;
      }
      sum += sizes[t];
    }
    return sum == rows;
  }

  std::shared_ptr<const RecurrentWeights> weights_;
  bool batch_first_;
  bool packed_;
  KernelFunction fallback_;
};

// `packed`: the schema is a `data` overload, whose arguments from hx on sit one further.
KernelFactory layerFactory(RecurrentMode mode, const char* schema, bool packed) {
  return [mode, schema, packed](const torch::jit::Node* node,
                                const KernelOptions& options) -> std::optional<KernelFunction> {
    if (!node->matches(schema)) {
      return std::nullopt;
    }
    const size_t shift = packed ? 1 : 0;
    const auto input = [&](Argument a) { return node->input(a + shift); };
    const auto params = torch::jit::toIValue(input(kParams));
    const auto has_biases = torch::jit::constant_as<bool>(input(kHasBiases));
    const auto num_layers = torch::jit::constant_as<int64_t>(input(kNumLayers));
    const auto dropout = torch::jit::constant_as<double>(input(kDropout));
    const auto train = torch::jit::constant_as<bool>(input(kTrain));
    const auto bidirectional = torch::jit::constant_as<bool>(input(kBidirectional));
    const auto batch_first =
        packed ? c10::optional<bool>(false) : torch::jit::constant_as<bool>(input(kBatchFirst));
    if (!params || !params->isTensorList() || !has_biases || !num_layers || !dropout || !train ||
        !bidirectional || !batch_first) {
      return std::nullopt; // weights or configuration known only at run time
    }
    if (*train && *dropout > 0 && *num_layers > 1) {
      return std::nullopt; // dropout between layers draws random numbers: ATen's op
    }
    auto weights =
        recurrent::packLayerWeights(mode, params->toTensorVector(), *has_biases, *num_layers,
                                    *bidirectional, options.weight_precision);
    if (!weights) {
      return std::nullopt;
    }
    auto fallback = makeFallbackKernel(node);
    if (!fallback) {
      return std::nullopt;
    }
    return RecurrentLayerKernel(std::move(weights), *batch_first, packed, std::move(*fallback));
  };
}

#define SRT_RECURRENT_ARGUMENTS                                                                    \
  "Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool "             \
  "bidirectional"

SRT_REGISTER_KERNEL(
    "aten::lstm", kOutVariant,
    layerFactory(RecurrentMode::kLstm,
                 "aten::lstm.input(Tensor input, Tensor[] hx, " SRT_RECURRENT_ARGUMENTS
                 ", bool batch_first) -> (Tensor, Tensor, Tensor)",
                 false));
SRT_REGISTER_KERNEL(
    "aten::lstm", kOutVariant,
    layerFactory(
        RecurrentMode::kLstm,
        "aten::lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, " SRT_RECURRENT_ARGUMENTS
        ") -> (Tensor, Tensor, Tensor)",
        true));
SRT_REGISTER_KERNEL("aten::gru", kOutVariant,
                    layerFactory(RecurrentMode::kGru,
                                 "aten::gru.input(Tensor input, Tensor hx, " SRT_RECURRENT_ARGUMENTS
                                 ", bool batch_first) -> (Tensor, Tensor)",
                                 false));
SRT_REGISTER_KERNEL(
    "aten::gru", kOutVariant,
    layerFactory(
        RecurrentMode::kGru,
        "aten::gru.data(Tensor data, Tensor batch_sizes, Tensor hx, " SRT_RECURRENT_ARGUMENTS
        ") -> (Tensor, Tensor)",
        true));
SRT_REGISTER_KERNEL(
    "aten::rnn_tanh", kOutVariant,
    layerFactory(RecurrentMode::kRnnTanh,
                 "aten::rnn_tanh.input(Tensor input, Tensor hx, " SRT_RECURRENT_ARGUMENTS
                 ", bool batch_first) -> (Tensor, Tensor)",
                 false));
SRT_REGISTER_KERNEL(
    "aten::rnn_tanh", kOutVariant,
    layerFactory(
        RecurrentMode::kRnnTanh,
        "aten::rnn_tanh.data(Tensor data, Tensor batch_sizes, Tensor hx, " SRT_RECURRENT_ARGUMENTS
        ") -> (Tensor, Tensor)",
        true));
SRT_REGISTER_KERNEL(
    "aten::rnn_relu", kOutVariant,
    layerFactory(RecurrentMode::kRnnRelu,
                 "aten::rnn_relu.input(Tensor input, Tensor hx, " SRT_RECURRENT_ARGUMENTS
                 ", bool batch_first) -> (Tensor, Tensor)",
                 false));
SRT_REGISTER_KERNEL(
    "aten::rnn_relu", kOutVariant,
    layerFactory(
        RecurrentMode::kRnnRelu,
        "aten::rnn_relu.data(Tensor data, Tensor batch_sizes, Tensor hx, " SRT_RECURRENT_ARGUMENTS
        ") -> (Tensor, Tensor)",
        true));
#undef SRT_RECURRENT_ARGUMENTS

} // namespace
} // namespace srt::ops
