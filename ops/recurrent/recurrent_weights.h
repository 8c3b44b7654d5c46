// A recurrent layer's constant weights (aten::lstm / gru / rnn_tanh / rnn_relu's `params`, or a
// cell's w_ih, w_hh, b_ih, b_hh) packed once, when the module is built, into the forms the
// recurrent kernels read: both directions' input weights stacked for one GEMM per layer, the
// hidden weights in column blocks for the single-row product of a batch-1 step, and the biases
// combined as the gate loops add them. Shared read-only by every runtime. With
// MultiplyPrecision::kBFloat16 (fp32_precision = "bf16") the products' weights are packed as
// bfloat16 instead: the blocked ones for vdpbf16ps, the input weights for oneDNN's bfloat16
// matmul; the hidden state and the gates stay float32.
#pragma once

#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ops/core/multiply_precision.h"

namespace srt::ops {
struct OneDnnPackedWeight;
} // namespace srt::ops

namespace srt::ops::recurrent {

enum class RecurrentMode { kLstm, kGru, kRnnTanh, kRnnRelu };

// Gates per unit: 4 for LSTM, 3 for GRU, 1 for the plain RNN.
int64_t gateCount(RecurrentMode mode);

struct DirectionWeights {
  at::Tensor w_hh; // [gates * hidden, hidden] as given, contiguous (GEMM with B > 1)
  // w_hh^T in column blocks, padded to paddedGateWidth() columns: float32, or bfloat16 pairs
  // (timesBlocked reads either).
  at::Tensor w_hh_blocked;
  at::Tensor bias;    // [gates * hidden]: b_ih + b_hh (GRU: b_ih + [b_hr, b_hz, 0])
  at::Tensor bias_hn; // [hidden], GRU's b_hn (zeros without biases); undefined otherwise
  // LSTM with proj_size: w_hr^T in column blocks (h = w_hr @ (o * tanh(c))), padded to whole
  // blocks; undefined otherwise.
  at::Tensor w_hr_blocked;
};

struct LayerWeights {
  int64_t input_size = 0;
  // [directions * gates * hidden, input_size]: both directions' projections in one GEMM.
  at::Tensor w_ih;
  // w_ih^T packed for oneDNN's matmul (2x OpenBLAS at 32 x 256 x 1024, which packs the weight on
  // every call); nullptr where oneDNN has none: OpenBLAS then.
  std::shared_ptr<const OneDnnPackedWeight> w_ih_packed;
  // w_ih^T in column blocks (directions * gates * hidden columns padded), for the single-row
  // input of a cell; undefined for layers, whose input projection covers every step at once.
  at::Tensor w_ih_blocked;
  std::vector<DirectionWeights> directions;
};

struct RecurrentWeights {
  RecurrentMode mode = RecurrentMode::kLstm;
  int64_t hidden = 0;
  int64_t proj_size = 0; // LSTM's projection of h, 0 for none
  int64_t gates = 0;
  std::vector<LayerWeights> layers;

  int64_t numDirections() const { return static_cast<int64_t>(layers.front().directions.size()); }
  int64_t gateWidth() const { return gates * hidden; }
  // gateWidth() rounded up to whole column blocks.
  int64_t paddedGateWidth() const;
  // The size of h (the outputs, h0 and h_n): proj_size with a projection, else hidden.
  int64_t stateSize() const { return proj_size > 0 ? proj_size : hidden; }
};

// The weights of aten::lstm / gru / rnn_tanh / rnn_relu, whose `params` list holds per layer and
// direction w_ih, w_hh, (with biases) b_ih, b_hh and (an LSTM with proj_size) w_hr. nullptr
// when they are not float32 CPU tensors of consistent shapes: the node runs ATen's op.
// `precision` kBFloat16 is taken only where the CPU multiplies bfloat16 natively.
std::shared_ptr<const RecurrentWeights>
packLayerWeights(RecurrentMode mode, const std::vector<at::Tensor>& params, bool has_biases,
                 int64_t num_layers, bool bidirectional, MultiplyPrecision precision);

// A cell's weights (b_ih, b_hh undefined when None): one layer, one direction, with the input
// weight blocked too. nullptr as above.
std::shared_ptr<const RecurrentWeights>
packCellWeights(RecurrentMode mode, const at::Tensor& w_ih, const at::Tensor& w_hh,
                const at::Tensor& b_ih, const at::Tensor& b_hh, MultiplyPrecision precision);

// `rows` rows of y (leading dimension ldy) = rows of x[k] (leading dimension ldx) @ w for a
// weight packed in column blocks above (w_hh_blocked, w_hr_blocked, w_ih_blocked), in whichever
// precision it was packed; y gets all its padded columns. The weight's passes alternate
// direction from `backwards` on; returns the direction the next product over it should take
// (ops/recurrent/gate_loops.h).
bool timesBlocked(const float* x, int64_t ldx, int64_t rows, const at::Tensor& w_blocked, int64_t k,
                  float* y, int64_t ldy, bool backwards = false);

} // namespace srt::ops::recurrent
