// 3-D pooling, for video networks: adaptive_avg_pool3d (torchvision's r3d_18 / mc3_18 /
// r2plus1d_18 heads) as plain loops over contiguous or channels-last-3d float32 input;
// avg_pool3d and max_pool3d as ATen's kernels into the reused output (2-D pooling is
// ops/conv/pooling.cpp).
#include <algorithm>
#include <optional>
#include <vector>

#include <ATen/CPUFunctions.h>
#include <ATen/NativeFunctions.h>
#include <ATen/native/Pool.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

// Output cell i of `out` cells over `in` input cells reads [start, end), as ATen's adaptive
// pooling divides: floor(i * in / out) to ceil((i + 1) * in / out).
struct Window {
  int64_t start, end;
};

std::vector<Window> adaptiveWindows(int64_t in, int64_t out) {
  std::vector<Window> windows(out);
  for (int64_t i = 0; i < out; ++i) {
    windows[i] = {(i * in) / out, ((i + 1) * in + out - 1) / out};
  }
  return windows;
}

// Float32 [C, D, H, W] or [N, C, D, H, W], contiguous or (5-D) channels last, with non-empty
// input and output sizes: each output the mean of its window, the output in the input's layout
// (ATen 1.13's kernel returns contiguous; the values are the same, and passes/channels_last.cpp
// then keeps a network channels last through its head). False for anything else.
bool adaptiveAvgPool3dFloat(ProcessedNode& p, const at::Tensor& self,
                            const at::DimVector& output_size) {
  const bool channels_last = self.dim() == 5 && !self.is_contiguous() &&
                             self.is_contiguous(at::MemoryFormat::ChannelsLast3d);
  if (self.scalar_type() != at::kFloat || (self.dim() != 4 && self.dim() != 5) ||
      !(self.is_contiguous() || channels_last) || output_size.size() != 3) {
    return false;
  }
  const int64_t rank = self.dim();
  int64_t in[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = self.size(rank - 3 + i);
    if (in[i] <= 0 || output_size[i] <= 0) {
      return false;
    }
  }
  const int64_t channels = self.size(rank - 4);
  const int64_t batch = rank == 5 ? self.size(0) : 1;
  if (channels <= 0 || batch <= 0) {
    return false;
  }
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  std::copy(output_size.begin(), output_size.end(), shape.end() - 3);
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(
      out, shape, channels_last ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::Contiguous);
  const std::vector<Window> depth = adaptiveWindows(in[0], output_size[0]);
  const std::vector<Window> height = adaptiveWindows(in[1], output_size[1]);
  const std::vector<Window> width = adaptiveWindows(in[2], output_size[2]);
  const int64_t out_cells = output_size[0] * output_size[1] * output_size[2];
  const int64_t in_cells = in[0] * in[1] * in[2];
  const float* x = self.data_ptr<float>();
  float* y = out.data_ptr<float>();
  // Output cell `cell` of [oD, oH, oW]: its window, and 1 / its size.
  const auto window = [&](int64_t cell, Window& d, Window& h, Window& w) {
    d = depth[cell / (output_size[1] * output_size[2])];
    h = height[(cell / output_size[2]) % output_size[1]];
    w = width[cell % output_size[2]];
    return 1.f / static_cast<float>((d.end - d.start) * (h.end - h.start) * (w.end - w.start));
  };
  // Every input element is read about once (the windows tile the input, overlapping by at most
  // a cell per dimension).
  const double cost = static_cast<double>(self.numel()) * kNanosecondsPerElement;
  if (!channels_last) {
    // One task per [D, H, W] plane.
    const int64_t planes = batch * channels;
    splitIfWorthIt(p.workers(), planes, std::max<int64_t>(1, (int64_t{1} << 14) / in_cells), cost,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t plane = begin; plane < end; ++plane) {
                       const float* xp = x + plane * in_cells;
                       float* yp = y + plane * out_cells;
                       for (int64_t cell = 0; cell < out_cells; ++cell) {
                         Window d, h, w;
                         const float scale = window(cell, d, h, w);
                         float sum = 0.f;
                         for (int64_t z = d.start; z < d.end; ++z) {
                           for (int64_t r = h.start; r < h.end; ++r) {
                             const float* row = xp + (z * in[1] + r) * in[2];
                             for (int64_t c = w.start; c < w.end; ++c) {
                               sum += row[c];
                             }
                           }
                         }
                         yp[cell] = sum * scale;
                       }
                     }
                   });
    return true;
  }
  // Channels last: one task per (batch, output cell), summing whole rows of channels.
  const int64_t rows = batch * out_cells;
  const int64_t reads_per_row = std::max<int64_t>(1, in_cells / out_cells * channels);
  splitIfWorthIt(p.workers(), rows, std::max<int64_t>(1, (int64_t{1} << 14) / reads_per_row), cost,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t row = begin; row < end; ++row) {
                     const int64_t n = row / out_cells;
                     Window d, h, w;
                     const float scale = window(row % out_cells, d, h, w);
                     float* result = y + row * channels;
                     std::fill(result, result + channels, 0.f);
                     for (int64_t z = d.start; z < d.end; ++z) {
                       for (int64_t r = h.start; r < h.end; ++r) {
                         for (int64_t c = w.start; c < w.end; ++c) {
                           const float* pixel =
                               x + (((n * in[0] + z) * in[1] + r) * in[2] + c) * channels;
                           for (int64_t k = 0; k < channels; ++k) {
                             result[k] += pixel[k];
                           }
                         }
                       }
                     }
                     for (int64_t k = 0; k < channels; ++k) {
                       result[k] *= scale;
                     }
                   }
                 });
  return true;
}

void adaptiveAvgPool3d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector output_size = p.input(1).toDimVector();
  if (adaptiveAvgPool3dFloat(p, self, output_size)) {
    return;
  }
  at::cpu::adaptive_avg_pool3d_outf(self, output_size, outputTensorLike(p, 0, self));
}

void avgPool3d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::cpu::avg_pool3d_outf(self, p.input(1).toDimVector(), p.input(2).toDimVector(),
                           p.input(3).toDimVector(), p.input(4).toBool(), p.input(5).toBool(),
                           p.input(6).toOptional<int64_t>(), outputTensorLike(p, 0, self));
}

// kernel_size, stride, padding or dilation of one or three elements (an empty stride means the
// kernel size), as ATen reads them.
int64_t triple(at::IntArrayRef values, size_t i, int64_t if_empty) {
  return values.empty() ? if_empty : values[values.size() == 1 ? 0 : i];
}

// The output shape of max_pool3d's arguments by ATen's formula, or std::nullopt when they are
// malformed (ATen's checks then report them before writing anything).
std::optional<at::DimVector> maxPool3dShape(const at::Tensor& self, const at::DimVector& kernel,
                                            const at::DimVector& stride,
                                            const at::DimVector& padding,
                                            const at::DimVector& dilation, bool ceil_mode) {
  const auto well_formed = [](const at::DimVector& v, bool may_be_empty) {
    return v.size() == 1 || v.size() == 3 || (may_be_empty && v.empty());
  };
  if ((self.dim() != 4 && self.dim() != 5) || !well_formed(kernel, false) ||
      !well_formed(stride, true) || !well_formed(padding, false) || !well_formed(dilation, false)) {
    return std::nullopt;
  }
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  for (size_t i = 0; i < 3; ++i) {
    const int64_t k = triple(kernel, i, 0);
    const int64_t s = triple(stride, i, k);
    const int64_t d = triple(dilation, i, 1);
    if (k <= 0 || s <= 0 || d <= 0) {
      return std::nullopt;
    }
    int64_t& extent = shape[shape.size() - 3 + i];
    extent = at::native::pooling_output_shape<int64_t>(extent, k, triple(padding, i, 0), s, d,
                                                       ceil_mode);
    if (extent <= 0) {
      return std::nullopt;
    }
  }
  return shape;
}

// max_pool3d_with_indices with the indices dropped, as in ATen. The indices are kernel scratch
// of the output's shape.
void maxPool3d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector kernel = p.input(1).toDimVector();
  const at::DimVector stride = p.input(2).toDimVector();
  const at::DimVector padding = p.input(3).toDimVector();
  const at::DimVector dilation = p.input(4).toDimVector();
  const bool ceil_mode = p.input(5).toBool();
  const at::DimVector shape =
      maxPool3dShape(self, kernel, stride, padding, dilation, ceil_mode).value_or(at::DimVector{0});
  const int64_t numel = c10::multiply_integers(shape);
  at::Tensor indices =
      at::from_blob(p.scratch(std::max<int64_t>(numel, 1) * sizeof(int64_t)), shape, at::kLong);
  at::cpu::max_pool3d_with_indices_outf(self, kernel, stride, padding, dilation, ceil_mode,
                                        outputTensorLike(p, 0, self), indices);
}

} // namespace

SRT_REGISTER_KERNEL(
    "aten::adaptive_avg_pool3d", kOutVariant,
    whenMatches("aten::adaptive_avg_pool3d(Tensor self, int[3] output_size) -> Tensor",
                adaptiveAvgPool3d));
SRT_REGISTER_KERNEL(
    "aten::avg_pool3d", kOutVariant,
    whenMatches("aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] "
                "padding=0, bool ceil_mode=False, bool count_include_pad=True, int? "
                "divisor_override=None) -> Tensor",
                avgPool3d));
SRT_REGISTER_KERNEL(
    "aten::max_pool3d", kOutVariant,
    whenMatches("aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], "
                "int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor",
                maxPool3d));

} // namespace srt::ops
