// The vectorized inner loops of the recurrent kernels: the hidden projection of one row against a
// weight packed in column blocks, and the gate formulas of LSTM, GRU and the plain RNN for one row.
// Built per CPU capability (ops/recurrent/cpu/gate_loops.cpp), run on the widest the CPU has
// (vec::widestCapability()); sigmoid is built on softmax's polynomial exp (exp of -|x|, within
// 2 ulp), tanh as 2 * sigmoid(2x) - 1 (within 1.8e-7 of it, ten times cheaper than Sleef's).
#pragma once

#include <cstdint>

namespace srt::ops::recurrent {

// Columns per block of a packed weight: 8 AVX2 vectors, one accumulator each, so consecutive
// rows of the weight do not wait on each other's FMA. Weights are packed to a multiple of it.
constexpr int64_t kColumnBlock = 64;

// y[n] = x[k] @ w for a weight [k, n] packed by packColumnBlocks (n a multiple of kColumnBlock).
// The weight is read once, front to back: at batch 1 the step of a recurrent layer is bound by
// streaming it from L2, so the layout is chosen for that.
void rowTimesBlocks(const float* x, const float* w_blocked, int64_t k, int64_t n, float* y);

// The same for `rows` rows of x (leading dimension ldx) into rows of y (leading dimension ldy),
// four at a time: each weight vector is loaded once for four rows, which at batch > 1 makes the
// product compute-bound rather than bound by streaming the weight.
void rowsTimesBlocks(const float* x, int64_t ldx, int64_t rows, const float* w_blocked, int64_t k,
                     int64_t n, float* y, int64_t ldy);

// The same on a bfloat16 weight [k, n] packed by packPairBlocks
// (ops/recurrent/recurrent_weights.cpp): per block of kColumnBlock columns, per pair of rows (2i,
// 2i + 1), each column's two values side by side (a trailing odd row paired with zero). x is
// rounded to bfloat16 and the products summed in float32 (vdpbf16ps): half the weight bytes to
// stream per step. Only where ops::cpuMultipliesBFloat16() holds (AVX512-BF16).
void rowsTimesPairBlocks(const float* x, int64_t ldx, int64_t rows, const uint16_t* w_pairs,
                         int64_t k, int64_t n, float* y, int64_t ldy);

// Pairs of x rounded per pass over the weight's blocks (on the stack, per row).
constexpr int64_t kPairChunk = 1024;

// LSTM (PyTorch's gate order i, f, g, o), for one row of `hidden` units: pre-activations are
// x_proj + h_proj + bias (4 * hidden each); c is updated in place, h written.
void lstmGates(const float* x_proj, const float* h_proj, const float* bias, float* c, float* h,
               int64_t hidden);

// GRU as PyTorch computes it (linear before reset, gate order r, z, n):
//   r = sigmoid(x_r + h_r + bias_r), z = sigmoid(x_z + h_z + bias_z)
//   n = tanh(x_n + bias_n + r * (h_n + bias_hn)),  h = n + z * (h_prev - n)
// with bias = b_ih + [b_hr, b_hz, 0] and bias_hn = b_hn. `h` may not alias `h_prev`.
void gruGates(const float* x_proj, const float* h_proj, const float* bias, const float* bias_hn,
              const float* h_prev, float* h, int64_t hidden);

// Elman RNN: h = act(x_proj + h_proj + bias), act tanh or relu.
void rnnGates(const float* x_proj, const float* h_proj, const float* bias, float* h, int64_t hidden,
              bool relu);

} // namespace srt::ops::recurrent
