// Picks the capability build of ops/recurrent/cpu/gate_loops.cpp: the widest the CPU has.
#include "ops/recurrent/gate_loops.h"

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::recurrent {

#define SRT_DECLARE_GATE_LOOPS(capability)                                                         \
  namespace capability {                                                                           \
  bool rowsTimesBlocksLoop(const float* x, int64_t ldx, int64_t rows, const float* w, int64_t k,   \
                           int64_t n, float* y, int64_t ldy, bool backwards);                      \
  void lstmGatesLoop(const float* x_proj, const float* h_proj, const float* bias, float* c,        \
                     float* h, int64_t hidden);                                                    \
  void gruGatesLoop(const float* x_proj, const float* h_proj, const float* bias,                   \
                    const float* bias_hn, const float* h_prev, float* h, int64_t hidden);          \
  void rnnGatesLoop(const float* x_proj, const float* h_proj, const float* bias, float* h,         \
                    int64_t hidden, bool relu);                                                    \
  }
SRT_DECLARE_GATE_LOOPS(DEFAULT)
SRT_DECLARE_GATE_LOOPS(AVX2)
SRT_DECLARE_GATE_LOOPS(AVX512)
#undef SRT_DECLARE_GATE_LOOPS

namespace {

struct Loops {
  decltype(&DEFAULT::rowsTimesBlocksLoop) rows_times_blocks;
  decltype(&DEFAULT::lstmGatesLoop) lstm;
  decltype(&DEFAULT::gruGatesLoop) gru;
  decltype(&DEFAULT::rnnGatesLoop) rnn;
};

#define SRT_CAPABILITY_LOOPS(capability)                                                           \
  Loops {                                                                                          \
    capability::rowsTimesBlocksLoop, capability::lstmGatesLoop, capability::gruGatesLoop,          \
        capability::rnnGatesLoop                                                                   \
  }

// The widest vectors the CPU has (vec::widestCapability()): a recurrent layer's results owe ATen
// no bits, since its gates' inputs are sums of products in our order. On AVX-512, instead of
// Debian ATen's AVX2, the 2-layer biLSTM 64->128 at batch 1 took 543 -> 465 us (medians of 4
// processes each, interleaved; the step products alone 543 -> 513).
const Loops& loops() {
  static const Loops chosen = vec::widestOf(
      SRT_CAPABILITY_LOOPS(DEFAULT), SRT_CAPABILITY_LOOPS(AVX2), SRT_CAPABILITY_LOOPS(AVX512));
  return chosen;
}
#undef SRT_CAPABILITY_LOOPS

} // namespace

bool rowsTimesBlocks(const float* x, int64_t ldx, int64_t rows, const float* w_blocked, int64_t k,
                     int64_t n, float* y, int64_t ldy, bool backwards) {
  return loops().rows_times_blocks(x, ldx, rows, w_blocked, k, n, y, ldy, backwards);
}

void lstmGates(const float* x_proj, const float* h_proj, const float* bias, float* c, float* h,
               int64_t hidden) {
  loops().lstm(x_proj, h_proj, bias, c, h, hidden);
}

void gruGates(const float* x_proj, const float* h_proj, const float* bias, const float* bias_hn,
              const float* h_prev, float* h, int64_t hidden) {
  loops().gru(x_proj, h_proj, bias, bias_hn, h_prev, h, hidden);
}

void rnnGates(const float* x_proj, const float* h_proj, const float* bias, float* h, int64_t hidden,
              bool relu) {
  loops().rnn(x_proj, h_proj, bias, h, hidden, relu);
}

} // namespace srt::ops::recurrent
