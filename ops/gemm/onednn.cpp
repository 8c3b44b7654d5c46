#include "ops/gemm/onednn.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/Functions.h>
#include <ATen/ops/resize_native.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "ops/core/onednn_engine.h"
#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/blocked_gemm.h"
#include "ops/gemm/threads.h"

namespace srt::ops {

namespace {

// Where a packed weight keeps whole blocks of its columns contiguous (blocked with N outermost,
// as brgemm's BA16a64b): the block width, and the elements from one block of columns to the next.
struct ColumnBlocks {
  int64_t width = 0;
  int64_t stride = 0;
};

std::optional<ColumnBlocks> columnBlocks(const dnnl::memory::desc& desc) {
  const dnnl_memory_desc_t& md = desc.data;
  if (md.ndims != 2 || md.format_kind != dnnl_blocked || md.offset0 != 0) {
    return std::nullopt;
  }
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  int64_t width = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    if (blocking.inner_idxs[i] == 1) {
      width *= blocking.inner_blks[i];
    }
  }
  // N outermost: a block of columns spans every (padded) row.
  if (blocking.strides[1] != md.padded_dims[0] * width || md.padded_dims[1] % width != 0) {
    return std::nullopt;
  }
  return ColumnBlocks{width, blocking.strides[1]};
}

// Whether a packed float32 weight's column blocks are each a row-major [k, width] matrix (K
// blocked by any count first, as in BA16a64b, or not at all): what vec::rowTimesMatrix reads,
// block by block, zero in the padding as oneDNN's reorders leave it.
bool rowMajorBlocks(const dnnl::memory::desc& desc, const ColumnBlocks& blocks) {
  const dnnl_memory_desc_t& md = desc.data;
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  if (md.data_type != dnnl_f32 || blocks.width % vec::kRowTimesMatrixAlignment != 0) {
    return false;
  }
  if (blocking.inner_nblks == 1) {
    return blocking.inner_idxs[0] == 1 && blocking.strides[0] == blocks.width;
  }
  return blocking.inner_nblks == 2 && blocking.inner_idxs[0] == 0 && blocking.inner_idxs[1] == 1 &&
         blocking.strides[0] == blocking.inner_blks[0] * blocks.width;
}

} // namespace

// The right operand in oneDNN's preferred layout, shared read-only by all runtimes of a module.
struct OneDnnPackedWeight {
  int64_t k = 0;
  int64_t n = 0;
  dnnl::memory::desc desc;
  at::Tensor storage; // desc.get_size() bytes
  // Small weights only: the plain [K, N] matrix with zero columns up to a multiple of
  // vec::kRowTimesMatrixAlignment, for single rows. A oneDNN call costs about 1 us whatever its
  // size, 2-4x the product itself at MLP sizes (K, N <= 128: 0.3-0.7 us with
  // vec::rowTimesMatrix on this project's machines).
  at::Tensor row_weight;
  // Larger float32 weights whose packed layout is row-major blocks of columns (brgemm's
  // BA16a64b): those blocks, read in place for single rows. A single row streams the weight from
  // memory, and oneDNN's kernel took twice as long as reading it (mobilenet_v3_small's 4 MB
  // classifier: 277 vs 159 us from DRAM).
  std::optional<ColumnBlocks> row_blocks;
  // Few outputs only (N < kFewOutputs, e.g. a score or a logit): the weight as linear stores it,
  // [N, K] contiguous, so each output of each row is one vec::dot. oneDNN pads N to its 16- or
  // 64-wide blocks there: DeepAndWide's final [64, 51] x [51, 1] took 2.3 us through it.
  at::Tensor output_rows;
  // float32 blocks of kBlockedGemmWidth columns (row_blocks) that ops/gemm/blocked_gemm.h
  // multiplies in place of oneDNN's matmul for 2 to kBlockedGemmMaxRows rows; not where padding
  // the last block adds over a quarter of the columns' work (oneDNN's kernel skips the padding).
  bool blocked_gemm = false;
};

namespace {

using dnnl::memory;
using Dims = memory::dims;

using PackedWeight = OneDnnPackedWeight;

// The packed layout is what the matmul implementation picks for `format_tag::any`; it depends on
// K and N, not on M (brgemm on AVX-512 picks the same blocked layout for M = 1 ... 1024), so one
// representative M decides it and the primitive for any other M accepts it.
constexpr int64_t kPackingRows = 64;

// Weights up to 128 KB (half this machine's L2) also keep a copy for single rows: larger ones
// stream from memory either way, and are read in their packed blocks (row_blocks), which stream
// faster than the copy's long rows (K = 2048, N = 256: 24 vs 46 us).
constexpr int64_t kRowProductMaxFloats = int64_t{1} << 15;
constexpr int64_t kFewOutputs = 8;
// Products up to this many multiply-adds run as dot products when N is that small.
constexpr int64_t kDotProductMaxMultiplyAdds = int64_t{1} << 16;

memory::data_type dataType(MultiplyPrecision precision) {
  return precision == MultiplyPrecision::kBFloat16 ? memory::data_type::bf16
                                                   : memory::data_type::f32;
}

std::shared_ptr<const PackedWeight> packWeight(const at::Tensor& weight,
                                               MultiplyPrecision precision) {
  const int64_t k = weight.size(0);
  const int64_t n = weight.size(1);
  // oneDNN takes any positive strides; a broadcast (stride 0) constant is made dense first.
  const at::Tensor plain =
      weight.stride(0) > 0 && weight.stride(1) > 0 ? weight : weight.contiguous();
  const memory::desc plain_desc({k, n}, memory::data_type::f32,
                                Dims{plain.stride(0), plain.stride(1)});

  const memory::desc src({kPackingRows, k}, dataType(precision), memory::format_tag::ab);
  const memory::desc any({k, n}, dataType(precision), memory::format_tag::any);
  const memory::desc dst({kPackingRows, n}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, dst), oneDnnEngine());

  auto packed = std::make_shared<PackedWeight>();
  packed->k = k;
  packed->n = n;
  packed->desc = pd.weights_desc();
  packed->storage = at::empty({static_cast<int64_t>(packed->desc.get_size())}, at::kByte);
  memory from(plain_desc, oneDnnEngine(), plain.data_ptr());
  memory to(packed->desc, oneDnnEngine(), packed->storage.data_ptr());
  dnnl::stream stream(oneDnnEngine());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  const std::optional<ColumnBlocks> blocks = columnBlocks(packed->desc);
  if (blocks && rowMajorBlocks(packed->desc, *blocks)) {
    packed->row_blocks = blocks;
    const int64_t padded_n = (n + kBlockedGemmWidth - 1) / kBlockedGemmWidth * kBlockedGemmWidth;
    packed->blocked_gemm =
        blocks->width == kBlockedGemmWidth && 4 * padded_n <= 5 * n && blockedGemmRuns();
  }
  if (k * n <= kRowProductMaxFloats) {
    const int64_t ld = (n + vec::kRowTimesMatrixAlignment - 1) / vec::kRowTimesMatrixAlignment *
                       vec::kRowTimesMatrixAlignment;
    packed->row_weight = at::zeros({k, ld}, at::kFloat);
    packed->row_weight.narrow(1, 0, n).copy_(plain);
  }
  if (n < kFewOutputs) {
    packed->output_rows = plain.t().contiguous();
  }
  return packed;
}

// How the addend reaches the result. oneDNN's bias input is used only where its meaning is
// unambiguous (alpha = beta = 1, one value per column); anything else is copied into the output
// first and added back by a sum post-op scaled by beta.
enum class AddendMode { kNone, kBias, kSum };

AddendMode addendMode(const GemmProblem& problem) {
  if (!problem.hasAddend()) {
    return AddendMode::kNone;
  }
  const at::Tensor& addend = problem.addend;
  const bool per_column = addend.dim() >= 1 && addend.dim() <= 2 && addend.numel() == problem.n() &&
                          addend.size(-1) == problem.n() && addend.is_contiguous();
  return per_column && problem.alpha == 1.0 && problem.beta == 1.0 ? AddendMode::kBias
                                                                   : AddendMode::kSum;
}

// A fused node's epilogue as post-ops: dst = output_scale * act(gemm + bias), then plus
// residual_scale * the residual copied into dst beforehand (a sum post-op).
struct PostOps {
  Activation activation = Activation::kNone;
  double output_scale = 1.0;
  bool residual_sum = false;
  double residual_scale = 1.0;

  bool operator==(const PostOps& o) const {
    return activation == o.activation && output_scale == o.output_scale &&
           residual_sum == o.residual_sum && residual_scale == o.residual_scale;
  }
};

PostOps postOpsFor(const GemmEpilogue& epilogue) {
  PostOps post_ops;
  post_ops.activation = epilogue.activation;
  if (epilogue.has_residual) {
    post_ops.residual_sum = true;
    // add(residual, y, alpha) scales y; add(y, residual, alpha) scales the residual.
    (epilogue.residual_first ? post_ops.output_scale : post_ops.residual_scale) = epilogue.alpha;
  }
  return post_ops;
}

// oneDNN's eltwise algorithm and its (alpha, beta) parameters for an activation.
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0.f;
  float beta = 0.f;
};

Eltwise eltwiseFor(Activation activation) {
  switch (activation) {
  case Activation::kRelu:
    return {dnnl::algorithm::eltwise_relu};
  case Activation::kGelu:
    return {dnnl::algorithm::eltwise_gelu_erf};
  case Activation::kGeluTanh:
    return {dnnl::algorithm::eltwise_gelu_tanh};
  case Activation::kSigmoid:
    return {dnnl::algorithm::eltwise_logistic};
  case Activation::kTanh:
    return {dnnl::algorithm::eltwise_tanh};
  case Activation::kSilu:
    return {dnnl::algorithm::eltwise_swish, 1.f}; // x * sigmoid(1 * x)
  case Activation::kNone:
    break;
  }
  return {dnnl::algorithm::eltwise_linear, 1.f}; // the identity
}

// What a primitive was built for: M, the OpenMP thread count, and how many column pieces the
// runtime's own workers run (0: one primitive for the whole).
struct PrimitiveKey {
  int64_t m = -1;
  int threads = 0;
  int pieces = 0;
  double alpha = 1.0;
  double beta = 0.0;
  AddendMode addend = AddendMode::kNone;
  PostOps epilogue;

  bool operator==(const PrimitiveKey& o) const {
    return m == o.m && threads == o.threads && pieces == o.pieces && alpha == o.alpha &&
           beta == o.beta && addend == o.addend && epilogue == o.epilogue;
  }
};

// One node's primitive in one runtime, with memory objects whose data handles are set per call.
struct OneDnnGemmState final : NodeState {
  PrimitiveKey key;
  bool built = false;
  // False when oneDNN has no implementation for `key`: the node then runs ATen's kernel.
  bool supported = false;
  dnnl::matmul primitive;
  // A bfloat16 weight multiplies a bfloat16 activation: the caller's float32 one (src_user) is
  // rounded into the start of the node's scratch first.
  bool round_src = false;
  dnnl::reorder src_rounding;
  // Scratch, 64-byte aligned offsets: [rounded activation | oneDNN scratchpad].
  size_t scratchpad_offset = 0, scratchpad_bytes = 0, scratch_bytes = 0;
  memory src_user, src, weights, bias, dst, scratchpad;
  dnnl::stream stream;
  // Set when the weight runs on ops/gemm/blocked_gemm.h instead of `primitive` (no scratch).
  const PackedWeight* blocked = nullptr;
  // Split over the runtime's own workers: one state per slice of the output's columns, each
  // from `first_column`, its scratch at `scratch_offset` of the node's.
  std::vector<OneDnnGemmState> pieces;
  int64_t first_column = 0;
  size_t scratch_offset = 0;
};

// Columns [first, first + count) of a packed weight (`first` a multiple of the block width): the
// same layout with fewer columns, to be read from the weight's data plus columnOffsetBytes.
memory::desc columnSlice(const memory::desc& desc, const ColumnBlocks& blocks, int64_t count) {
  dnnl_memory_desc_t md = desc.data;
  md.dims[1] = count;
  md.padded_dims[1] = (count + blocks.width - 1) / blocks.width * blocks.width;
  return memory::desc(md);
}

size_t columnOffsetBytes(const memory::desc& desc, const ColumnBlocks& blocks, int64_t first) {
  return static_cast<size_t>(first / blocks.width * blocks.stride) *
         memory::data_type_size(desc.data_type());
}

// Builds `state` for the product of [key.m, k] rows with `weight_desc` ([k, n] at `weight_data`)
// into rows of `out_stride` floats.
void build(OneDnnGemmState& state, const PrimitiveKey& key, int64_t k, int64_t n,
           const memory::desc& weight_desc, void* weight_data, int64_t out_stride) {
  state.key = key;
  state.built = true;
  state.supported = false;
  state.pieces.clear();
  const auto f32 = memory::data_type::f32;
  const memory::desc src_user({key.m, k}, f32, memory::format_tag::ab);
  const memory::desc src({key.m, k}, weight_desc.data_type(), memory::format_tag::ab);
  // One row's stride is moot: described dense, which brgemm takes (it runs a strided output on
  // its reference kernel).
  const memory::desc dst = key.m == 1 ? memory::desc({1, n}, f32, memory::format_tag::ab)
                                      : memory::desc({key.m, n}, f32, Dims{out_stride, 1});
  const memory::desc bias({1, n}, f32, memory::format_tag::ab);

  dnnl::primitive_attr attr;
  // The scratchpad comes from the runtime's scratch memory, not from a oneDNN allocation per call.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.alpha != 1.0) {
    attr.set_output_scales(0, {static_cast<float>(key.alpha)});
  }
  dnnl::post_ops post_ops;
  if (key.addend == AddendMode::kSum) {
    post_ops.append_sum(static_cast<float>(key.beta));
  }
  const PostOps& epilogue = key.epilogue;
  if (epilogue.activation != Activation::kNone) {
    const Eltwise eltwise = eltwiseFor(epilogue.activation);
    post_ops.append_eltwise(1.f, eltwise.algorithm, eltwise.alpha, eltwise.beta);
  }
  if (epilogue.output_scale != 1.0) {
    post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear,
                            static_cast<float>(epilogue.output_scale), 0.f);
  }
  if (epilogue.residual_sum) {
    post_ops.append_sum(static_cast<float>(epilogue.residual_scale));
  }
  if (post_ops.len() > 0) {
    attr.set_post_ops(post_ops);
  }
  try {
    const auto desc = key.addend == AddendMode::kBias
                          ? dnnl::matmul::desc(src, weight_desc, bias, dst)
                          : dnnl::matmul::desc(src, weight_desc, dst);
    const dnnl::matmul::primitive_desc pd(desc, attr, oneDnnEngine());
    state.primitive = dnnl::matmul(pd);
    state.scratchpad_bytes = pd.scratchpad_desc().get_size();
    if (state.scratchpad_bytes > 0) {
      state.scratchpad = memory(pd.scratchpad_desc(), oneDnnEngine(), DNNL_MEMORY_NONE);
    }
  } catch (const dnnl::error&) {
    // No implementation takes the packed layout for this M or these attributes (e.g. a CPU
    // without the ISA the layout was chosen for): ATen runs the node.
    return;
  }
  state.round_src = src != src_user;
  state.src_user = memory(src_user, oneDnnEngine(), DNNL_MEMORY_NONE);
  state.src = memory(src, oneDnnEngine(), DNNL_MEMORY_NONE);
  if (state.round_src) {
    state.src_rounding = dnnl::reorder(state.src_user, state.src);
  }
  state.scratchpad_offset = state.round_src ? alignScratchOffset(src.get_size()) : 0;
  state.scratch_bytes = state.scratchpad_offset + state.scratchpad_bytes;
  state.dst = memory(dst, oneDnnEngine(), DNNL_MEMORY_NONE);
  if (!state.weights) {
    // Shared by all runtimes: oneDNN only reads a matmul's weights argument.
    state.weights = memory(weight_desc, oneDnnEngine(), weight_data);
    state.bias = memory(bias, oneDnnEngine(), DNNL_MEMORY_NONE);
    state.stream = dnnl::stream(oneDnnEngine());
  }
  state.supported = true;
}

void build(OneDnnGemmState& state, const PrimitiveKey& key, const PackedWeight& weight) {
  build(state, key, weight.k, weight.n, weight.desc, weight.storage.data_ptr(), weight.n);
}

// How many column pieces the runtime's own workers run a product of `m` rows in: one per thread
// for a single row (a classifier's: a slice of several rows has a strided output, which oneDNN 2.6
// runs on its reference kernel), where the weight keeps blocks of columns contiguous, there are
// enough of them, the activation is not rounded per call (bfloat16 weights), and reading the
// weight (at an element-wise pass's rate per element) pays for handing them out; else 0.
int columnPiecesFor(const PackedWeight& weight, int64_t m, const WorkerPool& workers) {
  const std::optional<ColumnBlocks> blocks = columnBlocks(weight.desc);
  if (m != 1 || !blocks || weight.desc.data_type() != memory::data_type::f32 ||
      (weight.n + blocks->width - 1) / blocks->width < workers.threads()) {
    return 0;
  }
  const double ns = static_cast<double>(weight.k * weight.n) * kNanosecondsPerElement;
  return worthSplittingOver(workers, ns) ? workers.threads() : 0;
}

// Builds `state` for `key` as key.pieces slices of whole column blocks; state.supported is false
// (and there are no pieces) where oneDNN has no primitive for one.
void buildPieces(OneDnnGemmState& state, const PrimitiveKey& key, const PackedWeight& weight) {
  state.key = key;
  state.built = true;
  state.supported = false;
  state.pieces.clear();
  const ColumnBlocks blocks = *columnBlocks(weight.desc);
  const int64_t block_count = (weight.n + blocks.width - 1) / blocks.width;
  size_t scratch = 0;
  for (int i = 0; i < key.pieces; ++i) {
    const int64_t first = block_count * i / key.pieces * blocks.width;
    const int64_t end = std::min(weight.n, block_count * (i + 1) / key.pieces * blocks.width);
    OneDnnGemmState& piece = state.pieces.emplace_back();
    build(piece, key, weight.k, end - first, columnSlice(weight.desc, blocks, end - first),
          static_cast<char*>(weight.storage.data_ptr()) +
              columnOffsetBytes(weight.desc, blocks, first),
          weight.n);
    if (!piece.supported || piece.round_src) {
      state.pieces.clear();
      return;
    }
    piece.first_column = first;
    piece.scratch_offset = scratch;
    scratch += alignScratchOffset(piece.scratch_bytes);
  }
  state.scratch_bytes = scratch;
  state.supported = true;
}

// out[m, n] = a[m, k] @ weight (+ bias), rows dense, on ops/gemm/blocked_gemm.h.
BlockedGemm blockedGemmOf(const PackedWeight& weight, const float* a, int64_t m, const float* bias,
                          float* out) {
  BlockedGemm gemm;
  gemm.a = a;
  gemm.lda = weight.k;
  gemm.m = m;
  gemm.w = static_cast<const float*>(weight.storage.data_ptr());
  gemm.k = weight.k;
  gemm.n = weight.n;
  gemm.block_stride = weight.row_blocks->stride;
  gemm.bias = bias;
  gemm.out = out;
  gemm.ldo = weight.n;
  return gemm;
}

// The C call takes the arguments as an array: the C++ one wants an unordered_map per call.
void executePrimitive(const dnnl::primitive& primitive, dnnl::stream& stream,
                      const dnnl_exec_arg_t* args, int num_args) {
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(), num_args, args),
                          "oneDNN matmul failed");
}

// `scratch`: state.scratch_bytes bytes, or nullptr to take them from the node's scratch.
void execute(OneDnnGemmState& state, ProcessedNode& p, const void* a, const void* bias, void* out,
             void* scratch = nullptr) {
  if (state.blocked != nullptr) {
    const PackedWeight& weight = *state.blocked;
    runBlockedGemm(blockedGemmOf(weight, static_cast<const float*>(a), state.key.m,
                                 static_cast<const float*>(bias), static_cast<float*>(out)),
                   p.workers());
    return;
  }
  if (scratch == nullptr && state.scratch_bytes > 0) {
    scratch = p.scratch(state.scratch_bytes);
  }
  if (state.round_src) {
    state.src_user.set_data_handle(const_cast<void*>(a));
    state.src.set_data_handle(scratch);
    const dnnl_exec_arg_t rounding[2] = {{DNNL_ARG_FROM, state.src_user.get()},
                                         {DNNL_ARG_TO, state.src.get()}};
    executePrimitive(state.src_rounding, state.stream, rounding, 2);
  } else {
    state.src.set_data_handle(const_cast<void*>(a));
  }
  state.dst.set_data_handle(out);
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, state.src.get()},
                             {DNNL_ARG_WEIGHTS, state.weights.get()},
                             {DNNL_ARG_DST, state.dst.get()}};
  int num_args = 3;
  if (state.key.addend == AddendMode::kBias) {
    state.bias.set_data_handle(const_cast<void*>(bias));
    args[num_args++] = {DNNL_ARG_BIAS, state.bias.get()};
  }
  if (state.scratchpad_bytes > 0) {
    state.scratchpad.set_data_handle(static_cast<char*>(scratch) + state.scratchpad_offset);
    args[num_args++] = {DNNL_ARG_SCRATCHPAD, state.scratchpad.get()};
  }
  executePrimitive(state.primitive, state.stream, args, num_args);
  state.stream.wait();
}

// A linear-shaped node's common case, straight from the data pointers (see LinearInputs): a
// contiguous float32 activation [..., K], a contiguous bias of N values or none, and a residual
// of exactly the output's shape. False (nothing written) for anything else, which the general
// path then takes.
bool runDenseLinear(ProcessedNode& p, const at::Tensor& x, const PackedWeight& packed,
                    LinearInputs linear, const GemmEpilogue& epilogue, int residual_input,
                    int alpha_input) {
  if (x.scalar_type() != at::kFloat || !x.is_cpu() || x.dim() < 2 || x.size(-1) != packed.k ||
      x.numel() == 0 || !x.is_contiguous()) {
    return false;
  }
  AddendMode mode = AddendMode::kNone;
  const c10::IValue& bias_value = p.input(linear.bias);
  const at::Tensor* bias = nullptr;
  if (!bias_value.isNone()) {
    bias = &bias_value.toTensor();
    if (bias->scalar_type() != at::kFloat || !bias->is_cpu() || bias->dim() != 1 ||
        bias->size(0) != packed.n || !bias->is_contiguous()) {
      return false;
    }
    mode = AddendMode::kBias;
  }
  c10::SmallVector<int64_t, 4> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = packed.n;
  GemmEpilogue run_epilogue = epilogue;
  const at::Tensor* residual = nullptr;
  if (epilogue.has_residual) {
    residual = &p.input(residual_input).toTensor();
    const at::Scalar alpha = p.input(alpha_input).toScalar();
    if (alpha.isComplex() || residual->scalar_type() != at::kFloat || !residual->is_cpu() ||
        residual->sizes() != at::IntArrayRef(out_sizes) || !residual->is_contiguous()) {
      return false;
    }
    run_epilogue.alpha = alpha.toDouble();
  }
  const int64_t m = x.numel() / packed.k;
  const bool dots =
      packed.output_rows.defined() && m * packed.k * packed.n <= kDotProductMaxMultiplyAdds;
  if ((m == 1 && (packed.row_weight.defined() || packed.row_blocks)) || dots) {
    at::Tensor& out = outputTensorLike(p, 0, x);
    at::native::resize_(out, out_sizes);
    const float* in = static_cast<const float*>(x.data_ptr());
    const float* b = bias == nullptr ? nullptr : static_cast<const float*>(bias->data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    if (dots) {
      const float* w = static_cast<const float*>(packed.output_rows.data_ptr());
      for (int64_t row = 0; row < m; ++row) {
        for (int64_t j = 0; j < packed.n; ++j) {
          o[row * packed.n + j] = vec::dot(in + row * packed.k, w + j * packed.k, packed.k) +
                                  (b == nullptr ? 0.f : b[j]);
        }
      }
    } else if (!packed.row_weight.defined()) {
      // Bound by reading the weight once: its blocks of columns split over the workers.
      const ColumnBlocks blocks = *packed.row_blocks;
      const float* w = static_cast<const float*>(packed.storage.data_ptr());
      const int64_t count = (packed.n + blocks.width - 1) / blocks.width;
      WorkerPool* workers = p.workers();
      const int64_t parts =
          std::min<int64_t>(count, threadsFor(workers, static_cast<double>(packed.k * packed.n) *
                                                           kNanosecondsPerElement));
      forEachPart(workers, count, parts, [&](int64_t, int64_t first, int64_t last) {
        for (int64_t block = first; block < last; ++block) {
          const int64_t begin = block * blocks.width;
          vec::rowTimesMatrix(in, w + block * blocks.stride, blocks.width,
                              b == nullptr ? nullptr : b + begin, o + begin, packed.k,
                              std::min(blocks.width, packed.n - begin));
        }
      });
    } else {
      // Bound by reading the weight once, at about an element-wise pass's rate per element;
      // split into column slices of whole vectors.
      const int64_t ld = packed.row_weight.size(1);
      const float* w = static_cast<const float*>(packed.row_weight.data_ptr());
      constexpr int64_t kSlice = vec::kRowTimesMatrixAlignment;
      const int64_t slices = (packed.n + kSlice - 1) / kSlice;
      WorkerPool* workers = p.workers();
      const int64_t parts =
          std::min<int64_t>(slices, threadsFor(workers, static_cast<double>(packed.k * packed.n) *
                                                            kNanosecondsPerElement));
      forEachPart(workers, slices, parts, [&](int64_t, int64_t first, int64_t last) {
        const int64_t begin = first * kSlice;
        const int64_t end = std::min(packed.n, last * kSlice);
        vec::rowTimesMatrix(in, w + begin, ld, b == nullptr ? nullptr : b + begin, o + begin,
                            packed.k, end - begin);
      });
    }
    if (!(run_epilogue.activation == Activation::kNone && !run_epilogue.has_residual)) {
      applyEpilogue(run_epilogue, out, residual == nullptr ? at::Tensor() : *residual);
    }
    return true;
  }
  if (packed.blocked_gemm && m <= kBlockedGemmMaxRows) {
    at::Tensor& out = outputTensorLike(p, 0, x);
    at::native::resize_(out, out_sizes);
    BlockedGemm gemm =
        blockedGemmOf(packed, static_cast<const float*>(x.data_ptr()), m,
                      bias == nullptr ? nullptr : static_cast<const float*>(bias->data_ptr()),
                      static_cast<float*>(out.data_ptr()));
    BlockedGemmEpilogue& fused = gemm.epilogue;
    fused.activate = run_epilogue.activation != Activation::kNone;
    fused.activation = fused.activate ? formulaOf(run_epilogue.activation) : fused.activation;
    if (residual != nullptr) {
      fused.residual = static_cast<const float*>(residual->data_ptr());
      fused.residual_ld = packed.n;
      fused.alpha = static_cast<float>(run_epilogue.alpha);
      fused.residual_first = run_epilogue.residual_first;
    }
    runBlockedGemm(gemm, p.workers());
    return true;
  }
  const PostOps post_ops = postOpsFor(run_epilogue);
  WorkerPool* workers = p.workers();
  const int pieces = workers != nullptr ? columnPiecesFor(packed, m, *workers) : 0;
  // Pieces run on one OpenMP thread each: the workers are the parallelism.
  const OneDnnThreads threads(m * packed.k * packed.n, pieces > 0 ? 1 : INT_MAX);
  const PrimitiveKey key{m, threads.count(), pieces, 1.0, 0.0, mode, post_ops};
  auto& state = p.state<OneDnnGemmState>();
  if (!state.built || !(state.key == key)) {
    state.supported = false;
    if (pieces > 0) {
      buildPieces(state, key, packed);
    }
    if (!state.supported) {
      build(state, key, packed); // one primitive, on one thread where pieces were wanted: rare
    }
  }
  if (!state.supported) {
    return false;
  }
  at::Tensor& out = outputTensorLike(p, 0, x);
  at::native::resize_(out, out_sizes);
  if (residual != nullptr) {
    std::memcpy(out.data_ptr(), residual->data_ptr(), out.numel() * sizeof(float));
  }
  const float* bias_data = bias == nullptr ? nullptr : static_cast<const float*>(bias->data_ptr());
  float* out_data = static_cast<float*>(out.data_ptr());
  if (state.pieces.empty()) {
    execute(state, p, x.data_ptr(), bias_data, out_data);
    return true;
  }
  char* scratch =
      static_cast<char*>(state.scratch_bytes > 0 ? p.scratch(state.scratch_bytes) : nullptr);
  workers->run(static_cast<int64_t>(state.pieces.size()), [&](int64_t i) {
    OneDnnGemmState& piece = state.pieces[i];
    execute(piece, p, x.data_ptr(), bias_data == nullptr ? nullptr : bias_data + piece.first_column,
            out_data + piece.first_column,
            scratch == nullptr ? nullptr : scratch + piece.scratch_offset);
  });
  return true;
}

} // namespace

std::shared_ptr<const OneDnnPackedWeight> packOneDnnWeight(const at::Tensor& weight) {
  if (weight.dim() != 2 || weight.scalar_type() != at::kFloat || !weight.is_cpu() ||
      weight.numel() == 0) {
    return nullptr;
  }
  try {
    return packWeight(weight, MultiplyPrecision::kFloat32);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::shared_ptr<const OneDnnPackedWeight> repackOneDnnWeight(const OneDnnPackedWeight& weight,
                                                             MultiplyPrecision precision) {
  try {
    return packWeight(unpackOneDnnWeight(weight), precision);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

MultiplyPrecision multiplyPrecision(const OneDnnPackedWeight& weight) {
  return weight.desc.data_type() == memory::data_type::bf16 ? MultiplyPrecision::kBFloat16
                                                            : MultiplyPrecision::kFloat32;
}

std::pair<int64_t, int64_t> packedShape(const OneDnnPackedWeight& weight) {
  return {weight.k, weight.n};
}

at::Tensor unpackOneDnnWeight(const OneDnnPackedWeight& weight) {
  at::Tensor plain = at::empty({weight.k, weight.n}, at::kFloat);
  const memory::desc plain_desc({weight.k, weight.n}, memory::data_type::f32,
                                memory::format_tag::ab);
  memory from(weight.desc, oneDnnEngine(), weight.storage.data_ptr());
  memory to(plain_desc, oneDnnEngine(), plain.data_ptr());
  dnnl::stream stream(oneDnnEngine());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return plain;
}

KernelFunction makePackedLinearKernel(std::shared_ptr<const OneDnnPackedWeight> packed,
                                      GemmEpilogue epilogue, LinearInputs linear,
                                      int residual_input, int alpha_input,
                                      KernelFunction reference) {
  return [packed = std::move(packed), epilogue, linear, residual_input, alpha_input,
          reference = std::move(reference)](ProcessedNode& p) {
    const at::Tensor& x = p.input(linear.input).toTensor();
    if (runDenseLinear(p, x, *packed, linear, epilogue, residual_input, alpha_input)) {
      return;
    }
    // Copying a strided activation costs M x K; unpacking the weight would cost K x N per call.
    if (x.scalar_type() == at::kFloat && x.is_cpu() && x.dim() >= 2 && !x.is_contiguous() &&
        runDenseLinear(p, x.contiguous(), *packed, linear, epilogue, residual_input, alpha_input)) {
      return;
    }
    reference(p);
  };
}

namespace {

std::optional<size_t> prepareState(OneDnnGemmState& state, const OneDnnPackedWeight& weight,
                                   int64_t m, bool has_bias, const OneDnnThreads& threads) {
  const PrimitiveKey key{
      m, threads.count(), 0, 1.0, 0.0, has_bias ? AddendMode::kBias : AddendMode::kNone, PostOps{}};
  if (weight.blocked_gemm && m >= 2 && m <= kBlockedGemmMaxRows) {
    state.key = key;
    state.built = state.supported = true;
    state.blocked = &weight;
    state.scratch_bytes = 0;
    return size_t{0};
  }
  if (!state.built || !(state.key == key) || state.blocked != nullptr) {
    state.blocked = nullptr;
    build(state, key, weight);
  }
  if (!state.supported) {
    return std::nullopt;
  }
  return state.scratch_bytes;
}

} // namespace

std::optional<size_t> prepareOneDnnGemm(ProcessedNode& p, const OneDnnPackedWeight& weight,
                                        int64_t m, bool has_bias, const OneDnnThreads& threads) {
  return prepareState(p.state<OneDnnGemmState>(), weight, m, has_bias, threads);
}

OneDnnGemmSlot::OneDnnGemmSlot() : state_(std::make_unique<OneDnnGemmState>()) {}
OneDnnGemmSlot::~OneDnnGemmSlot() = default;
OneDnnGemmSlot::OneDnnGemmSlot(OneDnnGemmSlot&&) noexcept = default;
OneDnnGemmSlot& OneDnnGemmSlot::operator=(OneDnnGemmSlot&&) noexcept = default;

std::optional<size_t> OneDnnGemmSlot::prepare(const OneDnnPackedWeight& weight, int64_t m,
                                              bool has_bias, const OneDnnThreads& threads) {
  return prepareState(static_cast<OneDnnGemmState&>(*state_), weight, m, has_bias, threads);
}

void OneDnnGemmSlot::run(ProcessedNode& p, const float* a, const float* bias, float* out,
                         void* scratchpad) {
  auto& state = static_cast<OneDnnGemmState&>(*state_);
  TORCH_INTERNAL_ASSERT(state.built && state.supported, "OneDnnGemmSlot::run before prepare");
  TORCH_INTERNAL_ASSERT(scratchpad != nullptr || state.scratch_bytes == 0,
                        "oneDNN GEMM without its scratch");
  execute(state, p, a, bias, out, scratchpad);
}

void runOneDnnGemm(ProcessedNode& p, const float* a, const float* bias, float* out,
                   void* scratchpad) {
  auto& state = p.state<OneDnnGemmState>();
  TORCH_INTERNAL_ASSERT(state.built && state.supported, "runOneDnnGemm before prepareOneDnnGemm");
  TORCH_INTERNAL_ASSERT(scratchpad != nullptr || state.scratch_bytes == 0,
                        "oneDNN GEMM without its scratch");
  execute(state, p, a, bias, out, scratchpad);
}

std::optional<KernelFunction> makeOneDnnKernel(const at::Tensor& weight, GemmLowering lower,
                                               KernelFunction aten_kernel, LinearInputs linear) {
  return makeOneDnnKernel(weight, lower, std::move(aten_kernel), GemmEpilogue{}, -1, -1, linear);
}

std::optional<KernelFunction> makeOneDnnKernel(const at::Tensor& weight, GemmLowering lower,
                                               KernelFunction aten_kernel, GemmEpilogue epilogue,
                                               int residual_input, int alpha_input,
                                               LinearInputs linear) {
  std::shared_ptr<const PackedWeight> packed = packOneDnnWeight(weight);
  if (!packed) {
    return std::nullopt; // not a float32 matrix, or no matmul implementation on this CPU
  }
  return [packed, lower, aten_kernel = std::move(aten_kernel), epilogue, residual_input,
          alpha_input, linear](ProcessedNode& p) {
    if (linear.input >= 0 && runDenseLinear(p, p.input(linear.input).toTensor(), *packed, linear,
                                            epilogue, residual_input, alpha_input)) {
      return;
    }
    std::optional<GemmProblem> problem = lower(p);
    if (!problem || problem->batchDims() != 0 || problem->a.scalar_type() != at::kFloat ||
        !problem->a.is_cpu() || problem->k() != packed->k || problem->n() != packed->n) {
      aten_kernel(p);
      return;
    }
    const AddendMode mode = addendMode(*problem);
    GemmEpilogue run_epilogue = epilogue;
    at::Tensor residual;
    if (epilogue.has_residual) {
      const at::Scalar alpha = p.input(alpha_input).toScalar();
      residual = p.input(residual_input).toTensor();
      if (alpha.isComplex() || !epilogueFitsInPlace(epilogue, problem->out_sizes, residual)) {
        aten_kernel(p);
        return;
      }
      run_epilogue.alpha = alpha.toDouble();
    }
    const PostOps post_ops = postOpsFor(run_epilogue);
    // Both sum post-ops would read the output's prior contents: a fused node whose bias is not a
    // row takes the other path.
    if (mode == AddendMode::kSum && !(post_ops == PostOps{})) {
      aten_kernel(p);
      return;
    }
    if (problem->m() == 0) {
      at::Tensor& out = outputTensorLike(p, 0, problem->a);
      resizeForGemm(out, *problem);
      return;
    }
    const OneDnnThreads threads(problem->m() * packed->k * packed->n);
    // beta matters only to the sum post-op; keying on it otherwise would only cause rebuilds.
    const PrimitiveKey key{problem->m(),
                           threads.count(),
                           0,
                           problem->alpha,
                           mode == AddendMode::kSum ? problem->beta : 0.0,
                           mode,
                           post_ops};
    auto& state = p.state<OneDnnGemmState>();
    if (!state.built || !(state.key == key)) {
      build(state, key, *packed);
    }
    if (!state.supported) {
      aten_kernel(p);
      return;
    }
    const at::Tensor a = problem->a.contiguous();
    at::Tensor& out = outputTensorLike(p, 0, problem->a);
    const at::Tensor out_view = resizeForGemm(out, *problem);
    if (key.addend == AddendMode::kSum) {
      out_view.copy_(problem->addend);
    }
    if (post_ops.residual_sum) {
      out.copy_(residual); // broadcasts a residual row or column
    }
    execute(state, p, a.data_ptr(),
            key.addend == AddendMode::kBias ? problem->addend.data_ptr() : nullptr,
            out_view.data_ptr());
  };
}

} // namespace srt::ops
