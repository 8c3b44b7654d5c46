// The channel-blocked layout's conversions and size query (ops/conv/blocked_layout.h): oneDNN
// reorders between the plain layouts and nChw16c, which zero the padding lanes.
#include "ops/conv/blocked_layout.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <ATen/Functions.h>
#include <ATen/core/List.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <torch/library.h>

#include "ops/conv/onednn_conv.h"
#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/threads.h"
#include "ops/shapes/transpose_copy.h"

namespace srt::ops {

std::vector<int64_t> blockedSizes(at::IntArrayRef plain_sizes) {
  TORCH_CHECK(plain_sizes.size() == 4, "blocked layout: expected [N, C, H, W] sizes, got ",
              plain_sizes);
  const int64_t blocks = (plain_sizes[1] + kChannelBlock - 1) / kChannelBlock;
  return {plain_sizes[0], blocks, plain_sizes[2], plain_sizes[3], kChannelBlock};
}

bool isBlocked(const at::Tensor& x, int64_t channels) {
  return x.scalar_type() == at::kFloat && x.dim() == 5 && x.is_cpu() && x.is_contiguous() &&
         x.size(4) == kChannelBlock && x.size(1) == (channels + kChannelBlock - 1) / kChannelBlock;
}

void planesIntoBlocks(const float* in, float* out, int64_t images, int64_t channels, int64_t pixels,
                      int64_t image_stride) {
  const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock;
  for (int64_t n = 0; n < images; ++n) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t lanes = std::min(kChannelBlock, channels - b * kChannelBlock);
      float* block = out + (n * blocks + b) * pixels * kChannelBlock;
      if (lanes < kChannelBlock) {
        std::memset(block, 0, static_cast<size_t>(pixels * kChannelBlock) * sizeof(float));
      }
      transposeMatrix(in + n * image_stride + b * kChannelBlock * pixels, pixels, block,
                      kChannelBlock, lanes, pixels);
    }
  }
}

at::Tensor toBlocked(const at::Tensor& x) {
  // The blocked layout has no unbatched form: the pass gave a chain of convolutions this layout
  // assuming batched images, and a [C, H, W] one reaches here.
  TORCH_CHECK(x.dim() == 4, "srt::to_blocked: expected a 4-D [N, C, H, W] tensor, got ", x.dim(),
              "-D ", x.sizes(),
              ": this model's chain of convolutions runs in oneDNN's blocked layout, which takes "
              "batched images; pass x.unsqueeze(0), or build the module with "
              "disabled_passes=[\"blocked_layout\"] to take unbatched ones");
  const std::vector<int64_t> sizes = blockedSizes(x.sizes());
  const int64_t padded = sizes[1] * kChannelBlock;
  at::Tensor padded_x = at::zeros({x.size(0), padded, x.size(2), x.size(3)}, x.options());
  padded_x.narrow(1, 0, x.size(1)).copy_(x);
  return padded_x.view({sizes[0], sizes[1], kChannelBlock, sizes[2], sizes[3]})
      .permute({0, 1, 3, 4, 2})
      .contiguous();
}

at::Tensor fromBlocked(const at::Tensor& x, int64_t channels) {
  TORCH_CHECK(x.dim() == 5 && x.size(4) == kChannelBlock &&
                  x.size(1) == (channels + kChannelBlock - 1) / kChannelBlock,
              "srt::from_blocked: expected a [N, ceil(", channels, " / 16), H, W, 16] tensor, got ",
              x.sizes());
  return x.permute({0, 1, 4, 2, 3})
      .reshape({x.size(0), x.size(1) * kChannelBlock, x.size(2), x.size(3)})
      .narrow(1, 0, channels)
      .contiguous(at::MemoryFormat::ChannelsLast);
}

namespace {

using dnnl::memory;

const char* const kToBlockedSchema = "srt::to_blocked(Tensor x) -> Tensor";
const char* const kFromBlockedSchema = "srt::from_blocked(Tensor x, int channels) -> Tensor";
const char* const kBlockedSizesSchema = "srt::blocked_sizes(Tensor x, int channels) -> int[]";
const char* const kGlobalAveragePoolSchema = "srt::blocked_global_avg_pool(Tensor x) -> Tensor";

at::Tensor globalAveragePoolReference(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 5, "srt::blocked_global_avg_pool: expected a blocked (5-D) tensor, got ",
              x.dim(), "-D");
  return x.mean({2, 3}, /*keepdim=*/true);
}

std::vector<int64_t> blockedSizesReference(const at::Tensor& x, int64_t channels) {
  TORCH_CHECK(x.dim() == 5, "srt::blocked_sizes: expected a blocked (5-D) tensor, got ", x.dim(),
              "-D");
  return {x.size(0), channels, x.size(2), x.size(3)};
}

memory::desc blockedDesc(const memory::dims& plain) {
  return memory::desc(plain, memory::data_type::f32, memory::format_tag::nChw16c);
}

// One reorder of a conversion: the whole tensor, or one slab of it (ReorderState).
struct ReorderPiece {
  dnnl::reorder reorder;
  memory from, to;
  dnnl::stream stream; // streams are not thread-safe: one per piece
};

// A conversion's reorders for the last shape and layout: building one (its primitive descriptor
// above all) costs tens of microseconds, more than a small conversion itself.
struct ReorderState final : NodeState {
  memory::desc from_desc, to_desc;
  std::vector<ReorderPiece> pieces;
};

// How many slabs (of images, or of one image's rows) the runtime's own workers convert a tensor
// of `dims` in: one per thread where it is large enough to pay for handing them out, else 1.
int reorderPieces(const WorkerPool* workers, const memory::dims& dims) {
  if (workers == nullptr) {
    return 1;
  }
  const int threads = workers->threads();
  const double elements = static_cast<double>(dims[0] * dims[1] * dims[2] * dims[3]);
  if (!worthSplittingOver(*workers, elements * kNanosecondsPerCopiedElement) ||
      (dims[0] < threads && dims[2] < threads)) {
    return 1;
  }
  return threads;
}

// Slab k of `pieces` of a tensor of `dims`: whole images where there are enough, else rows.
void slab(const memory::dims& dims, int k, int pieces, memory::dims& slab_dims,
          memory::dims& offsets) {
  const int dim = dims[0] >= pieces ? 0 : 2;
  const int64_t begin = dims[dim] * k / pieces;
  const int64_t end = dims[dim] * (k + 1) / pieces;
  slab_dims = dims;
  slab_dims[dim] = end - begin;
  offsets = memory::dims(dims.size(), 0);
  offsets[dim] = begin;
}

// from -> to, both of the same plain dims. Where the runtime has its own workers, on them (slabs
// of images or rows, each a reorder on one OpenMP thread) or, if too small to split, on the
// calling thread alone: oneDNN's reorder otherwise runs an OpenMP parallel region, and under
// OMP_WAIT_POLICY=PASSIVE waking OpenMP's sleeping threads for it cost more than the conversion
// (resnet18's last from_blocked, 512 x 7 x 7: 155 against 40 us at 2 threads). On OpenMP's
// threads, one too small to pay for them runs on the calling thread too: even spinning ones made
// shufflenet_v2_x1_0's 16 conversions take 94 us against 64, each core reading the half of a
// tensor the other's cache held.
void reorder(ProcessedNode& p, const memory::desc& from_desc, void* from,
             const memory::desc& to_desc, void* to) {
  WorkerPool* workers = p.workers();
  const memory::dims dims = from_desc.dims();
  const int pieces = reorderPieces(workers, dims);
  // Under the runtime's own workers every reorder runs on one OpenMP thread (the workers' own
  // count is 1 already; this sets the caller's), from its creation on.
  std::optional<OneDnnThreads> one_thread;
  const double floats = static_cast<double>(from_desc.get_size() / sizeof(float));
  if (workers != nullptr || !worthSplitting(floats * kNanosecondsPerCopiedElement)) {
    one_thread.emplace(0, 1);
  }
  auto& state = p.state<ReorderState>();
  if (state.pieces.size() != static_cast<size_t>(pieces) || state.from_desc != from_desc ||
      state.to_desc != to_desc) {
    const dnnl::engine& engine = oneDnnEngine();
    state.pieces.clear();
    for (int k = 0; k < pieces; ++k) {
      memory::dims slab_dims, offsets;
      slab(dims, k, pieces, slab_dims, offsets);
      ReorderPiece piece;
      piece.from = memory(from_desc.submemory_desc(slab_dims, offsets), engine, DNNL_MEMORY_NONE);
      piece.to = memory(to_desc.submemory_desc(slab_dims, offsets), engine, DNNL_MEMORY_NONE);
      piece.reorder = dnnl::reorder(piece.from, piece.to);
      piece.stream = dnnl::stream(engine);
      state.pieces.push_back(std::move(piece));
    }
    state.from_desc = from_desc;
    state.to_desc = to_desc;
  }
  const auto run = [&](int64_t k) {
    ReorderPiece& piece = state.pieces[static_cast<size_t>(k)];
    piece.from.set_data_handle(from);
    piece.to.set_data_handle(to);
    piece.reorder.execute(piece.stream, piece.from, piece.to);
    piece.stream.wait();
  };
  if (pieces == 1) {
    run(0);
  } else {
    workers->run(pieces, run);
  }
}

void toBlockedKernel(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const bool channels_last =
      x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(at::MemoryFormat::ChannelsLast);
  if (x.scalar_type() != at::kFloat || x.dim() != 4 || !x.is_cpu() ||
      !(x.is_contiguous() || channels_last)) {
    copyIntoOutput(p, toBlocked(x));
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, x);
  at::native::resize_(out, blockedSizes(x.sizes()));
  const memory::dims dims(x.sizes().begin(), x.sizes().end());
  reorder(p,
          memory::desc(dims, memory::data_type::f32,
                       channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw),
          x.data_ptr(), blockedDesc(dims), out.data_ptr());
}

void fromBlockedKernel(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const int64_t channels = p.input(1).toInt();
  if (!isBlocked(x, channels)) {
    at::Tensor result = fromBlocked(x, channels);
    at::Tensor& out = outputTensorLike(p, 0, result);
    at::native::resize_(out, result.sizes(), at::MemoryFormat::ChannelsLast);
    out.copy_(result);
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, x);
  const memory::dims dims{x.size(0), channels, x.size(2), x.size(3)};
  at::native::resize_(out, {x.size(0), channels, x.size(2), x.size(3)},
                      at::MemoryFormat::ChannelsLast);
  if (channels % kChannelBlock == 0 && x.size(2) * x.size(3) == 1) {
    // One pixel of whole blocks: the same bytes (a pooled feature map before a classifier).
    std::memcpy(out.data_ptr(), x.data_ptr(), out.nbytes());
    return;
  }
  reorder(p, blockedDesc(dims), x.data_ptr(),
          memory::desc(dims, memory::data_type::f32, memory::format_tag::nhwc), out.data_ptr());
}

// The mean of each image's lanes over its pixels, a block's 16 lanes at a time.
void globalAveragePoolKernel(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  if (x.scalar_type() != at::kFloat || x.dim() != 5 || !x.is_contiguous() ||
      x.size(4) != kChannelBlock || x.size(2) * x.size(3) == 0) {
    copyIntoOutput(p, globalAveragePoolReference(x));
    return;
  }
  at::Tensor& out = outputTensorLike(p, 0, x);
  at::native::resize_(out, {x.size(0), x.size(1), 1, 1, kChannelBlock});
  const int64_t pixels = x.size(2) * x.size(3);
  const int64_t blocks = x.size(0) * x.size(1);
  const float* in = x.data_ptr<float>();
  float* result = out.data_ptr<float>();
  // Blocks over the threads, as the convolution before split its output (it left each thread's
  // part in that thread's cache): on one thread the pool read the other's half from afar and
  // took longer at 2 threads than at 1 (efficientnet_b0's 17: 150 -> 349 us).
  splitIfWorthIt(p.workers(), blocks, 1,
                 static_cast<double>(blocks * pixels * kChannelBlock) * kNanosecondsPerElement,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t b = begin; b < end; ++b) {
                     vec::meanRows(in + b * pixels * kChannelBlock, pixels, kChannelBlock,
                                   result + b * kChannelBlock);
                   }
                 });
}

void blockedSizesKernel(ProcessedNode& p) {
  p.output(0) =
      c10::List<int64_t>(blockedSizesReference(p.input(0).toTensor(), p.input(1).toInt()));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kToBlockedSchema, c10::AliasAnalysisKind::FROM_SCHEMA), toBlocked);
  m.def(torch::schema(kFromBlockedSchema, c10::AliasAnalysisKind::FROM_SCHEMA), fromBlocked);
  m.def(torch::schema(kBlockedSizesSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        blockedSizesReference);
  m.def(torch::schema(kGlobalAveragePoolSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        globalAveragePoolReference);
}

SRT_REGISTER_KERNEL("srt::to_blocked", kOutVariant, whenMatches(kToBlockedSchema, toBlockedKernel));
SRT_REGISTER_KERNEL("srt::from_blocked", kOutVariant,
                    whenMatches(kFromBlockedSchema, fromBlockedKernel));
SRT_REGISTER_KERNEL("srt::blocked_global_avg_pool", kOutVariant,
                    whenMatches(kGlobalAveragePoolSchema, globalAveragePoolKernel));
SRT_REGISTER_KERNEL("srt::blocked_sizes", kNative,
                    whenMatches(kBlockedSizesSchema, blockedSizesKernel));

} // namespace srt::ops
