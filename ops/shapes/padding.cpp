// pad (every mode) and constant_pad_nd as out-variant kernels. Constant padding fills the border of
// the node's output and copies the input into its interior (negative pads crop); reflect and
// replicate of the last one or two dims of a contiguous or channels-last float32 tensor copy
// rows (or pixels) from their mirrored or clamped sources, the input's layout kept; other
// reflect and replicate pads run ATen's CPU kernels (at::cpu::{reflection,replication}_pad{1,2,3}
// d_out) into the output. Circular padding, and what ATen refuses, run ATen's operator (which
// reports the error).
#include <cstring>

#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>

#include "ops/core/parallelism.h"
#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// `self` padded by `pad` (pairs from the last dimension backwards) with `value`.
void constantPad(ProcessedNode& p, const at::Tensor& self, at::IntArrayRef pad,
                 const c10::Scalar& value) {
  TORCH_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  const int64_t dims = static_cast<int64_t>(pad.size() / 2);
  TORCH_CHECK(dims <= self.dim(),
              "Length of pad should be no more than twice the number of "
              "dimensions of the input. Pad length is ",
              pad.size(), " while the input has ", self.dim(), " dimensions.");
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  bool fills = false;
  for (int64_t i = 0; i < dims; ++i) {
    const int64_t dim = self.dim() - 1 - i;
    sizes[dim] += pad[2 * i] + pad[2 * i + 1];
    TORCH_CHECK(sizes[dim] >= 0, "The input size ", self.size(dim), ", plus negative padding ",
                pad[2 * i], " and ", pad[2 * i + 1],
                " resulted in a negative output size, which "
                "is invalid. Check dimension ",
                dim, " of your input.");
    fills = fills || pad[2 * i] > 0 || pad[2 * i + 1] > 0;
  }
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(out, sizes, self.suggest_memory_format());
  if (out.numel() == 0) {
    return;
  }
  if (fills) {
    // Only the border: the interior is overwritten below (a dilated convolution's input padded by
    // a few columns: filling all of it doubled the node's memory traffic).
    at::Tensor interior = out;
    for (int64_t i = 0; i < dims; ++i) {
      const int64_t dim = self.dim() - 1 - i;
      const int64_t left = std::max<int64_t>(pad[2 * i], 0);
      const int64_t right = std::max<int64_t>(pad[2 * i + 1], 0);
      const int64_t size = interior.size(dim);
      if (left + right >= size) {
        interior.fill_(value);
        break;
      }
      if (left > 0) {
        interior.narrow(dim, 0, left).fill_(value);
      }
      if (right > 0) {
        interior.narrow(dim, size - right, right).fill_(value);
      }
      interior = interior.narrow(dim, left, size - left - right);
    }
  }
  at::Tensor source = self;
  at::Tensor target = out;
  for (int64_t i = 0; i < dims; ++i) {
    const int64_t dim = self.dim() - 1 - i;
    const int64_t left = pad[2 * i];
    const int64_t right = pad[2 * i + 1];
    const int64_t kept = self.size(dim) + std::min<int64_t>(left, 0) + std::min<int64_t>(right, 0);
    if (kept <= 0) {
      return; // cropped away: only the fill remains
    }
    source = source.narrow(dim, std::max<int64_t>(-left, 0), kept);
    target = target.narrow(dim, std::max<int64_t>(left, 0), kept);
  }
  target.copy_(source);
}

// constant_pad_nd(Tensor self, int[] pad, Scalar value=0)
void constantPadNd(ProcessedNode& p) {
  const at::DimVector pad = p.input(1).toDimVector();
  constantPad(p, p.input(0).toTensor(), pad, p.input(2).toScalar());
}

using PadOut = at::Tensor& (*)(at::Tensor&, const at::Tensor&, at::IntArrayRef);

// ATen's kernel for a reflect / replicate pad of `pad_dims` dimensions, when the input has one
// or two more (an optional batch and the channels), as ATen's own `pad` requires.
PadOut modeKernel(c10::string_view mode, size_t pad_dims, int64_t input_dim) {
  if (input_dim != static_cast<int64_t>(pad_dims) + 1 &&
      input_dim != static_cast<int64_t>(pad_dims) + 2) {
    return nullptr;
  }
  static constexpr PadOut kReflect[] = {
      at::cpu::reflection_pad1d_out, at::cpu::reflection_pad2d_out, at::cpu::reflection_pad3d_out};
  static constexpr PadOut kReplicate[] = {at::cpu::replication_pad1d_out,
                                          at::cpu::replication_pad2d_out,
                                          at::cpu::replication_pad3d_out};
  if (pad_dims < 1 || pad_dims > 3) {
    return nullptr;
  }
  if (mode == "reflect") {
    return kReflect[pad_dims - 1];
  }
  if (mode == "replicate") {
    return kReplicate[pad_dims - 1];
  }
  return nullptr;
}

// The source index of output index k along a dim of `size` padded by `before` in front: mirrored
// about the first and last elements (reflect), or clamped to them (replicate).
inline int64_t paddedSource(int64_t k, int64_t before, int64_t size, bool reflect) {
  const int64_t s = k - before;
  if (s < 0) {
    return reflect ? -s : 0;
  }
  if (s >= size) {
    return reflect ? 2 * (size - 1) - s : size - 1;
  }
  return s;
}

// A reflect or replicate pad of the last one or two dims of `self` (`padding` as pad's: left,
// right[, top, bottom]), float32, contiguous or channels last, the pads at least 0 (and below
// their dim's size for reflect, as ATen requires: anything else returns false, for ATen's kernel
// and its errors). ATen's CPU kernels index every element (a channels-last [1, 128, 32, 32] took
// 278 us reflected by one pixel, 225 contiguous; its output is contiguous whatever the input's);
// here each output row is the input's row copied whole between its mirrored or clamped ends, or,
// channels last, each output pixel its source pixel's channels, into an output laid out as the
// input.
bool padEdges(ProcessedNode& p, const at::Tensor& self, at::IntArrayRef padding, bool reflect) {
  const int64_t pad_dims = static_cast<int64_t>(padding.size() / 2);
  if (self.scalar_type() != at::kFloat || self.is_neg() || self.numel() == 0 ||
      (pad_dims != 1 && pad_dims != 2) || self.dim() < pad_dims + 1 || self.dim() > pad_dims + 2) {
    return false;
  }
  const bool channels_last = self.dim() == 4 && !self.is_contiguous() &&
                             self.is_contiguous(at::MemoryFormat::ChannelsLast);
  if (!self.is_contiguous() && !channels_last) {
    return false;
  }
  const int64_t width = self.size(-1);
  const int64_t height = pad_dims == 2 ? self.size(-2) : 1;
  const int64_t left = padding[0];
  const int64_t right = padding[1];
  const int64_t top = pad_dims == 2 ? padding[2] : 0;
  const int64_t bottom = pad_dims == 2 ? padding[3] : 0;
  for (const auto& [before, after, size] :
       {std::tuple{left, right, width}, std::tuple{top, bottom, height}}) {
    if (before < 0 || after < 0 || (reflect && (before >= size || after >= size))) {
      return false;
    }
  }
  const int64_t out_width = width + left + right;
  const int64_t out_height = height + top + bottom;
  at::DimVector sizes(self.sizes().begin(), self.sizes().end());
  sizes.back() = out_width;
  if (pad_dims == 2) {
    sizes[sizes.size() - 2] = out_height;
  }
  at::Tensor& out = outputTensorLike(p, 0, self);
  at::native::resize_(
      out, sizes, channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  const float* in = floatData(self);
  float* o = floatData(out);
  const double cost = static_cast<double>(out.numel()) * kNanosecondsPerElement;
  if (channels_last) {
    // [N, H, W, C]: output row y of image n from input row paddedSource(y).
    const int64_t channels = self.size(1);
    const size_t pixel = static_cast<size_t>(channels) * sizeof(float);
    splitIfWorthIt(
        p.workers(), self.size(0) * out_height, 1, cost, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const int64_t n = row / out_height;
            const int64_t y = row % out_height;
            const float* source =
                in + (n * height + paddedSource(y, top, height, reflect)) * width * channels;
            float* target = o + row * out_width * channels;
            for (int64_t x = 0; x < left; ++x) {
              std::memcpy(target + x * channels,
                          source + paddedSource(x, left, width, reflect) * channels, pixel);
            }
            std::memcpy(target + left * channels, source, width * pixel);
            for (int64_t x = left + width; x < out_width; ++x) {
              std::memcpy(target + x * channels,
                          source + paddedSource(x, left, width, reflect) * channels, pixel);
            }
          }
        });
    return true;
  }
  // Planes of [H, W]: output row y of a plane from input row paddedSource(y).
  const int64_t planes = self.numel() / (height * width);
  splitIfWorthIt(p.workers(), planes * out_height, 1, cost, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / out_height;
      const int64_t y = row % out_height;
      const float* source = in + (plane * height + paddedSource(y, top, height, reflect)) * width;
      float* target = o + row * out_width;
      for (int64_t x = 0; x < left; ++x) {
        target[x] = source[paddedSource(x, left, width, reflect)];
      }
      std::memcpy(target + left, source, static_cast<size_t>(width) * sizeof(float));
      for (int64_t x = left + width; x < out_width; ++x) {
        target[x] = source[paddedSource(x, left, width, reflect)];
      }
    }
  });
  return true;
}

// pad(Tensor self, int[] pad, str mode="constant", float? value=None)
void pad(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  const at::DimVector padding = p.input(1).toDimVector();
  const c10::string_view mode = p.input(2).toStringView();
  const c10::optional<double> value = p.input(3).toOptional<double>();
  if (mode == "constant") {
    TORCH_CHECK(padding.size() % 2 == 0, "Padding length must be divisible by 2");
    TORCH_CHECK(static_cast<int64_t>(padding.size()) <= self.dim() * 2,
                "Padding length should be less than or equal to two times the input dimension "
                "but got padding length ",
                padding.size(), " and input of dimension ", self.dim());
    constantPad(p, self, padding, value.value_or(0.0));
    return;
  }
  if ((mode == "reflect" || mode == "replicate") && padding.size() % 2 == 0 &&
      (!value || *value == 0) && padEdges(p, self, padding, mode == "reflect")) {
    return;
  }
  const PadOut kernel = modeKernel(mode, padding.size() / 2, self.dim());
  if (kernel == nullptr || padding.size() % 2 != 0 || (value && *value != 0)) {
    // Circular padding, and the errors ATen reports.
    p.output(0) = at::pad(self, padding, mode, value);
    return;
  }
  kernel(outputTensorLike(p, 0, self), self, padding);
}

} // namespace

SRT_REGISTER_KERNEL("aten::pad", kOutVariant, tensorOverload<pad>);
SRT_REGISTER_KERNEL("aten::constant_pad_nd", kOutVariant, tensorOverload<constantPadNd>);

} // namespace srt::ops
