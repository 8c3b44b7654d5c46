#include "ops/recurrent/recurrent_weights.h"

#include <optional>

#include <ATen/ATen.h>

#include "ops/gemm/onednn.h"
#include "ops/recurrent/gate_loops.h"

namespace srt::ops::recurrent {

int64_t gateCount(RecurrentMode mode) {
  switch (mode) {
  case RecurrentMode::kLstm:
    return 4;
  case RecurrentMode::kGru:
    return 3;
  case RecurrentMode::kRnnTanh:
  case RecurrentMode::kRnnRelu:
    return 1;
  }
  return 1;
}

int64_t RecurrentWeights::paddedGateWidth() const {
  return (gateWidth() + kColumnBlock - 1) / kColumnBlock * kColumnBlock;
}

namespace {

bool isFloatMatrix(const at::Tensor& t, int64_t rows, int64_t columns) {
  return t.defined() && t.is_cpu() && t.scalar_type() == at::kFloat && t.dim() == 2 &&
         t.size(0) == rows && (columns < 0 || t.size(1) == columns);
}

bool isFloatVector(const at::Tensor& t, int64_t size) {
  return t.defined() && t.is_cpu() && t.scalar_type() == at::kFloat && t.dim() == 1 &&
         t.size(0) == size;
}

// w [n, k] (out x in) as w^T [k, n] in blocks of kColumnBlock columns, each block's k rows
// contiguous, the last block padded with zero columns. In bfloat16 (rowsTimesPairBlocks' layout)
// a block's rows go in pairs, each column's two values side by side, k padded to even with zeros.
at::Tensor packColumnBlocks(const at::Tensor& w, MultiplyPrecision precision) {
  const int64_t n = w.size(0);
  const int64_t k = w.size(1);
  const int64_t padded = (n + kColumnBlock - 1) / kColumnBlock * kColumnBlock;
  const int64_t blocks = padded / kColumnBlock;
  if (precision == MultiplyPrecision::kBFloat16) {
    const int64_t pairs = (k + 1) / 2;
    at::Tensor transposed = at::zeros({padded, 2 * pairs}, w.options());
    transposed.narrow(0, 0, n).narrow(1, 0, k).copy_(w);
    // [blocks, kColumnBlock, pairs, 2] -> [blocks, pairs, kColumnBlock, 2]
    return transposed.view({blocks, kColumnBlock, pairs, 2})
        .permute({0, 2, 1, 3})
        .contiguous()
        .to(at::kBFloat16);
  }
  at::Tensor transposed = at::zeros({padded, k}, w.options());
  transposed.narrow(0, 0, n).copy_(w);
  // [blocks, kColumnBlock, k] -> [blocks, k, kColumnBlock]
  return transposed.view({blocks, kColumnBlock, k}).transpose(1, 2).contiguous();
}

// What the CPU can honour of a requested precision.
MultiplyPrecision available(MultiplyPrecision precision) {
  return precision == MultiplyPrecision::kBFloat16 && cpuMultipliesBFloat16()
             ? MultiplyPrecision::kBFloat16
             : MultiplyPrecision::kFloat32;
}

// The input weight w_ih^T for oneDNN's matmul, in `precision` where oneDNN has it.
std::shared_ptr<const OneDnnPackedWeight> packInputWeight(const at::Tensor& w_ih,
                                                          MultiplyPrecision precision) {
  auto packed = packOneDnnWeight(w_ih.t());
  if (packed && precision == MultiplyPrecision::kBFloat16) {
    if (auto bf16 = repackOneDnnWeight(*packed, precision)) {
      return bf16;
    }
  }
  return packed;
}

// One direction's hidden weight and biases; b_ih, b_hh undefined without biases.
std::optional<DirectionWeights> packDirection(RecurrentMode mode, int64_t hidden, int64_t state,
                                              const at::Tensor& w_hh, const at::Tensor& b_ih,
                                              const at::Tensor& b_hh, MultiplyPrecision precision) {
  const int64_t width = gateCount(mode) * hidden;
  if (!isFloatMatrix(w_hh, width, state) || (b_ih.defined() && !isFloatVector(b_ih, width)) ||
      (b_hh.defined() && !isFloatVector(b_hh, width))) {
    return std::nullopt;
  }
  DirectionWeights d;
  d.w_hh = w_hh.contiguous();
  d.w_hh_blocked = packColumnBlocks(w_hh, precision);
  d.bias = at::zeros({width}, w_hh.options());
  if (b_ih.defined()) {
    d.bias.add_(b_ih);
  }
  if (mode == RecurrentMode::kGru) {
    d.bias_hn = at::zeros({hidden}, w_hh.options());
    if (b_hh.defined()) {
      // b_hn sits inside r * (...): only the reset and update gates' hidden biases fold in.
      d.bias.narrow(0, 0, 2 * hidden).add_(b_hh.narrow(0, 0, 2 * hidden));
      d.bias_hn.copy_(b_hh.narrow(0, 2 * hidden, hidden));
    }
  } else if (b_hh.defined()) {
    d.bias.add_(b_hh);
  }
  return d;
}

} // namespace

std::shared_ptr<const RecurrentWeights>
packLayerWeights(RecurrentMode mode, const std::vector<at::Tensor>& params, bool has_biases,
                 int64_t num_layers, bool bidirectional, MultiplyPrecision requested) {
  const MultiplyPrecision precision = available(requested);
  const int64_t directions = bidirectional ? 2 : 1;
  const int64_t groups = num_layers * directions;
  if (num_layers <= 0) {
    return nullptr;
  }
  // An LSTM with proj_size has w_hr after each direction's other parameters.
  const bool projected = mode == RecurrentMode::kLstm &&
                         static_cast<int64_t>(params.size()) == groups * (has_biases ? 5 : 3);
  const int64_t per_direction = (has_biases ? 4 : 2) + (projected ? 1 : 0);
  if (static_cast<int64_t>(params.size()) != groups * per_direction) {
    return nullptr;
  }
  const at::Tensor& first_w_hh = params[1];
  if (!first_w_hh.defined() || first_w_hh.dim() != 2) {
    return nullptr;
  }
  auto packed = std::make_shared<RecurrentWeights>();
  packed->mode = mode;
  packed->gates = gateCount(mode);
  packed->hidden = first_w_hh.size(0) / packed->gates;
  packed->proj_size = projected ? first_w_hh.size(1) : 0;
  const int64_t width = packed->gateWidth();
  const int64_t state = packed->stateSize();
  if (packed->hidden <= 0 || state <= 0 || (!projected && first_w_hh.size(1) != packed->hidden)) {
    return nullptr;
  }
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    LayerWeights lw;
    lw.input_size = layer == 0 ? params[0].dim() == 2 ? params[0].size(1) : -1 : directions * state;
    std::vector<at::Tensor> w_ih;
    for (int64_t d = 0; d < directions; ++d) {
      const size_t base = static_cast<size_t>((layer * directions + d) * per_direction);
      const at::Tensor& w = params[base];
      if (lw.input_size <= 0 || !isFloatMatrix(w, width, lw.input_size)) {
        return nullptr;
      }
      w_ih.push_back(w);
      auto direction = packDirection(mode, packed->hidden, state, params[base + 1],
                                     has_biases ? params[base + 2] : at::Tensor(),
                                     has_biases ? params[base + 3] : at::Tensor(), precision);
      if (!direction) {
        return nullptr;
      }
      if (projected) {
        const at::Tensor& w_hr = params[base + per_direction - 1];
        if (!isFloatMatrix(w_hr, state, packed->hidden)) {
          return nullptr;
        }
        direction->w_hr_blocked = packColumnBlocks(w_hr, precision);
      }
      lw.directions.push_back(std::move(*direction));
    }
    lw.w_ih = at::cat(w_ih, 0).contiguous();
    lw.w_ih_packed = packInputWeight(lw.w_ih, precision);
    packed->layers.push_back(std::move(lw));
  }
  return packed;
}

std::shared_ptr<const RecurrentWeights>
packCellWeights(RecurrentMode mode, const at::Tensor& w_ih, const at::Tensor& w_hh,
                const at::Tensor& b_ih, const at::Tensor& b_hh, MultiplyPrecision requested) {
  const MultiplyPrecision precision = available(requested);
  if (!w_hh.defined() || w_hh.dim() != 2 || w_hh.size(1) <= 0) {
    return nullptr;
  }
  auto packed = std::make_shared<RecurrentWeights>();
  packed->mode = mode;
  packed->hidden = w_hh.size(1);
  packed->gates = gateCount(mode);
  if (!isFloatMatrix(w_ih, packed->gateWidth(), -1) || w_ih.size(1) <= 0) {
    return nullptr;
  }
  auto direction = packDirection(mode, packed->hidden, packed->hidden, w_hh, b_ih, b_hh, precision);
  if (!direction) {
    return nullptr;
  }
  LayerWeights lw;
  lw.input_size = w_ih.size(1);
  lw.w_ih = w_ih.contiguous();
  lw.w_ih_blocked = packColumnBlocks(w_ih, precision);
  lw.directions.push_back(std::move(*direction));
  packed->layers.push_back(std::move(lw));
  return packed;
}

bool timesBlocked(const float* x, int64_t ldx, int64_t rows, const at::Tensor& w_blocked, int64_t k,
                  float* y, int64_t ldy, bool backwards) {
  const int64_t n = w_blocked.size(0) * kColumnBlock;
  if (w_blocked.scalar_type() == at::kBFloat16) {
    return rowsTimesPairBlocks(x, ldx, rows,
                               reinterpret_cast<const uint16_t*>(w_blocked.data_ptr()), k, n, y,
                               ldy, backwards);
  }
  return rowsTimesBlocks(x, ldx, rows, w_blocked.data_ptr<float>(), k, n, y, ldy, backwards);
}

} // namespace srt::ops::recurrent
