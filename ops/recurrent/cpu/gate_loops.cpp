// ops/recurrent/gate_loops.h for one CPU capability (cmake/CpuKernels.cmake builds it once per
// capability with CPU_CAPABILITY naming the inline namespace).
#include <algorithm>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include "ops/elementwise/cpu/partial_vectors.h"
#include "ops/elementwise/cpu/polynomial_exp.h"
#include "ops/recurrent/gate_loops.h"

namespace srt::ops::recurrent {
inline namespace CPU_CAPABILITY {

using Vec = at::vec::Vectorized<float>;

namespace {

// The weight's column blocks [0, n) and a block's rows [0, k) in the pass's order: front to back,
// or back to front.
struct PassOrder {
  bool backwards;
  int64_t block(int64_t j, int64_t n) const { return backwards ? n - kColumnBlock - j : j; }
  int64_t row(int64_t i, int64_t k) const { return backwards ? k - 1 - i : i; }
};

// One row of x times the packed weight, one accumulator per vector of a column block.
void rowTimesBlocks(const float* x, const float* w, int64_t k, int64_t n, float* y,
                    PassOrder order) {
  constexpr int64_t kWidth = Vec::size();
  constexpr int kVectors = static_cast<int>(kColumnBlock / kWidth);
  for (int64_t jj = 0; jj < n; jj += kColumnBlock) {
    const int64_t j = order.block(jj, n);
    const float* block = w + j * k;
    Vec acc[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      acc[v] = Vec(0.f);
    }
    for (int64_t ii = 0; ii < k; ++ii) {
      const int64_t i = order.row(ii, k);
      const Vec xi(x[i]);
      const float* row = block + i * kColumnBlock;
      for (int v = 0; v < kVectors; ++v) {
        acc[v] = at::vec::fmadd(xi, Vec::loadu(row + v * kWidth), acc[v]);
      }
    }
    for (int v = 0; v < kVectors; ++v) {
      acc[v].store(y + j + v * kWidth);
    }
  }
}

// R rows of x (leading dimension ldx) times the packed weight, V vectors of columns at a time:
// R * V accumulators (8 or more, so consecutive rows of the weight do not wait on each other's
// FMA), each weight vector loaded once for all R rows.
template <int R, int V>
void rowsTimesBlocks(const float* x, int64_t ldx, const float* w, int64_t k, int64_t n, float* y,
                     int64_t ldy, PassOrder order) {
  constexpr int64_t kWidth = Vec::size();
  for (int64_t jj = 0; jj < n; jj += kColumnBlock) {
    const int64_t j = order.block(jj, n);
    const float* block = w + j * k;
    for (int64_t c = 0; c < kColumnBlock; c += V * kWidth) {
      Vec acc[R][V];
      for (int r = 0; r < R; ++r) {
        for (int v = 0; v < V; ++v) {
          acc[r][v] = Vec(0.f);
        }
      }
      for (int64_t ii = 0; ii < k; ++ii) {
        const int64_t i = order.row(ii, k);
        const float* row = block + i * kColumnBlock + c;
        Vec weights[V];
        for (int v = 0; v < V; ++v) {
          weights[v] = Vec::loadu(row + v * kWidth);
        }
        for (int r = 0; r < R; ++r) {
          const Vec xi(x[r * ldx + i]);
          for (int v = 0; v < V; ++v) {
            acc[r][v] = at::vec::fmadd(xi, weights[v], acc[r][v]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int v = 0; v < V; ++v) {
          acc[r][v].store(y + r * ldy + j + c + v * kWidth);
        }
      }
    }
  }
}

} // namespace

bool rowsTimesBlocksLoop(const float* x, int64_t ldx, int64_t rows, const float* w, int64_t k,
                         int64_t n, float* y, int64_t ldy, bool backwards) {
  // 4 rows x 2 vectors, then a pair as 2 x 4 vectors (8 sums in flight at any width), then a
  // single row as one column block; each pass over the weight the other way round.
  constexpr int kBlockVectors = static_cast<int>(kColumnBlock / Vec::size());
  return forRowGroups(rows, backwards, [&](int64_t r, int64_t group, bool group_backwards) {
    const PassOrder order{group_backwards};
    if (group == 4) {
      rowsTimesBlocks<4, 2>(x + r * ldx, ldx, w, k, n, y + r * ldy, ldy, order);
    } else if (group == 2) {
      rowsTimesBlocks<2, std::min(kBlockVectors, 4)>(x + r * ldx, ldx, w, k, n, y + r * ldy, ldy,
                                                     order);
    } else {
      rowTimesBlocks(x + r * ldx, w, k, n, y + r * ldy, order);
    }
  });
}

namespace {

// f(offset, count) over [0, n) in vector steps, the tail as one partial step.
template <typename F> inline void overVectors(int64_t n, const F& f) {
  constexpr int64_t kWidth = Vec::size();
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    f(i, kWidth);
  }
  if (i < n) {
    f(i, n - i);
  }
}

// The pre-activation of gate `gate` at units [i, i + count).
inline Vec preActivation(const float* x_proj, const float* h_proj, const float* bias,
                         int64_t hidden, int gate, int64_t i, int64_t count) {
  const int64_t at = gate * hidden + i;
  return vec::loadUpTo(x_proj + at, count) + vec::loadUpTo(h_proj + at, count) +
         vec::loadUpTo(bias + at, count);
}

} // namespace

void lstmGatesLoop(const float* x_proj, const float* h_proj, const float* bias, float* c, float* h,
                   int64_t hidden) {
  overVectors(hidden, [&](int64_t i, int64_t count) {
    const Vec in = vec::fastSigmoid(preActivation(x_proj, h_proj, bias, hidden, 0, i, count));
    const Vec forget = vec::fastSigmoid(preActivation(x_proj, h_proj, bias, hidden, 1, i, count));
    const Vec cell = vec::fastTanh(preActivation(x_proj, h_proj, bias, hidden, 2, i, count));
    const Vec out = vec::fastSigmoid(preActivation(x_proj, h_proj, bias, hidden, 3, i, count));
    const Vec c_new = forget * vec::loadUpTo(c + i, count) + in * cell;
    vec::storeUpTo(c_new, c + i, count);
    vec::storeUpTo(out * vec::fastTanh(c_new), h + i, count);
  });
}

void gruGatesLoop(const float* x_proj, const float* h_proj, const float* bias, const float* bias_hn,
                  const float* h_prev, float* h, int64_t hidden) {
  overVectors(hidden, [&](int64_t i, int64_t count) {
    const Vec reset = vec::fastSigmoid(preActivation(x_proj, h_proj, bias, hidden, 0, i, count));
    const Vec update = vec::fastSigmoid(preActivation(x_proj, h_proj, bias, hidden, 1, i, count));
    const int64_t at = 2 * hidden + i;
    const Vec candidate = vec::fastTanh(
        vec::loadUpTo(x_proj + at, count) + vec::loadUpTo(bias + at, count) +
        reset * (vec::loadUpTo(h_proj + at, count) + vec::loadUpTo(bias_hn + i, count)));
    vec::storeUpTo(candidate + update * (vec::loadUpTo(h_prev + i, count) - candidate), h + i,
                   count);
  });
}

void rnnGatesLoop(const float* x_proj, const float* h_proj, const float* bias, float* h,
                  int64_t hidden, bool relu) {
  overVectors(hidden, [&](int64_t i, int64_t count) {
    const Vec pre = preActivation(x_proj, h_proj, bias, hidden, 0, i, count);
    vec::storeUpTo(relu ? at::vec::clamp_min(pre, Vec(0.f)) : vec::fastTanh(pre), h + i, count);
  });
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::recurrent
