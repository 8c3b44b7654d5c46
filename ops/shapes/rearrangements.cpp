// roll, repeat_interleave (by an int), tile, channel_shuffle and pixel_shuffle / pixel_unshuffle
// as out-variant kernels: each is a few strided copies of the input into the node's output, where
// ATen's ops cat, index_select or repeat into a new tensor (or, for the pixel shuffles, walk a
// channels-last image a float at a time).
#include <ATen/Functions.h>
#include <ATen/WrapDimUtils.h>

#include <cstring>
#include <vector>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/shapes/transpose_copy.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// roll(Tensor self, int[1] shifts, int[1] dims=[]): per rolled dimension the input's tail
// [size - shift, size) lands at the front and its head after it, so 2^k block copies for k
// dimensions (Swin's shifted windows roll two).
void roll(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector shifts = p.input(1).toDimVector();
  const at::DimVector dims = p.input(2).toDimVector();
  if (dims.empty() || shifts.size() != dims.size() || self.dim() == 0) {
    // Rolling the flattened tensor, and the errors ATen reports.
    p.output(0) = at::roll(self, shifts, dims);
    return;
  }
  // Each dimension's total shift as the start of the piece that moves to the front.
  at::DimVector starts(self.dim(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t dim = at::maybe_wrap_dim(dims[i], self.dim());
    const int64_t size = self.size(dim);
    if (size > 0) {
      starts[dim] = ((starts[dim] - shifts[i]) % size + size) % size;
    }
  }
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, self.sizes(), self.suggest_memory_format());
  if (self.numel() == 0) {
    return;
  }
  at::DimVector rolled;
  for (int64_t dim = 0; dim < self.dim(); ++dim) {
    if (starts[dim] != 0) {
      rolled.push_back(dim);
    }
  }
  if (rolled.empty()) {
    out.copy_(self);
    return;
  }
  for (uint64_t block = 0; block < (uint64_t{1} << rolled.size()); ++block) {
    at::Tensor source = self;
    at::Tensor target = out;
    for (size_t i = 0; i < rolled.size(); ++i) {
      const int64_t dim = rolled[i];
      const int64_t size = self.size(dim);
      const int64_t start = starts[dim];
      if ((block >> i) & 1) { // the head [0, start) goes behind
        source = source.narrow(dim, 0, start);
        target = target.narrow(dim, size - start, start);
      } else { // the tail [start, size) comes first
        source = source.narrow(dim, start, size - start);
        target = target.narrow(dim, 0, size - start);
      }
    }
    target.copy_(source);
  }
}

// repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, int? output_size=None):
// the output seen with one more dimension of size `repeats` after `dim` is the input expanded
// along it. Without a dim the input is flattened: every element repeated in turn.
void repeatInterleave(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const int64_t repeats = p.input(1).toInt();
  TORCH_CHECK(repeats >= 0, "repeats can not be negative");
  const c10::optional<int64_t> dim_arg = p.input(2).toOptional<int64_t>();
  const int64_t rank = std::max<int64_t>(self.dim(), 1);
  const int64_t dim = dim_arg ? at::maybe_wrap_dim(*dim_arg, rank) : rank - 1;
  at::DimVector in_sizes(self.sizes().begin(), self.sizes().end());
  if (in_sizes.empty()) {
    in_sizes.push_back(1);
  }
  at::DimVector expanded(in_sizes);
  expanded.insert(expanded.begin() + dim + 1, repeats);
  at::DimVector out_sizes;
  if (dim_arg) {
    out_sizes = in_sizes;
    out_sizes[dim] *= repeats;
  } else {
    out_sizes = {self.numel() * repeats};
  }
  at::Tensor& out = contiguousOutput(p, 0, out_sizes, self.options());
  if (out.numel() == 0) {
    return;
  }
  out.view(expanded).copy_(self.view(in_sizes).unsqueeze(dim + 1).expand(expanded));
}

// tile(Tensor self, int[] dims) is repeat with `dims` padded by leading ones to self's rank (and
// self by leading ones to theirs): the output seen as [r0, s0, r1, s1, ...] is self, seen as
// [1, s0, 1, s1, ...], expanded.
void tile(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::DimVector reps = p.input(1).toDimVector();
  const int64_t rank = std::max<int64_t>(self.dim(), reps.size());
  reps.insert(reps.begin(), rank - reps.size(), 1);
  at::DimVector in_sizes(rank - self.dim(), 1);
  in_sizes.append(self.sizes().begin(), self.sizes().end());
  at::DimVector interleaved;
  at::DimVector spread;
  at::DimVector out_sizes;
  for (int64_t i = 0; i < rank; ++i) {
    interleaved.append({reps[i], in_sizes[i]});
    spread.append({1, in_sizes[i]});
    out_sizes.push_back(reps[i] * in_sizes[i]);
  }
  for (const int64_t repeat : reps) {
    TORCH_CHECK(repeat >= 0, "Trying to create tensor with negative dimension ", repeat, ": ",
                at::IntArrayRef(out_sizes));
  }
  at::Tensor& out = contiguousOutput(p, 0, out_sizes, self.options());
  if (out.numel() == 0) {
    return;
  }
  out.view(interleaved).copy_(self.reshape(spread).expand(interleaved));
}

// channel_shuffle(Tensor self, int groups) (ShuffleNet's, passes/channel_shuffle_fusion.cpp):
// output channel j * groups + i is input channel i * (C / groups) + j, written contiguous (NCHW)
// whatever the input's layout: ShuffleNet splits the result into its two channel halves, whole
// planes of an NCHW tensor but strided slices of a channels-last one, which its next convolution
// would have to gather first (passes/channels_last.cpp does not count the op as keeping the
// layout; ATen's kernel writes a channels-last result for a channels-last input, with the same
// values). Contiguous input: whole planes copied; float32 channels innermost (channels last): per
// image and group, the group's channels transposed into their planes; anything else, and the
// errors (fewer than 3 dims, channels that do not divide), ATen's op.
void channelShuffle(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const int64_t groups = p.input(1).toInt();
  const int64_t channels = self.dim() >= 3 ? self.size(1) : 0;
  const bool divides = groups > 0 && channels > 0 && channels % groups == 0;
  const bool contiguous = self.is_contiguous() && !self.is_neg() && !self.is_conj();
  const bool channels_innermost =
      divides && self.numel() > 0 && isDenseFloat(self) &&
      isChannelsInnermost(self, channels, self.numel() / (self.size(0) * channels));
  if (!divides || self.numel() == 0 || !(contiguous || channels_innermost)) {
    copyIntoOutput(p, at::channel_shuffle(self, groups));
    return;
  }
  const int64_t batch = self.size(0);
  const int64_t per_group = channels / groups;
  const int64_t pixels = self.numel() / (batch * channels);
  at::Tensor& out = contiguousOutput(p, 0, self.sizes(), self.options());
  const double cost = static_cast<double>(self.numel()) * kNanosecondsPerElement;
  if (contiguous) {
    const size_t plane = static_cast<size_t>(pixels) * self.element_size();
    const char* in = static_cast<const char*>(self.data_ptr());
    char* o = static_cast<char*>(out.data_ptr());
    splitIfWorthIt(p.workers(), batch * channels, 1, cost, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t n = k / channels;
        const int64_t c = k % channels; // output channel j * groups + i
        const int64_t source = (c % groups) * per_group + c / groups;
        std::memcpy(o + k * plane, in + (n * channels + source) * plane, plane);
      }
    });
    return;
  }
  // Image n's group i: its [pixels, per_group] columns of the input become the planes
  // i, groups + i, 2 * groups + i, ... of the output.
  const float* in = floatData(self);
  float* o = floatData(out);
  splitIfWorthIt(p.workers(), batch * groups, 1, cost, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t n = k / groups;
      const int64_t i = k % groups;
      transposeMatrix(in + n * pixels * channels + i * per_group, channels,
                      o + (n * channels + i) * pixels, groups * pixels, pixels, per_group);
    }
  });
}

// The two layouts of one image's pixels rearranged by a pixel shuffle of factor r: the "depth"
// tensor [C * r * r, H, W] and the "space" tensor [C, H * r, W * r], where depth channel
// (c * r + i) * r + j at (h, w) is space channel c at (h * r + i, w * r + j).
struct PixelShuffleShape {
  int64_t images = 0;
  int64_t channels = 0; // C, the space tensor's
  int64_t height = 0;   // H, the depth tensor's
  int64_t width = 0;    // W
  int64_t factor = 0;   // r
};

// Copies between a float32 depth and space tensor of `shape`, both contiguous (NCHW) or both
// channels last, depth -> space for a shuffle (kToSpace) and space -> depth for an unshuffle:
// per image row h of the depth tensor, the r rows h * r + i of the space tensor.
// count floats between a depth and a space tensor, each `stride` floats apart on its side:
// depth -> space for a shuffle (kToSpace), space -> depth for an unshuffle.
template <bool kToSpace>
inline void moveFloats(const float* from_depth, float* to_depth, int64_t depth_stride,
                       const float* from_space, float* to_space, int64_t space_stride,
                       int64_t count) {
  for (int64_t k = 0; k < count; ++k) {
    if constexpr (kToSpace) {
      to_space[k * space_stride] = from_depth[k * depth_stride];
    } else {
      to_depth[k * depth_stride] = from_space[k * space_stride];
    }
  }
}

// Copies between a float32 depth and space tensor of `shape`, both contiguous (NCHW) or both
// channels last, depth -> space for a shuffle (kToSpace) and space -> depth for an unshuffle:
// per image row h of the depth tensor, the r rows h * r + i of the space tensor, each walked in
// the space tensor's order.
template <bool kToSpace>
void copyPixelShuffle(const PixelShuffleShape& shape, bool channels_last, const float* from,
                      float* to, WorkerPool* workers) {
  const int64_t r = shape.factor;
  const int64_t c_space = shape.channels;
  const int64_t c_depth = c_space * r * r;
  const int64_t h_depth = shape.height;
  const int64_t w_depth = shape.width;
  const int64_t w_space = w_depth * r;
  const int64_t h_space = h_depth * r;
  const float* depth_in = kToSpace ? from : nullptr;
  float* depth_out = kToSpace ? nullptr : to;
  const float* space_in = kToSpace ? nullptr : from;
  float* space_out = kToSpace ? to : nullptr;
  const auto move = [&](int64_t depth, int64_t depth_stride, int64_t space, int64_t space_stride,
                        int64_t count) {
    moveFloats<kToSpace>(depth_in + (kToSpace ? depth : 0), depth_out + (kToSpace ? 0 : depth),
                         depth_stride, space_in + (kToSpace ? 0 : space),
                         space_out + (kToSpace ? space : 0), space_stride, count);
  };
  const double cost =
      static_cast<double>(shape.images * c_depth * h_depth * w_depth) * kNanosecondsPerElement;
  splitIfWorthIt(workers, shape.images * h_depth, 1, cost, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / h_depth;
      const int64_t h = row % h_depth;
      for (int64_t i = 0; i < r; ++i) {
        const int64_t y = h * r + i;
        if (channels_last) {
          // Depth pixel (h, w) holds [C][r][r]; space pixel (y, w * r + j) holds [C].
          const int64_t depth_row = (n * h_depth + h) * w_depth * c_depth + i * r;
          const int64_t space_row = (n * h_space + y) * w_space * c_space;
          for (int64_t w = 0; w < w_depth; ++w) {
            const int64_t depth = depth_row + w * c_depth;
            const int64_t space = space_row + w * r * c_space;
            if (c_space == 1) { // the r pixels' values lie side by side on both sides
              move(depth, 1, space, 1, r);
              continue;
            }
            for (int64_t j = 0; j < r; ++j) {
              move(depth + j, r * r, space + j * c_space, 1, c_space);
            }
          }
          continue;
        }
        // Space row y of channel c interleaves depth planes (c * r + i) * r + j, j < r.
        for (int64_t c = 0; c < c_space; ++c) {
          const int64_t space = ((n * c_space + c) * h_space + y) * w_space;
          const int64_t depth = ((n * c_depth + (c * r + i) * r) * h_depth + h) * w_depth;
          const int64_t plane = h_depth * w_depth;
          for (int64_t w = 0; w < w_depth; ++w) {
            move(depth + w, plane, space + w * r, 1, r);
          }
        }
      }
    }
  });
}

// pixel_shuffle(Tensor self, int upscale_factor) and pixel_unshuffle(Tensor self, int
// downscale_factor) (super-resolution networks' upsamplers, Real-ESRGAN's input), each image's
// channels moved into r x r blocks of pixels or back, the result laid out as the input (ATen's
// CPU kernel's contiguous or channels-last output). Dense float32 images of 4 dims, contiguous or
// channels last, run here: ATen's channels-last kernel walks the image an element at a time
// (ESPCN's [1, 9, 128, 128] -> [1, 1, 384, 384] 208 us); anything else, and the errors (a factor
// that does not divide, too few dims), ATen's op.
template <bool kToSpace> void pixelShuffle(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const int64_t r = p.input(1).toInt();
  const auto reference = [&]() {
    return kToSpace ? at::pixel_shuffle(self, r) : at::pixel_unshuffle(self, r);
  };
  const bool channels_last = self.dim() == 4 && self.is_contiguous(at::MemoryFormat::ChannelsLast);
  const bool takes =
      self.dim() == 4 && r > 0 && self.numel() > 0 && self.scalar_type() == at::kFloat &&
      !self.is_neg() && (self.is_contiguous() || channels_last) &&
      (kToSpace ? self.size(1) % (r * r) == 0 : self.size(2) % r == 0 && self.size(3) % r == 0);
  if (!takes) {
    copyIntoOutput(p, reference());
    return;
  }
  PixelShuffleShape shape;
  shape.images = self.size(0);
  shape.factor = r;
  shape.channels = kToSpace ? self.size(1) / (r * r) : self.size(1);
  shape.height = kToSpace ? self.size(2) : self.size(2) / r;
  shape.width = kToSpace ? self.size(3) : self.size(3) / r;
  const std::vector<int64_t> sizes =
      kToSpace
          ? std::vector<int64_t>{shape.images, shape.channels, shape.height * r, shape.width * r}
          : std::vector<int64_t>{shape.images, shape.channels * r * r, shape.height, shape.width};
  // A tensor contiguous both ways (one channel, or one pixel) is read and written contiguous.
  const bool out_channels_last = channels_last && !self.is_contiguous();
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, sizes,
                      out_channels_last ? at::MemoryFormat::ChannelsLast
                                        : at::MemoryFormat::Contiguous);
  copyPixelShuffle<kToSpace>(shape, out_channels_last, floatData(self), floatData(out),
                             p.workers());
}

} // namespace

SRT_REGISTER_KERNEL("aten::pixel_shuffle", kOutVariant, tensorOverload<pixelShuffle<true>>);
SRT_REGISTER_KERNEL("aten::pixel_unshuffle", kOutVariant, tensorOverload<pixelShuffle<false>>);
SRT_REGISTER_KERNEL("aten::channel_shuffle", kOutVariant, tensorOverload<channelShuffle>);
SRT_REGISTER_KERNEL("aten::tile", kOutVariant, tensorOverload<tile>);
SRT_REGISTER_KERNEL("aten::roll", kOutVariant, tensorOverload<roll>);
// repeat_interleave.Tensor / self_Tensor (per-element counts) are declined.
SRT_REGISTER_KERNEL("aten::repeat_interleave", kOutVariant,
                    [](const Node* node, const KernelOptions&) {
                      return kernelForOverload(node, {{"self_int", repeatInterleave}});
                    });

} // namespace srt::ops
