// 2-D pooling: max_pool2d, avg_pool2d and adaptive_avg_pool2d (3-D pooling is
// ops/conv/pooling3d.cpp, convolutions ops/conv/convolution.cpp), and srt::blocked_max_pool2d,
// max_pool2d of a channel-blocked tensor (ops/conv/blocked_layout.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/CPUFunctions.h>
#include <ATen/NativeFunctions.h>
#include <ATen/Parallel.h>
#include <ATen/native/Pool.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/conv/onednn_conv.h"
#include "ops/conv/pool_loops.h"
#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/fast_path.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops {
namespace {

// kernel_size, stride, padding or dilation of one or two elements, as ATen reads them (an empty
// stride means the kernel size).
int64_t pair(at::IntArrayRef values, size_t i, int64_t if_empty) {
  return values.empty() ? if_empty : values[values.size() == 1 ? 0 : i];
}

struct PoolWindow {
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  bool ceil_mode;
};

// The window from max_pool2d's arguments, or std::nullopt when they are malformed (ATen's checks
// then report them).
std::optional<PoolWindow> poolWindow(ProcessedNode& p) {
  const at::DimVector kernel = p.input(1).toDimVector();
  const at::DimVector stride = p.input(2).toDimVector();
  const at::DimVector padding = p.input(3).toDimVector();
  const at::DimVector dilation = p.input(4).toDimVector();
  const bool well_formed = !kernel.empty() && kernel.size() <= 2 && stride.size() <= 2 &&
                           !padding.empty() && padding.size() <= 2 && !dilation.empty() &&
                           dilation.size() <= 2;
  if (!well_formed) {
    return std::nullopt;
  }
  PoolWindow w{pair(kernel, 0, 0),
               pair(kernel, 1, 0),
               0,
               0,
               pair(padding, 0, 0),
               pair(padding, 1, 0),
               pair(dilation, 0, 1),
               pair(dilation, 1, 1),
               p.input(5).toBool()};
  w.stride_h = pair(stride, 0, w.kernel_h);
  w.stride_w = pair(stride, 1, w.kernel_w);
  if (w.kernel_h <= 0 || w.kernel_w <= 0 || w.stride_h <= 0 || w.stride_w <= 0 ||
      w.dilation_h <= 0 || w.dilation_w <= 0) {
    return std::nullopt;
  }
  return w;
}

// max of a, b, c, d, or NaN when any is NaN (ATen's rule), without branches.
inline float max4(float a, float b, float c, float d) {
  const bool nan = std::isnan(a) | std::isnan(b) | std::isnan(c) | std::isnan(d);
  const float max = std::max(std::max(a, b), std::max(c, d));
  return nan ? std::numeric_limits<float>::quiet_NaN() : max;
}

// The usual 2x2 window, stride 2, no padding or dilation, whole windows only (floor mode, or
// ceil mode on even sizes): four loads per output and no loop overhead, which on 2x2 windows was
// most of the general loop's time.
bool isPlainTwoByTwo(const PoolWindow& w, int64_t in_h, int64_t in_w, int64_t out_h,
                     int64_t out_w) {
  return w.kernel_h == 2 && w.kernel_w == 2 && w.stride_h == 2 && w.stride_w == 2 && w.pad_h == 0 &&
         w.pad_w == 0 && w.dilation_h == 1 && w.dilation_w == 1 && 2 * out_h <= in_h &&
         2 * out_w <= in_w;
}

void maxPoolPlaneTwoByTwo(const float* in, int64_t in_w, float* out, int64_t out_h, int64_t out_w) {
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* top = in + 2 * oy * in_w;
    const float* bottom = top + in_w;
    float* o = out + oy * out_w;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      o[ox] = max4(top[2 * ox], top[2 * ox + 1], bottom[2 * ox], bottom[2 * ox + 1]);
    }
  }
}

// One [H, W] plane: the max over each window, NaN winning as in ATen's kernel.
void maxPoolPlane(const float* in, int64_t in_h, int64_t in_w, float* out, int64_t out_h,
                  int64_t out_w, const PoolWindow& w) {
  for (int64_t oy = 0; oy < out_h; ++oy) {
    int64_t h_start = oy * w.stride_h - w.pad_h;
    const int64_t h_end = std::min(h_start + (w.kernel_h - 1) * w.dilation_h + 1, in_h);
    while (h_start < 0) {
      h_start += w.dilation_h;
    }
    for (int64_t ox = 0; ox < out_w; ++ox) {
      int64_t w_start = ox * w.stride_w - w.pad_w;
      const int64_t w_end = std::min(w_start + (w.kernel_w - 1) * w.dilation_w + 1, in_w);
      while (w_start < 0) {
        w_start += w.dilation_w;
      }
      // Branch-free: on real data "v > max" is a coin toss, and mispredicting it cost more
      // than the rest of the loop (perf, SmallCNN).
      float max = -std::numeric_limits<float>::infinity();
      bool nan = false;
      for (int64_t y = h_start; y < h_end; y += w.dilation_h) {
        const float* row = in + y * in_w;
        for (int64_t x = w_start; x < w_end; x += w.dilation_w) {
          const float v = row[x];
          max = std::max(max, v);
          nan |= std::isnan(v);
        }
      }
      out[oy * out_w + ox] = nan ? std::numeric_limits<float>::quiet_NaN() : max;
    }
  }
}

// Contiguous float32 NCHW / CHW input: plain loops over the planes. ATen's max_pool2d is
// max_pool2d_with_indices, which also computes and writes an index per output: 11 us of the
// small CNN's 41 us. False when the input is anything else.
bool maxPool2dContiguousFloat(ProcessedNode& p, const at::Tensor& self) {
  if (self.scalar_type() != at::kFloat || (self.dim() != 3 && self.dim() != 4) ||
      !self.is_contiguous()) {
    return false;
  }
  const std::optional<PoolWindow> window = poolWindow(p);
  if (!window) {
    return false;
  }
  const PoolWindow& w = *window;
  const int64_t in_h = self.size(-2);
  const int64_t in_w = self.size(-1);
  const int64_t channels = self.size(-3);
  const int64_t out_h = at::native::pooling_output_shape<int64_t>(
      in_h, w.kernel_h, w.pad_h, w.stride_h, w.dilation_h, w.ceil_mode);
  const int64_t out_w = at::native::pooling_output_shape<int64_t>(
      in_w, w.kernel_w, w.pad_w, w.stride_w, w.dilation_w, w.ceil_mode);
  // ATen's own argument checks and messages (padding at most half the kernel, output not empty).
  at::native::pool2d_shape_check(self, w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.pad_h,
                                 w.pad_w, w.dilation_h, w.dilation_w, channels, in_h, in_w, out_h,
                                 out_w, at::MemoryFormat::Contiguous);
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, shape);
  const int64_t planes = self.numel() / std::max<int64_t>(1, in_h * in_w);
  const float* in = self.data_ptr<float>();
  float* o = out.data_ptr<float>();
  // Planes split over the intra-op threads as in ATen, at least ~16k window reads per task.
  const int64_t reads_per_plane = std::max<int64_t>(1, out_h * out_w * w.kernel_h * w.kernel_w);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / reads_per_plane);
  splitIfWorthIt(p.workers(), planes, grain,
                 static_cast<double>(planes * reads_per_plane) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   const bool two_by_two = isPlainTwoByTwo(w, in_h, in_w, out_h, out_w);
                   for (int64_t plane = begin; plane < end; ++plane) {
                     const float* plane_in = in + plane * in_h * in_w;
                     float* plane_out = o + plane * out_h * out_w;
                     if (two_by_two) {
                       maxPoolPlaneTwoByTwo(plane_in, in_w, plane_out, out_h, out_w);
                     } else {
                       maxPoolPlane(plane_in, in_h, in_w, plane_out, out_h, out_w, w);
                     }
                   }
                 });
  return true;
}

// body(n, oy_begin, oy_end) over the flat output rows [begin, end) of images of `out_h` rows, in
// bands of one image's rows each (which share their windows' input rows).
template <typename Body>
void forEachImageBand(int64_t begin, int64_t end, int64_t out_h, const Body& body) {
  for (int64_t row = begin; row < end;) {
    const int64_t n = row / out_h;
    const int64_t oy = row % out_h;
    const int64_t band_end = std::min(end - row, out_h - oy) + oy;
    body(n, oy, band_end);
    row += band_end - oy;
  }
}

// Max pooling of `images` channels-last float32 images [H, W, channels] at `in` into `out`
// [out_h, out_w, channels] each: each output pixel is the max of its window's pixels, whole rows
// of channels at a time, so the inner loop runs over contiguous channels (ops/conv/pool_loops.h,
// on the widest vectors the CPU has). Output rows split over the threads, each thread's in bands
// of one image's rows (which share their windows' input rows).
void maxPoolChannelsLastImages(ProcessedNode& p, const float* in, int64_t images, int64_t channels,
                               int64_t in_h, int64_t in_w, const PoolWindow& w, int64_t out_h,
                               int64_t out_w, float* out) {
  const int64_t rows = images * out_h;
  const int64_t reads_per_row = std::max<int64_t>(1, out_w * w.kernel_h * w.kernel_w * channels);
  splitIfWorthIt(p.workers(), rows, std::max<int64_t>(1, (int64_t{1} << 14) / reads_per_row),
                 static_cast<double>(rows * reads_per_row) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   const pooling::WindowAxis height{w.kernel_h, w.stride_h, w.pad_h, w.dilation_h};
                   const pooling::WindowAxis width{w.kernel_w, w.stride_w, w.pad_w, w.dilation_w};
                   forEachImageBand(begin, end, out_h, [&](int64_t n, int64_t oy, int64_t oy_end) {
                     pooling::maxPoolChannelsLastRows(in + n * in_h * in_w * channels, in_h, in_w,
                                                      channels, height, width, out_w, oy, oy_end,
                                                      out + (n * out_h + oy) * out_w * channels);
                   });
                 });
}

// Channels-last float32 [N, C, H, W] (what passes/channels_last.cpp keeps between a network's
// convolutions). False when the input is anything else.
bool maxPool2dChannelsLastFloat(ProcessedNode& p, const at::Tensor& self) {
  if (self.scalar_type() != at::kFloat || self.dim() != 4 ||
      !self.is_contiguous(at::MemoryFormat::ChannelsLast) || self.is_contiguous()) {
    return false;
  }
  const std::optional<PoolWindow> window = poolWindow(p);
  if (!window) {
    return false;
  }
  const PoolWindow& w = *window;
  const int64_t batch = self.size(0);
  const int64_t channels = self.size(1);
  const int64_t in_h = self.size(2);
  const int64_t in_w = self.size(3);
  const int64_t out_h = at::native::pooling_output_shape<int64_t>(
      in_h, w.kernel_h, w.pad_h, w.stride_h, w.dilation_h, w.ceil_mode);
  const int64_t out_w = at::native::pooling_output_shape<int64_t>(
      in_w, w.kernel_w, w.pad_w, w.stride_w, w.dilation_w, w.ceil_mode);
  at::native::pool2d_shape_check(self, w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.pad_h,
                                 w.pad_w, w.dilation_h, w.dilation_w, channels, in_h, in_w, out_h,
                                 out_w, at::MemoryFormat::ChannelsLast);
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, {batch, channels, out_h, out_w}, at::MemoryFormat::ChannelsLast);
  maxPoolChannelsLastImages(p, self.data_ptr<float>(), batch, channels, in_h, in_w, w, out_h, out_w,
                            out.data_ptr<float>());
  return true;
}

// Anything else is max_pool2d_with_indices with the indices dropped, as in ATen. The indices are
// kernel scratch: their shape is the output's, computed here with ATen's formula. (Were it off,
// the out call could not grow the scratch-backed tensor and would throw; invalid arguments are
// rejected by ATen's own checks first.)
void maxPool2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  if (maxPool2dContiguousFloat(p, self) || maxPool2dChannelsLastFloat(p, self)) {
    return;
  }
  const at::DimVector kernel = p.input(1).toDimVector();
  const at::DimVector stride = p.input(2).toDimVector();
  const at::DimVector padding = p.input(3).toDimVector();
  const at::DimVector dilation = p.input(4).toDimVector();
  const bool ceil_mode = p.input(5).toBool();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  const std::optional<PoolWindow> window =
      self.dim() == 3 || self.dim() == 4 ? poolWindow(p) : std::nullopt;
  if (window) {
    for (size_t i = 0; i < 2; ++i) {
      int64_t& extent = shape[shape.size() - 2 + i];
      extent = at::native::pooling_output_shape<int64_t>(
          extent, i == 0 ? window->kernel_h : window->kernel_w,
          i == 0 ? window->pad_h : window->pad_w, i == 0 ? window->stride_h : window->stride_w,
          i == 0 ? window->dilation_h : window->dilation_w, ceil_mode);
    }
  }
  const int64_t numel = c10::multiply_integers(shape);
  at::Tensor indices =
      at::from_blob(p.scratch(std::max<int64_t>(numel, 1) * sizeof(int64_t)), shape, at::kLong);
  at::cpu::max_pool2d_with_indices_outf(self, kernel, stride, padding, dilation, ceil_mode, out,
                                        indices);
}

// Global average pooling (output 1x1) of contiguous float32 NCHW / CHW with non-empty planes: one
// mean per plane. ATen's general kernel took 2.6 us for SmallCNN's 16 planes of 14x14.
bool globalAvgPoolContiguousFloat(ProcessedNode& p, const at::Tensor& self,
                                  const at::DimVector& output_size) {
  const bool global = output_size.size() == 2 && output_size[0] == 1 && output_size[1] == 1;
  if (!global || self.scalar_type() != at::kFloat || (self.dim() != 3 && self.dim() != 4) ||
      !self.is_contiguous() || self.size(-1) == 0 || self.size(-2) == 0) {
    return false;
  }
  at::DimVector shape(self.sizes().begin(), self.sizes().end());
  shape[shape.size() - 2] = 1;
  shape[shape.size() - 1] = 1;
  at::Tensor& out = contiguousOutput(p, 0, shape, self.options());
  const int64_t plane = self.size(-2) * self.size(-1);
  const int64_t planes = self.numel() / plane;
  const float* in = self.data_ptr<float>();
  float* o = floatData(out);
  for (int64_t i = 0; i < planes; ++i) {
    const float* x = in + i * plane;
    // In double, as ATen accumulates float; four partial sums, so the adds do not wait on each
    // other (one chain took 2.3 us for SmallCNN's 16 planes of 196).
    double sums[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t j = 0;
    for (; j + 4 <= plane; j += 4) {
      for (int lane = 0; lane < 4; ++lane) {
        sums[lane] += x[j + lane];
      }
    }
    for (; j < plane; ++j) {
      sums[0] += x[j];
    }
    const double sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    o[i] = static_cast<float>(sum / static_cast<double>(plane));
  }
  return true;
}

// Global average pooling of channels-last float32 [N, C, H, W] (a squeeze-excitation block's
// input, a classifier's): per image, the pixels' channel rows summed in pixel order in float (as
// ATen's channels-last adaptive kernel sums), in a loop the compiler vectorizes across channels,
// the sums in scratch, then divided by their count. ATen computes the global case as a mean over
// H and W (a cascade sum): within rounding of it, and 0.52 -> 0.41 ms over efficientnet_b0's 17
// (summing in double, unvectorized at this file's baseline instruction set, took 0.66).
bool globalAvgPoolChannelsLastFloat(ProcessedNode& p, const at::Tensor& self,
                                    const at::DimVector& output_size) {
  const bool global = output_size.size() == 2 && output_size[0] == 1 && output_size[1] == 1;
  if (!global || self.scalar_type() != at::kFloat || self.dim() != 4 ||
      !self.is_contiguous(at::MemoryFormat::ChannelsLast) || self.is_contiguous() ||
      self.size(2) == 0 || self.size(3) == 0) {
    return false;
  }
  const int64_t batch = self.size(0);
  const int64_t channels = self.size(1);
  const int64_t pixels = self.size(2) * self.size(3);
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, {batch, channels, 1, 1}, at::MemoryFormat::ChannelsLast);
  const float* in = self.data_ptr<float>();
  float* o = floatData(out);
  WorkerPool* workers = p.workers();
  const int threads =
      threadsFor(workers, static_cast<double>(batch * pixels * channels) * kNanosecondsPerElement);
  // A batch of at least as many images as threads: images over the threads, in one parallel
  // region, each reading the images a convolution split alike left in its core's cache (a region
  // per image, each image's pixels split, took the small CNN's pool at batch 8 and 2 threads
  // 14.3 us, 1.7x its one-thread time).
  if (batch >= threads) {
    forEachPart(workers, batch, threads, [&](int64_t, int64_t first, int64_t last) {
      for (int64_t n = first; n < last; ++n) {
        float* means = o + n * channels;
        std::fill_n(means, channels, 0.f);
        vec::sumRows(in + n * pixels * channels, pixels, channels, means);
        for (int64_t c = 0; c < channels; ++c) {
          means[c] /= static_cast<float>(pixels); // as the split below divides
        }
      }
    });
    return true;
  }
  // Fewer: each thread sums a range of an image's pixels: after a convolution split over the
  // threads, each one's part of the image is in its own core's cache.
  const int64_t parts = std::min<int64_t>(pixels, threads);
  float* sums =
      static_cast<float*>(p.scratch(static_cast<size_t>(parts * channels) * sizeof(float)));
  for (int64_t n = 0; n < batch; ++n) {
    const float* image = in + n * pixels * channels;
    std::fill_n(sums, parts * channels, 0.f);
    forEachPart(workers, pixels, parts, [&](int64_t part, int64_t first, int64_t last) {
      vec::sumRows(image + first * channels, last - first, channels, sums + part * channels);
    });
    for (int64_t c = 0; c < channels; ++c) {
      float total = sums[c];
      for (int64_t part = 1; part < parts; ++part) {
        total += sums[part * channels + c];
      }
      o[n * channels + c] = total / static_cast<float>(pixels);
    }
  }
  return true;
}

void adaptiveAvgPool2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector output_size = p.input(1).toDimVector();
  if (globalAvgPoolContiguousFloat(p, self, output_size) ||
      globalAvgPoolChannelsLastFloat(p, self, output_size)) {
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::cpu::adaptive_avg_pool2d_outf(self, output_size, out);
}

// avg_pool2d of channels-last float32 [N, C, H, W] (DenseNet's transitions, Inception's pooling
// branches between channels-last convolutions) on the ring loop (ops/conv/pool_loops.h), output
// rows split over the threads in bands of one image's rows. False for anything else, and for
// arguments ATen rejects, which its kernel then reports.
bool avgPool2dChannelsLastFloat(ProcessedNode& p, const at::Tensor& self) {
  if (self.scalar_type() != at::kFloat || self.dim() != 4 ||
      !self.is_contiguous(at::MemoryFormat::ChannelsLast) || self.is_contiguous()) {
    return false;
  }
  const at::DimVector kernel = p.input(1).toDimVector();
  const at::DimVector stride = p.input(2).toDimVector();
  const at::DimVector padding = p.input(3).toDimVector();
  const bool ceil_mode = p.input(4).toBool();
  const c10::optional<int64_t> divisor_override = p.input(6).toOptional<int64_t>();
  if (kernel.empty() || kernel.size() > 2 || stride.size() > 2 || padding.empty() ||
      padding.size() > 2 || (divisor_override && *divisor_override == 0)) {
    return false;
  }
  const int64_t kernel_h = pair(kernel, 0, 0);
  const int64_t kernel_w = pair(kernel, 1, 0);
  const int64_t stride_h = pair(stride, 0, kernel_h);
  const int64_t stride_w = pair(stride, 1, kernel_w);
  const int64_t pad_h = pair(padding, 0, 0);
  const int64_t pad_w = pair(padding, 1, 0);
  const int64_t channels = self.size(1);
  const pooling::WindowAxis height{kernel_h, stride_h, pad_h, 1};
  const pooling::WindowAxis width{kernel_w, stride_w, pad_w, 1};
  if (kernel_h <= 0 || kernel_w <= 0 || stride_h <= 0 || stride_w <= 0 ||
      !pooling::ringHolds(height, channels)) {
    return false;
  }
  const int64_t batch = self.size(0);
  const int64_t in_h = self.size(2);
  const int64_t in_w = self.size(3);
  const int64_t out_h =
      at::native::pooling_output_shape<int64_t>(in_h, kernel_h, pad_h, stride_h, 1, ceil_mode);
  const int64_t out_w =
      at::native::pooling_output_shape<int64_t>(in_w, kernel_w, pad_w, stride_w, 1, ceil_mode);
  at::native::pool2d_shape_check(self, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, 1, 1,
                                 channels, in_h, in_w, out_h, out_w,
                                 at::MemoryFormat::ChannelsLast);
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, {batch, channels, out_h, out_w}, at::MemoryFormat::ChannelsLast);
  const pooling::AverageDivisor divisor{p.input(5).toBool(), divisor_override.value_or(0)};
  const float* in = self.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const int64_t rows = batch * out_h;
  const int64_t reads_per_row = std::max<int64_t>(1, in_w * kernel_h * channels);
  splitIfWorthIt(p.workers(), rows, std::max<int64_t>(1, (int64_t{1} << 14) / reads_per_row),
                 static_cast<double>(rows * reads_per_row) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   forEachImageBand(begin, end, out_h, [&](int64_t n, int64_t oy, int64_t oy_end) {
                     pooling::avgPoolChannelsLastRows(
                         in + n * in_h * in_w * channels, in_h, in_w, channels, height, width,
                         divisor, out_w, oy, oy_end, o + (n * out_h + oy) * out_w * channels);
                   });
                 });
  return true;
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
// channels last on our loop, anything else ATen's kernel into the reused output.
void avgPool2d(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  if (avgPool2dChannelsLastFloat(p, self)) {
    return;
  }
  at::cpu::avg_pool2d_outf(self, p.input(1).toDimVector(), p.input(2).toDimVector(),
                           p.input(3).toDimVector(), p.input(4).toBool(), p.input(5).toBool(),
                           p.input(6).toOptional<int64_t>(), outputTensorLike(p, 0, self));
}

const char* const kBlockedMaxPool2dSchema =
    "srt::blocked_max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], "
    "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor";

// max_pool2d of a channel-blocked tensor (ops/conv/blocked_layout.h), as ATen computes it on the
// [N, C, H, W] tensor the blocked one stands for (its padding lanes pooled like channels): what
// the JIT runs.
at::Tensor blockedMaxPoolReference(const at::Tensor& x, at::IntArrayRef kernel,
                                   at::IntArrayRef stride, at::IntArrayRef padding,
                                   at::IntArrayRef dilation, bool ceil_mode) {
  TORCH_CHECK(x.dim() == 5,
              "srt::blocked_max_pool2d: expected a channel-blocked [N, C / 16, H, "
              "W, 16] tensor, got sizes ",
              x.sizes());
  const int64_t batch = x.size(0);
  const int64_t blocks = x.size(1);
  const int64_t lanes = x.size(4);
  const at::Tensor plain =
      x.permute({0, 1, 4, 2, 3}).reshape({batch, blocks * lanes, x.size(2), x.size(3)});
  const at::Tensor pooled = at::max_pool2d(plain, kernel, stride, padding, dilation, ceil_mode);
  return pooled.reshape({batch, blocks, lanes, pooled.size(2), pooled.size(3)})
      .permute({0, 1, 3, 4, 2})
      .contiguous();
}

// A blocked tensor's planes of 16 lanes are channels-last images of 16 channels: pooled as those.
// Windows ATen would reject (padding past half the kernel, no output) take the reference, which
// reports them.
void blockedMaxPool2d(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const std::optional<PoolWindow> window = poolWindow(p);
  const bool blocked = x.scalar_type() == at::kFloat && x.dim() == 5 && x.is_contiguous() &&
                       x.size(4) == kChannelBlock;
  int64_t out_h = 0;
  int64_t out_w = 0;
  if (window && blocked) {
    const PoolWindow& w = *window;
    out_h = at::native::pooling_output_shape<int64_t>(x.size(2), w.kernel_h, w.pad_h, w.stride_h,
                                                      w.dilation_h, w.ceil_mode);
    out_w = at::native::pooling_output_shape<int64_t>(x.size(3), w.kernel_w, w.pad_w, w.stride_w,
                                                      w.dilation_w, w.ceil_mode);
  }
  if (!window || !blocked || out_h < 1 || out_w < 1 || window->pad_h > window->kernel_h / 2 ||
      window->pad_w > window->kernel_w / 2) {
    copyIntoOutput(p, blockedMaxPoolReference(x, p.input(1).toDimVector(), p.input(2).toDimVector(),
                                              p.input(3).toDimVector(), p.input(4).toDimVector(),
                                              p.input(5).toBool()));
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, x);
  at::native::resize_(out, {x.size(0), x.size(1), out_h, out_w, kChannelBlock});
  maxPoolChannelsLastImages(p, x.data_ptr<float>(), x.size(0) * x.size(1), kChannelBlock, x.size(2),
                            x.size(3), *window, out_h, out_w, out.data_ptr<float>());
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kBlockedMaxPool2dSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        blockedMaxPoolReference);
}

SRT_REGISTER_KERNEL("srt::blocked_max_pool2d", kOutVariant,
                    whenMatches(kBlockedMaxPool2dSchema, blockedMaxPool2d));
SRT_REGISTER_KERNEL(
    "aten::avg_pool2d", kOutVariant,
    whenMatches("aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
                "padding=0, bool ceil_mode=False, bool count_include_pad=True, int? "
                "divisor_override=None) -> Tensor",
                avgPool2d));
SRT_REGISTER_KERNEL(
    "aten::max_pool2d", kOutVariant,
    whenMatches("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], "
                "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                maxPool2d));
SRT_REGISTER_KERNEL(
    "aten::adaptive_avg_pool2d", kOutVariant,
    whenMatches("aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
                adaptiveAvgPool2d));

} // namespace srt::ops
