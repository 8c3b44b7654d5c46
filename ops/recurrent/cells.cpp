// aten::lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell (nn.LSTMCell & co., and the cells
// of hand-written loops) as out-variant kernels: one step of ops/recurrent/recurrent_layers.h on
// weights packed at build. Weights that are not constants, and calls the kernel does not take
// (another dtype, mismatched shapes: ATen's errors), run ATen's op.
#include <optional>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/recurrent/recurrent_layers.h"

namespace srt::ops {
namespace {

using recurrent::RecurrentMode;
using recurrent::RecurrentWeights;

enum Argument { kInput, kHx, kWeightIh, kWeightHh, kBiasIh, kBiasHh };

// A state tensor [batch, hidden] as contiguous data. (nn.LSTMCell & co. add the batch dimension
// of an unbatched input themselves: ATen's cells take 2-D input only.)
std::optional<at::Tensor> cellState(const at::Tensor& t, const at::Tensor& x, int64_t hidden) {
  if (t.scalar_type() != at::kFloat || !t.is_cpu() || t.dim() != 2 || t.size(0) != x.size(0) ||
      t.size(1) != hidden) {
    return std::nullopt;
  }
  return t.contiguous();
}

class CellKernel {
public:
  CellKernel(std::shared_ptr<const RecurrentWeights> weights, KernelFunction fallback)
      : weights_(std::move(weights)), fallback_(std::move(fallback)) {}

  void operator()(ProcessedNode& p) const {
    const RecurrentWeights& w = *weights_;
    const at::Tensor& x = p.input(kInput).toTensor();
    if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.dim() != 2 ||
        x.size(1) != w.layers.front().input_size || x.size(0) == 0) {
      fallback_(p);
      return;
    }
    const bool lstm = w.mode == RecurrentMode::kLstm;
    std::optional<at::Tensor> h0;
    std::optional<at::Tensor> c0;
    if (lstm) {
      const auto hx = p.input(kHx).toListRef();
      if (hx.size() != 2) {
        fallback_(p);
        return;
      }
      h0 = cellState(hx[0].toTensor(), x, w.hidden);
      c0 = cellState(hx[1].toTensor(), x, w.hidden);
    } else {
      h0 = cellState(p.input(kHx).toTensor(), x, w.hidden);
    }
    if (!h0 || (lstm && !c0)) {
      fallback_(p);
      return;
    }
    const int64_t batch = x.size(0);
    const at::Tensor input = x.contiguous();
    at::Tensor& h = contiguousOutput(p, 0, h0->sizes(), x.options());
    recurrent::RecurrentCall call;
    call.input = input.data_ptr<float>();
    call.steps = 1;
    call.batch = batch;
    call.h0 = h0->data_ptr<float>();
    call.output = h.data_ptr<float>();
    if (lstm) {
      at::Tensor& c = contiguousOutput(p, 1, c0->sizes(), x.options());
      call.c0 = c0->data_ptr<float>();
      call.c_n = c.data_ptr<float>();
    }
    recurrent::runRecurrent(w, call, p.scratch(recurrent::recurrentScratchBytes(w, 1, batch)));
  }

private:
  std::shared_ptr<const RecurrentWeights> weights_;
  KernelFunction fallback_;
};

// A constant tensor argument, an undefined tensor for a constant None; nullopt when the
// argument is known only at run time.
std::optional<at::Tensor> constantTensor(const torch::jit::Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !(constant->isTensor() || constant->isNone())) {
    return std::nullopt;
  }
  return constant->isTensor() ? constant->toTensor() : at::Tensor();
}

KernelFactory cellFactory(RecurrentMode mode, const char* schema) {
  return [mode, schema](const torch::jit::Node* node,
                        const KernelOptions& options) -> std::optional<KernelFunction> {
    if (!node->matches(schema)) {
      return std::nullopt;
    }
    const auto w_ih = constantTensor(node->input(kWeightIh));
    const auto w_hh = constantTensor(node->input(kWeightHh));
    const auto b_ih = constantTensor(node->input(kBiasIh));
    const auto b_hh = constantTensor(node->input(kBiasHh));
    if (!w_ih || !w_hh || !b_ih || !b_hh) {
      return std::nullopt;
    }
    auto weights =
        recurrent::packCellWeights(mode, *w_ih, *w_hh, *b_ih, *b_hh, options.weight_precision);
    auto fallback = makeFallbackKernel(node);
    if (!weights || !fallback) {
      return std::nullopt;
    }
    return CellKernel(std::move(weights), std::move(*fallback));
  };
}

SRT_REGISTER_KERNEL("aten::lstm_cell", kOutVariant,
                    cellFactory(RecurrentMode::kLstm,
                                "aten::lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor "
                                "w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)"));
SRT_REGISTER_KERNEL("aten::gru_cell", kOutVariant,
                    cellFactory(RecurrentMode::kGru,
                                "aten::gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, "
                                "Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"));
SRT_REGISTER_KERNEL("aten::rnn_tanh_cell", kOutVariant,
                    cellFactory(RecurrentMode::kRnnTanh,
                                "aten::rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor "
                                "w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"));
SRT_REGISTER_KERNEL("aten::rnn_relu_cell", kOutVariant,
                    cellFactory(RecurrentMode::kRnnRelu,
                                "aten::rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor "
                                "w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"));

} // namespace
} // namespace srt::ops
