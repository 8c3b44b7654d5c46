#include "ops/recurrent/recurrent_layers.h"

#include <algorithm>
#include <numeric>

#include <ATen/Parallel.h>
#include <cblas.h>

#include "ops/core/parallelism.h"
#include "ops/gemm/threads.h"
#include "ops/recurrent/gate_loops.h"

namespace srt::ops::recurrent {

namespace {

// Up to this batch a step's hidden projection runs on the packed weight, four rows per pass over
// it (ops/recurrent/gate_loops.h); cblas_sgemm, which packs the weight again on every call, was
// no faster per row up to batch 64 at hidden 128 (about 3 us per row and step either way before
// the four-row kernel).
constexpr int64_t kMaxRowsPerRowProducts = 64;

size_t floatBytes(int64_t count) {
  return (static_cast<size_t>(count) * sizeof(float) + 63) / 64 * 64;
}

// Where the scratch block's regions start, in bytes.
struct ScratchLayout {
  size_t projections = 0;       // [rows, directions * gates * hidden]: a layer's input projections
  size_t layer_out[2] = {0, 0}; // hidden states of the layers below the last, alternating
  size_t hidden_proj = 0;       // per direction [batch, padded gate width]: one step's h @ w_hh^T
  size_t hidden_proj_bytes = 0; // of one direction
  size_t h_state = 0;           // per direction [batch, state size]: the running hidden state
  size_t unprojected = 0;       // per direction [batch, hidden] + a padded row: before w_hr
  size_t unprojected_bytes = 0; // of one direction (0 without a projection)
  size_t zeros = 0;             // [batch, max(hidden, state)] zeros: h0 / c0 when none is given
  size_t bytes = 0;
};

ScratchLayout layoutFor(const RecurrentWeights& w, int64_t steps, int64_t batch) {
  const int64_t rows = steps * batch;
  const int64_t directions = w.numDirections();
  const int64_t layers = static_cast<int64_t>(w.layers.size());
  ScratchLayout s;
  size_t offset = 0;
  s.projections = offset;
  // A single row's projection (a cell's) is written in whole column blocks.
  offset += floatBytes(rows * directions * w.gateWidth() + kColumnBlock);
  for (int64_t i = 0; i < std::min<int64_t>(layers - 1, 2); ++i) {
    s.layer_out[i] = offset;
    offset += floatBytes(rows * directions * w.stateSize());
  }
  s.hidden_proj = offset; // one per direction: the directions may run on two threads
  s.hidden_proj_bytes = floatBytes(batch * w.paddedGateWidth());
  offset += directions * s.hidden_proj_bytes;
  s.h_state = offset;
  offset += directions * floatBytes(batch * w.stateSize());
  s.unprojected = offset;
  if (w.proj_size > 0) {
    // The gates' h rows, then one projected row in whole column blocks.
    s.unprojected_bytes = floatBytes(batch * w.hidden + (w.proj_size + kColumnBlock - 1) /
                                                            kColumnBlock * kColumnBlock);
    offset += directions * s.unprojected_bytes;
  }
  s.zeros = offset;
  offset += floatBytes(batch * std::max(w.hidden, w.stateSize()));
  s.bytes = offset;
  return s;
}

// out[m, n] = a[m, k] @ b^T, b [n, k] row-major (a weight as PyTorch stores it).
void gemmTransposedWeight(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                          const float* b, float* out, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.f, a, static_cast<int>(lda), b, static_cast<int>(k), 0.f, out,
              static_cast<int>(ldc));
}

// One layer's input projections: every step, both directions, one GEMM.
void projectInputs(const LayerWeights& lw, const float* x, int64_t rows, int64_t width,
                   float* projections) {
  if (rows == 1 && lw.w_ih_blocked.defined()) {
    timesBlocked(x, lw.input_size, 1, lw.w_ih_blocked, lw.input_size, projections, 0);
    return;
  }
  gemmTransposedWeight(rows, width, lw.input_size, x, lw.input_size, lw.w_ih.data_ptr<float>(),
                       projections, width);
}

// One direction of one layer over every step: hidden projection, then the gates per batch row.
// Writes its stateSize() columns of layer_out's rows, its state of h_n and c_n. The hidden state
// runs in h_state ([batch, stateSize()], contiguous whatever the row order), so that a packed
// sequence's finished rows keep their last state and its rows that start late (in the reverse
// direction) start from h0.
void runDirection(const RecurrentWeights& w, const RecurrentCall& call, int64_t layer, int64_t d,
                  const float* projections, float* layer_out, float* hidden_proj, float* h_state,
                  float* unprojected, const float* zeros) {
  const LayerWeights& lw = w.layers[static_cast<size_t>(layer)];
  const DirectionWeights& dw = lw.directions[static_cast<size_t>(d)];
  const int64_t steps = call.steps;
  const int64_t batch = call.batch;
  const int64_t hidden = w.hidden;
  const int64_t state_size = w.stateSize(); // of h: hidden, or proj_size
  const int64_t directions = w.numDirections();
  const int64_t gate_width = w.gateWidth();
  const int64_t padded_width = w.paddedGateWidth();
  const int64_t proj_width = directions * gate_width;
  const int64_t out_width = directions * state_size;
  // Row of (step t, batch entry b) in the input, projection and output orders: padded
  // [steps, batch] or [batch, steps]; packed, the steps' rows one after another.
  const int64_t step_stride = call.batch_first ? 1 : batch;
  const int64_t batch_stride = call.batch_first ? steps : 1;
  int64_t packed_offset = 0; // rows of the steps before t (packed, forward) or up to t (reverse)
  if (call.batch_sizes != nullptr && d == 1) {
    for (int64_t t = 0; t < steps; ++t) {
      packed_offset += call.batch_sizes[t];
    }
  }
  const int64_t state = layer * directions + d;
  const float* bias = dw.bias.data_ptr<float>();
  const float* bias_hn = dw.bias_hn.defined() ? dw.bias_hn.data_ptr<float>() : nullptr;
  float* projected_row = unprojected + batch * hidden;
  float* c = nullptr;
  if (w.mode == RecurrentMode::kLstm) {
    c = call.c_n + state * batch * hidden;
    std::copy_n(call.c0 != nullptr ? call.c0 + state * batch * hidden : zeros, batch * hidden, c);
  }
  std::copy_n(call.h0 != nullptr ? call.h0 + state * batch * state_size : zeros, batch * state_size,
              h_state);
  bool backwards = false; // how the next pass over w_hh goes (timesBlocked)
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = d == 0 ? i : steps - 1 - i;
    int64_t active = batch;
    int64_t first_row = t * step_stride;
    if (call.batch_sizes != nullptr) {
      active = call.batch_sizes[t];
      if (d == 1) {
        packed_offset -= active;
      }
      first_row = packed_offset;
      if (d == 0) {
        packed_offset += active;
      }
    }
    const int64_t row_stride = call.batch_sizes != nullptr ? 1 : batch_stride;
    if (active <= kMaxRowsPerRowProducts) {
      backwards = timesBlocked(h_state, state_size, active, dw.w_hh_blocked, state_size,
                               hidden_proj, padded_width, backwards);
    } else {
      // Float32 in either precision: at this batch the product is compute-bound, where
      // AVX512-BF16's dot products are no faster than float32 FMAs.
      gemmTransposedWeight(active, gate_width, state_size, h_state, state_size,
                           dw.w_hh.data_ptr<float>(), hidden_proj, padded_width);
    }
    for (int64_t b = 0; b < active; ++b) {
      const int64_t row = first_row + b * row_stride;
      const float* x_proj = projections + row * proj_width + d * gate_width;
      const float* h_proj = hidden_proj + b * padded_width;
      float* h = layer_out + row * out_width + d * state_size;
      switch (w.mode) {
      case RecurrentMode::kLstm:
        if (dw.w_hr_blocked.defined()) {
          // h = w_hr @ (o * tanh(c)): the gates' h, then its projection.
          float* gates_h = unprojected + b * hidden;
          lstmGates(x_proj, h_proj, bias, c + b * hidden, gates_h, hidden);
          timesBlocked(gates_h, hidden, 1, dw.w_hr_blocked, hidden, projected_row, 0);
          std::copy_n(projected_row, state_size, h);
        } else {
          lstmGates(x_proj, h_proj, bias, c + b * hidden, h, hidden);
        }
        break;
      case RecurrentMode::kGru:
        gruGates(x_proj, h_proj, bias, bias_hn, h_state + b * hidden, h, hidden);
        break;
      case RecurrentMode::kRnnTanh:
      case RecurrentMode::kRnnRelu:
        rnnGates(x_proj, h_proj, bias, h, hidden, w.mode == RecurrentMode::kRnnRelu);
        break;
      }
      std::copy_n(h, state_size, h_state + b * state_size);
    }
  }
  if (call.h_n != nullptr) {
    std::copy_n(h_state, batch * state_size, call.h_n + state * batch * state_size);
  }
}

} // namespace

size_t recurrentScratchBytes(const RecurrentWeights& weights, int64_t steps, int64_t batch) {
  return layoutFor(weights, steps, batch).bytes;
}

void runRecurrent(const RecurrentWeights& w, const RecurrentCall& call, void* scratch_block,
                  const InputProjection& project) {
  char* scratch = static_cast<char*>(scratch_block);
  const ScratchLayout s = layoutFor(w, call.steps, call.batch);
  const int64_t directions = w.numDirections();
  const int64_t layers = static_cast<int64_t>(w.layers.size());
  float* projections = reinterpret_cast<float*>(scratch + s.projections);
  float* zeros = reinterpret_cast<float*>(scratch + s.zeros);
  if (call.h0 == nullptr || (w.mode == RecurrentMode::kLstm && call.c0 == nullptr)) {
    std::fill_n(zeros, call.batch * std::max(w.hidden, w.stateSize()), 0.f);
  }
  useAtenThreadsForOpenBlas();
  // The directions are independent: on two threads when the work pays for waking one.
  const double direction_ns =
      static_cast<double>(call.steps * call.batch * w.gateWidth() * w.hidden) *
      kNanosecondsPerMultiplyAdd;
  const int64_t parts =
      directions == 2 ? std::min<int64_t>(2, threadsFor(call.workers, 2 * direction_ns)) : 1;
  const float* layer_in = call.input;
  for (int64_t layer = 0; layer < layers; ++layer) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(layer)];
    float* layer_out = layer == layers - 1
                           ? call.output
                           : reinterpret_cast<float*>(scratch + s.layer_out[layer % 2]);
    int64_t rows = call.steps * call.batch;
    if (call.batch_sizes != nullptr) {
      rows = std::accumulate(call.batch_sizes, call.batch_sizes + call.steps, int64_t{0});
    }
    if (!project || !project(layer, layer_in, rows, projections)) {
      projectInputs(lw, layer_in, rows, directions * w.gateWidth(), projections);
    }
    const auto run = [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d) {
        float* hidden_proj = reinterpret_cast<float*>(scratch + s.hidden_proj +
                                                      static_cast<size_t>(d) * s.hidden_proj_bytes);
        float* h_state = reinterpret_cast<float*>(
            scratch + s.h_state + static_cast<size_t>(d) * floatBytes(call.batch * w.stateSize()));
        float* unprojected = reinterpret_cast<float*>(scratch + s.unprojected +
                                                      static_cast<size_t>(d) * s.unprojected_bytes);
        runDirection(w, call, layer, d, projections, layer_out, hidden_proj, h_state, unprojected,
                     zeros);
      }
    };
    forEachPart(call.workers, directions, parts,
                [&](int64_t, int64_t begin, int64_t end) { run(begin, end); });
    layer_in = layer_out;
  }
}

} // namespace srt::ops::recurrent
