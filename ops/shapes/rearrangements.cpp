// roll, repeat_interleave (by an int), tile and channel_shuffle as out-variant kernels: each is a
// few strided copies of the input into the node's output, where ATen's ops cat, index_select or
// repeat into a new tensor.
#include <ATen/Functions.h>
#include <ATen/WrapDimUtils.h>

#include <cstring>

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

} // namespace

SRT_REGISTER_KERNEL("aten::channel_shuffle", kOutVariant, tensorOverload<channelShuffle>);
SRT_REGISTER_KERNEL("aten::tile", kOutVariant, tensorOverload<tile>);
SRT_REGISTER_KERNEL("aten::roll", kOutVariant, tensorOverload<roll>);
// repeat_interleave.Tensor / self_Tensor (per-element counts) are declined.
SRT_REGISTER_KERNEL("aten::repeat_interleave", kOutVariant,
                    [](const Node* node, const KernelOptions&) {
                      return kernelForOverload(node, {{"self_int", repeatInterleave}});
                    });

} // namespace srt::ops
