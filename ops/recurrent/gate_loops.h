// The vectorized inner loops of the recurrent kernels: the products of a step's rows with a weight
// packed in column blocks, and the gate formulas of LSTM, GRU and the plain RNN for one row.
// Built per CPU capability (ops/recurrent/cpu/gate_loops.cpp), run on the widest the CPU has
// (vec::widestCapability()); sigmoid is vec::fastSigmoid (softmax's polynomial exp, within 2e-7),
// tanh 2 * sigmoid(2x) - 1 (within 2.7e-7 of it, ten times cheaper than Sleef's).
#pragma once

#include <cstdint>

namespace srt::ops::recurrent {

// Columns per block of a packed weight: 8 AVX2 vectors, one accumulator each, so consecutive
// rows of the weight do not wait on each other's FMA. Weights are packed to a multiple of it.
constexpr int64_t kColumnBlock = 64;

// `rows` rows of y (leading dimension ldy) = rows of x[k] (leading dimension ldx) @ w, for a
// weight [k, n] packed by packColumnBlocks (ops/recurrent/recurrent_weights.cpp; n a multiple of
// kColumnBlock). At batch 1 a recurrent step is bound by streaming the weight from L2, so the
// layout is chosen for that: one pass over it per four rows (each weight vector loaded once for
// all four, which at batch > 1 makes the product compute-bound instead).
// Each pass goes the other way round from the one before, starting back to front if `backwards`;
// returns how the next product over the same weight should start. A recurrent step that goes
// on from there finds the part of the weight its last pass ended on still in L1 (the 2-layer
// biLSTM 64->128 at batch 1: 2% faster in float32 and in bfloat16, against front to back every
// step, in one process, interleaved). The sums' order differs with the direction.
bool rowsTimesBlocks(const float* x, int64_t ldx, int64_t rows, const float* w_blocked, int64_t k,
                     int64_t n, float* y, int64_t ldy, bool backwards);

// The same on a bfloat16 weight packed by packColumnBlocks in bfloat16: per block of
// kColumnBlock columns, per pair of rows (2i, 2i + 1), each column's two values side by side (a
// trailing odd row paired with zero). x is rounded to bfloat16 and the products summed in
// float32 (vdpbf16ps): half the weight bytes to stream per step. Only where
// ops::cpuMultipliesBFloat16() holds (AVX512-BF16).
bool rowsTimesPairBlocks(const float* x, int64_t ldx, int64_t rows, const uint16_t* w_pairs,
                         int64_t k, int64_t n, float* y, int64_t ldy, bool backwards);

// How both products above pass over their weight: pass(first_row, group_rows, backwards) for the
// rows in groups of four, then two, then one, each pass the other way round from the one before,
// starting as `backwards` says; returns how the next pass should start.
template <typename Pass> bool forRowGroups(int64_t rows, bool backwards, const Pass& pass) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4, backwards = !backwards) {
    pass(r, 4, backwards);
  }
  if (r + 2 <= rows) {
    pass(r, 2, backwards);
    r += 2;
    backwards = !backwards;
  }
  if (r < rows) {
    pass(r, 1, backwards);
    backwards = !backwards;
  }
  return backwards;
}

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
