// The attention ops the attention passes fuse into, as out-variant kernels:
//   srt::attention(q, k, v, mask, scale, mask_fills, causal)
//     = softmax(q @ kᵀ * scale [+ mask], -1) @ v
//   srt::multi_head_attention(x, w, b, H, ...) = the QKV projection (one GEMM with the three
//     weights concatenated), head split, attention and head merge of a standard MHA block.
// With mask_fills the mask is not added but sets the scores where it is True to -inf, as
// scores.masked_fill(mask, -inf) does (how causal and padding masks are often written); the flag,
// not the mask's dtype, decides, since `scores + bool_mask` adds 0/1 in eager code. With causal,
// scores of key j > query i are -inf as well (GPT-2's tril buffer, sliced [:T, :T]): no mask
// tensor is sliced, compared and read per call.
// Fast path (float32, BLAS-compatible strides): per (batch, head) one product for the scores
// straight from the strided queries (for MHA: from the [B*S, 3D] projection in scratch), mask and
// softmax row by row in place, and one product writing the context into its slice of the output.
// On AVX-512 both products run on our blocked GEMM, each head's kᵀ (scaled) and v packed into its
// column blocks in scratch first; elsewhere (or with transposed queries) OpenBLAS's sgemm reads
// the strided operands as they are.
// With several intra-op threads the heads are spread over them, each with its own score matrix.
// Anything else runs the ATen reference, which is also what the JIT runs for these ops.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/ops/resize_native.h>
#include <c10/util/SmallVector.h>
#include <c10/util/accumulate.h>
#include <cblas.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/out_variant.h"
#include "ops/core/parallelism.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/gemm/blocked_gemm.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/packed_linear.h"
#include "ops/gemm/threads.h"
#include "ops/shapes/transpose_copy.h"

namespace srt::ops {
namespace {

// ---- Reference implementations: what the JIT runs, and our fallback. -------------------------

at::Tensor attentionReference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const c10::optional<at::Tensor>& mask, double scale, bool mask_fills,
                              bool causal) {
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1));
  if (scale != 1.0) {
    scores = at::mul(scores, scale);
  }
  constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
  if (causal) {
    scores = scores.masked_fill(
        at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu(1), kMinusInf);
  }
  if (mask && mask_fills) {
    scores = scores.masked_fill(*mask, kMinusInf);
  } else if (mask) {
    scores = at::add(scores, *mask);
  }
  return at::matmul(at::softmax(scores, -1), v);
}

at::Tensor multiHeadAttentionReference(const at::Tensor& x, const at::Tensor& qkv_weight,
                                       const c10::optional<at::Tensor>& qkv_bias, int64_t num_heads,
                                       const c10::optional<at::Tensor>& mask, double scale,
                                       bool mask_fills, bool causal) {
  TORCH_CHECK(qkv_weight.dim() == 2 && qkv_weight.size(0) % 3 == 0,
              "srt::multi_head_attention: qkv_weight must be [3 * d_model, d_in], got ",
              qkv_weight.sizes());
  TORCH_CHECK(x.dim() >= 2, "srt::multi_head_attention: x must be [batch, seq, d_in], got ",
              x.sizes());
  const int64_t d_model = qkv_weight.size(0) / 3;
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "srt::multi_head_attention: d_model ",
              d_model, " is not a multiple of num_heads ", num_heads);
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  const at::Tensor qkv = at::linear(x, qkv_weight, qkv_bias);
  auto heads = [&](int64_t i) {
    return qkv.narrow(-1, i * d_model, d_model)
        .reshape({batch, seq, num_heads, d_model / num_heads})
        .permute({0, 2, 1, 3});
  };
  return attentionReference(heads(0), heads(1), heads(2), mask, scale, mask_fills, causal)
      .permute({0, 2, 1, 3})
      .reshape({batch, seq, d_model});
}

// ---- Strided float matrices as BLAS sees them. ------------------------------------------------

struct BlasOperand {
  CBLAS_TRANSPOSE transpose;
  int ld;
};

constexpr int64_t kMaxBlasInt = std::numeric_limits<int>::max();

// A [rows, cols] matrix with these strides as row-major BLAS sees it: as stored (ld = row stride)
// or as the transpose of a row-major [cols, rows] matrix (ld = column stride). The stride of a
// size-1 dimension is never used, so it may be anything.
std::optional<BlasOperand> blasOperand(int64_t rows, int64_t cols, int64_t row_stride,
                                       int64_t col_stride) {
  if (rows > kMaxBlasInt || cols > kMaxBlasInt) {
    return std::nullopt;
  }
  int64_t ld = -1;
  CBLAS_TRANSPOSE transpose = CblasNoTrans;
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(1, cols))) {
    ld = rows == 1 ? std::max<int64_t>(1, cols) : row_stride;
  } else if ((row_stride == 1 || rows == 1) &&
             (cols == 1 || col_stride >= std::max<int64_t>(1, rows))) {
    transpose = CblasTrans;
    ld = cols == 1 ? std::max<int64_t>(1, rows) : col_stride;
  }
  if (ld < 0 || ld > kMaxBlasInt) {
    return std::nullopt;
  }
  return BlasOperand{transpose, static_cast<int>(ld)};
}

// The mask broadcast to the scores' shape [batch..., sq, sk] (PyTorch's broadcasting: aligned on
// the right, size-1 dimensions repeat): stride 0 along every broadcast dimension.
struct MaskLayout {
  const float* data = nullptr;     // a float mask, added
  const bool* bool_data = nullptr; // or a boolean one: True -> -inf
  c10::SmallVector<int64_t, 4> batch_strides;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

// std::nullopt when the fast path cannot apply this mask: not float32 (added) or bool (filling),
// or broadcasting it would change the scores' shape (ATen would then grow the result, or raise).
std::optional<MaskLayout> maskLayout(const c10::IValue& mask, at::IntArrayRef scores_sizes,
                                     bool fills) {
  MaskLayout layout;
  if (mask.isNone()) {
    return layout;
  }
  const at::Tensor& m = mask.toTensor();
  const int64_t dims = static_cast<int64_t>(scores_sizes.size());
  const bool is_bool = m.scalar_type() == at::kBool;
  if (m.scalar_type() != (fills ? at::kBool : at::kFloat) || !m.is_cpu() || m.dim() > dims) {
    return std::nullopt;
  }
  c10::SmallVector<int64_t, 6> strides(dims, 0);
  for (int64_t d = 0; d < m.dim(); ++d) {
    const int64_t target = dims - m.dim() + d;
    if (m.size(d) != scores_sizes[target] && m.size(d) != 1) {
      return std::nullopt;
    }
    strides[target] = m.size(d) == 1 ? 0 : m.stride(d);
  }
  if (is_bool) {
    layout.bool_data = m.data_ptr<bool>();
  } else {
    layout.data = m.data_ptr<float>();
  }
  layout.batch_strides.assign(strides.begin(), strides.end() - 2);
  layout.row_stride = strides[dims - 2];
  layout.col_stride = strides[dims - 1];
  return layout;
}

// Offset of flat batch index `flat` (row-major over `sizes`) in a tensor with `strides`.
int64_t batchOffset(int64_t flat, at::IntArrayRef sizes, at::IntArrayRef strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    offset += (flat % sizes[d]) * strides[d];
    flat /= sizes[d];
  }
  return offset;
}

// ---- One (batch, head): scores, mask, softmax, context. ----------------------------------------

struct HeadShape {
  int64_t sq; // query rows
  int64_t sk; // key rows (> 0)
  int64_t dk; // query/key features (> 0)
  int64_t dv; // value features
  float scale;
  BlasOperand q{};  // [sq, dk]
  BlasOperand kt{}; // kᵀ: [dk, sk]
  BlasOperand v{};  // [sk, dv]
  int64_t mask_row_stride = 0;
  int64_t mask_col_stride = 0;
  bool causal = false; // keys after the query's own row are masked
};

constexpr int64_t kFloatsPerLine = 64 / sizeof(float);

int64_t roundToLine(int64_t floats) {
  return (floats + kFloatsPerLine - 1) / kFloatsPerLine * kFloatsPerLine;
}

// Whether a head's two products run on our blocked GEMM (ops/gemm/blocked_gemm.h) rather than
// OpenBLAS: on AVX-512, with the queries' rows as stored. OpenBLAS multiplied vit_b_16's heads
// (197 x 197 x 64) at 60 GFLOP/s; the blocked kernel's register tiles need kᵀ and v in its
// column blocks, which each head packs first (kᵀ scaled, so the scale costs nothing).
bool blockedHead(const HeadShape& s) {
  return blockedGemmRuns() && s.q.transpose == CblasNoTrans;
}

int64_t columnBlocks(int64_t columns) {
  return (columns + kBlockedGemmWidth - 1) / kBlockedGemmWidth;
}

// The score matrix's row stride: whole cache lines, so that no row's stores, softmax passes and
// reads straddle lines (12 heads of 197 keys: 1.01-1.03 ms so, 1.12-1.17 with rows of 197 floats).
int64_t scoreStride(const HeadShape& s) {
  return roundToLine(s.sk);
}

// Floats of scratch attendHead needs per head: its score matrix, and for blockedHead kᵀ and v
// packed.
int64_t headScratchFloats(const HeadShape& s) {
  int64_t floats = s.sq * scoreStride(s);
  if (blockedHead(s)) {
    floats += roundToLine(columnBlocks(s.sk) * kBlockedGemmWidth * s.dk) +
              columnBlocks(s.dv) * kBlockedGemmWidth * s.sk;
  }
  return floats;
}

// kᵀ * scale ([dk, sk]) in the blocked GEMM's layout: keys [64 b, 64 b + 64) as block b, a
// row-major [dk, 64] matrix; the last block's columns past sk zero. Keys stored as rows (k, as
// projections make them) are transposed 16 x 16 in registers (ops/shapes/transpose_copy.h; one
// float at a time this packing took 7% of vit_b_16's attention), kᵀ stored is copied by rows;
// then each row is scaled where it lies.
void packScaledKeys(const HeadShape& s, const float* k, float* packed) {
  const int64_t width = kBlockedGemmWidth;
  const int64_t blocks = columnBlocks(s.sk);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * width;
    const int64_t keys = std::min(width, s.sk - first);
    float* block = packed + b * s.dk * width;
    if (s.kt.transpose == CblasNoTrans) {
      for (int64_t d = 0; d < s.dk; ++d) {
        std::memcpy(block + d * width, k + d * s.kt.ld + first, keys * sizeof(float));
      }
    } else {
      transposeMatrix(k + first * s.kt.ld, s.kt.ld, block, width, keys, s.dk);
    }
    for (int64_t d = 0; d < s.dk; ++d) {
      float* row = block + d * width;
      for (int64_t j = 0; j < keys; ++j) {
        row[j] *= s.scale;
      }
      std::fill(row + keys, row + width, 0.f);
    }
  }
}

// v ([sk, dv]) in the blocked GEMM's layout: features [64 b, 64 b + 64) as block b, a row-major
// [sk, 64] matrix; the last block's columns past dv zero.
void packValues(const HeadShape& s, const float* v, float* packed) {
  const int64_t width = kBlockedGemmWidth;
  for (int64_t b = 0; b < columnBlocks(s.dv); ++b) {
    const int64_t first = b * width;
    const int64_t columns = std::min(width, s.dv - first);
    for (int64_t j = 0; j < s.sk; ++j) {
      float* row = packed + (b * s.sk + j) * width;
      if (s.v.transpose == CblasNoTrans) {
        std::memcpy(row, v + j * s.v.ld + first, columns * sizeof(float));
      } else {
        for (int64_t c = 0; c < columns; ++c) {
          row[c] = v[(first + c) * s.v.ld + j];
        }
      }
      std::fill(row + columns, row + width, 0.f);
    }
  }
}

// `product` = a [m, k] (rows lda apart) times `packed` ([k, n] in column blocks) into out (rows
// ldo apart), on this thread.
void multiplyPacked(const float* a, int64_t lda, int64_t m, const float* packed, int64_t k,
                    int64_t n, float* out, int64_t ldo) {
  BlockedGemm gemm;
  gemm.a = a;
  gemm.lda = lda;
  gemm.m = m;
  gemm.w = packed;
  gemm.k = k;
  gemm.n = n;
  gemm.block_stride = k * kBlockedGemmWidth;
  gemm.out = out;
  gemm.ldo = ldo;
  runBlockedGemmOnThisThread(gemm);
}

// One head's part of the mask: at most one of the two is set.
struct HeadMask {
  const float* add = nullptr;
  const bool* fill = nullptr;
};

HeadMask headMask(const MaskLayout& layout, int64_t offset) {
  return {layout.data == nullptr ? nullptr : layout.data + offset,
          layout.bool_data == nullptr ? nullptr : layout.bool_data + offset};
}

// `scores` holds headScratchFloats(s) floats. `out` is [sq, dv] with row stride out_ld.
void attendHead(const HeadShape& s, const float* q, const float* k, const float* v,
                HeadMask head_mask, float* scores, float* out, int64_t out_ld) {
  const int64_t ld = scoreStride(s);
  float* packed_keys = scores + s.sq * ld;
  float* packed_values = packed_keys + roundToLine(columnBlocks(s.sk) * kBlockedGemmWidth * s.dk);
  const bool blocked = blockedHead(s);
  if (blocked) {
    packScaledKeys(s, k, packed_keys);
    multiplyPacked(q, s.q.ld, s.sq, packed_keys, s.dk, s.sk, scores, ld);
  } else {
    cblas_sgemm(CblasRowMajor, s.q.transpose, s.kt.transpose, s.sq, s.sk, s.dk, s.scale, q, s.q.ld,
                k, s.kt.ld, 0.f, scores, ld);
  }
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  if (s.causal) {
    for (int64_t i = 0; i + 1 < s.sk && i < s.sq; ++i) {
      std::fill(scores + i * ld + i + 1, scores + i * ld + s.sk, kMinusInf);
    }
  }
  if (head_mask.fill != nullptr) {
    for (int64_t i = 0; i < s.sq; ++i) {
      float* row = scores + i * ld;
      const bool* mask_row = head_mask.fill + i * s.mask_row_stride;
      for (int64_t j = 0; j < s.sk; ++j) {
        row[j] = mask_row[j * s.mask_col_stride] ? kMinusInf : row[j];
      }
    }
  }
  if (const float* mask = head_mask.add; mask != nullptr) {
    if (s.mask_col_stride == 1 && ((s.mask_row_stride == s.sk && ld == s.sk) || s.sq == 1)) {
      // A dense [sq, sk] block: one call.
      vec::map(vec::BinaryOp::kAdd, scores, mask, scores, s.sq * s.sk, {1.f});
    } else {
      for (int64_t i = 0; i < s.sq; ++i) {
        float* row = scores + i * ld;
        const float* mask_row = mask + i * s.mask_row_stride;
        if (s.mask_col_stride == 1) {
          vec::map(vec::BinaryOp::kAdd, row, mask_row, row, s.sk, {1.f});
        } else {
          for (int64_t j = 0; j < s.sk; ++j) {
            row[j] += mask_row[j * s.mask_col_stride];
          }
        }
      }
    }
  }
  vec::softmaxRows(scores, s.sq, s.sk, ld);
  if (blocked) {
    packValues(s, v, packed_values);
    multiplyPacked(scores, ld, s.sq, packed_values, s.sk, s.dv, out, out_ld);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, s.v.transpose, s.sq, s.dv, s.sk, 1.f, scores, ld, v,
                s.v.ld, 0.f, out, out_ld);
  }
}

// ---- Heads over the intra-op threads. ----------------------------------------------------------

// How many score matrices forEachHead needs: one per thread it may run on.
int64_t scoreMatrices() {
  return at::in_parallel_region() ? 1 : at::get_num_threads();
}

// attend(head, scores) for every head in [0, heads), each thread with its own score matrix of
// `score_floats` floats from `scores` (scoreMatrices() of them). With several threads, and heads
// of shape `s` large enough to pay for waking them (ops/core/parallelism.h), the heads are spread
// over them and each GEMM runs on its caller's thread: a head's GEMMs are too small to split
// (128 x 128 x 16 in the zoo), and OpenBLAS's pool cannot serve several callers at once.
template <typename Attend>
void forEachHead(int64_t heads, const HeadShape& s, float* scores, int64_t score_floats,
                 const Attend& attend) {
  const int64_t matrices = scoreMatrices();
  const double multiply_adds = static_cast<double>(heads) * s.sq * s.sk * (s.dk + s.dv);
  if (matrices == 1 || heads == 1 || !worthSplitting(multiply_adds * kNanosecondsPerMultiplyAdd)) {
    useAtenThreadsForOpenBlas();
    for (int64_t head = 0; head < heads; ++head) {
      attend(head, scores);
    }
    return;
  }
  openblas_set_num_threads(1);
  at::parallel_for(0, heads, 1, [&](int64_t begin, int64_t end) {
    const int64_t thread = at::in_parallel_region() ? at::get_thread_num() : 0;
    TORCH_INTERNAL_ASSERT(thread < matrices, "srt attention: thread ", thread, " of ", matrices);
    float* own = scores + thread * score_floats;
    for (int64_t head = begin; head < end; ++head) {
      attend(head, own);
    }
  });
}

// ---- srt::attention ----------------------------------------------------------------------------

bool isFloatCpu(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.is_cpu();
}

void attention(ProcessedNode& p) {
  const at::Tensor& q = p.input(0).toTensor();
  const at::Tensor& k = p.input(1).toTensor();
  const at::Tensor& v = p.input(2).toTensor();
  const c10::IValue& mask = p.input(3);
  const double scale = p.input(4).toDouble();
  const bool mask_fills = p.input(5).toBool();
  const bool causal = p.input(6).toBool();
  auto reference = [&] {
    p.output(0) =
        attentionReference(q, k, v, mask.toOptional<at::Tensor>(), scale, mask_fills, causal);
  };

  const int64_t dims = q.dim();
  if (!isFloatCpu(q) || !isFloatCpu(k) || !isFloatCpu(v) || dims < 2 || k.dim() != dims ||
      v.dim() != dims || q.sizes().slice(0, dims - 2) != k.sizes().slice(0, dims - 2) ||
      q.sizes().slice(0, dims - 2) != v.sizes().slice(0, dims - 2) || q.size(-1) != k.size(-1) ||
      k.size(-2) != v.size(-2)) {
    reference();
    return;
  }
  const at::IntArrayRef batch_sizes = q.sizes().slice(0, dims - 2);
  HeadShape s{q.size(-2), k.size(-2), q.size(-1), v.size(-1), static_cast<float>(scale)};
  s.causal = causal;
  c10::SmallVector<int64_t, 6> scores_sizes(batch_sizes.begin(), batch_sizes.end());
  scores_sizes.append({s.sq, s.sk});
  const auto q_op = blasOperand(s.sq, s.dk, q.stride(-2), q.stride(-1));
  const auto kt_op = blasOperand(s.dk, s.sk, k.stride(-1), k.stride(-2));
  const auto v_op = blasOperand(s.sk, s.dv, v.stride(-2), v.stride(-1));
  const auto mask_layout = maskLayout(mask, scores_sizes, mask_fills);
  // An empty key set or feature dimension: BLAS rejects the zero leading dimensions, and softmax
  // over no keys is ATen's business; both are degenerate enough to not need speed.
  if (!q_op || !kt_op || !v_op || !mask_layout || s.sk == 0 || s.dk == 0 || s.dv > kMaxBlasInt) {
    reference();
    return;
  }
  s.q = *q_op;
  s.kt = *kt_op;
  s.v = *v_op;
  s.mask_row_stride = mask_layout->row_stride;
  s.mask_col_stride = mask_layout->col_stride;

  c10::SmallVector<int64_t, 6> out_sizes(batch_sizes.begin(), batch_sizes.end());
  out_sizes.append({s.sq, s.dv});
  at::Tensor& out = outputTensorLike(p, 0, q);
  at::native::resize_(out, out_sizes, c10::nullopt);
  if (out.numel() == 0) {
    return;
  }
  const int64_t score_floats = roundToLine(headScratchFloats(s));
  auto* scores = static_cast<float*>(p.scratch(scoreMatrices() * score_floats * sizeof(float)));
  const float* q_data = q.data_ptr<float>();
  const float* k_data = k.data_ptr<float>();
  const float* v_data = v.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  const int64_t batches = c10::multiply_integers(batch_sizes);
  forEachHead(batches, s, scores, score_floats, [&](int64_t b, float* head_scores) {
    const HeadMask mask_data =
        headMask(*mask_layout, batchOffset(b, batch_sizes, mask_layout->batch_strides));
    attendHead(s, q_data + batchOffset(b, batch_sizes, q.strides()),
               k_data + batchOffset(b, batch_sizes, k.strides()),
               v_data + batchOffset(b, batch_sizes, v.strides()), mask_data, head_scores,
               out_data + b * s.sq * s.dv, s.dv);
  });
}

// ---- srt::multi_head_attention -----------------------------------------------------------------

// The QKV projection's weight [3 * d_model, d_in]: the node's plain tensor input, packed for
// oneDNN as well when it is a constant and the module uses oneDNN (`packed`); or only packed
// (srt::multi_head_attention.packed, `plain` undefined).
struct QkvWeight {
  at::Tensor plain;
  const OneDnnPackedWeight* packed = nullptr;

  int64_t outputs() const { return plain.defined() ? plain.size(0) : packedShape(*packed).second; }
  int64_t inputs() const { return plain.defined() ? plain.size(1) : packedShape(*packed).first; }
  // [3 * d_model, d_in] as a tensor, for the reference (a new one when only packed).
  at::Tensor tensor() const { return plain.defined() ? plain : unpackOneDnnWeight(*packed).t(); }
};

void multiHeadAttention(ProcessedNode& p, const at::Tensor& x, const QkvWeight& weight) {
  const c10::IValue& bias_value = p.input(2);
  const int64_t heads = p.input(3).toInt();
  const c10::IValue& mask = p.input(4);
  const double scale = p.input(5).toDouble();
  const bool mask_fills = p.input(6).toBool();
  const bool causal = p.input(7).toBool();
  auto reference = [&] {
    p.output(0) =
        multiHeadAttentionReference(x, weight.tensor(), bias_value.toOptional<at::Tensor>(), heads,
                                    mask.toOptional<at::Tensor>(), scale, mask_fills, causal);
  };

  const bool has_bias = !bias_value.isNone();
  const at::Tensor bias = has_bias ? bias_value.toTensor() : at::Tensor();
  const at::Tensor& plain = weight.plain;
  if (!isFloatCpu(x) || x.dim() != 3 ||
      (plain.defined() && (!isFloatCpu(plain) || plain.dim() != 2 || !plain.is_contiguous())) ||
      weight.outputs() % 3 != 0 || weight.inputs() != x.size(2) ||
      (has_bias && (!isFloatCpu(bias) || bias.dim() != 1 || bias.size(0) != weight.outputs() ||
                    !bias.is_contiguous()))) {
    reference();
    return;
  }
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  const int64_t d_in = x.size(2);
  const int64_t d_model = weight.outputs() / 3;
  if (heads <= 0 || d_model % heads != 0) {
    reference(); // raises the reference's error
    return;
  }
  const int64_t head_dim = d_model / heads;
  const int64_t rows = batch * seq;
  const std::array<int64_t, 4> scores_sizes{batch, heads, seq, seq};
  const auto mask_layout = maskLayout(mask, scores_sizes, mask_fills);
  // x as [seq, d_in] rows per batch: unit column stride, and a row stride BLAS accepts.
  const int64_t x_ld = seq == 1 ? std::max<int64_t>(1, d_in) : x.stride(1);
  if (!mask_layout || d_in == 0 || (x.stride(2) != 1 && d_in != 1) || x_ld < d_in ||
      x_ld > kMaxBlasInt || rows > kMaxBlasInt || 3 * d_model > kMaxBlasInt) {
    reference();
    return;
  }

  at::Tensor& out = outputTensorLike(p, 0, x);
  at::native::resize_(out, {batch, seq, d_model}, c10::nullopt);
  if (out.numel() == 0) {
    return;
  }
  // Each head reads its columns of the projection in place (row stride 3 * d_model) and writes
  // its context into columns [h * head_dim, (h + 1) * head_dim) of the output (row stride d_model).
  const int64_t qkv_ld = 3 * d_model;
  const BlasOperand q_op{CblasNoTrans, static_cast<int>(qkv_ld)};
  const BlasOperand kt_op{CblasTrans, static_cast<int>(qkv_ld)};
  const HeadShape s{seq,
                    seq,
                    head_dim,
                    head_dim,
                    static_cast<float>(scale),
                    q_op,
                    kt_op,
                    q_op,
                    mask_layout->row_stride,
                    mask_layout->col_stride,
                    causal};

  const float* x_data = x.data_ptr<float>();
  const float* bias_data = has_bias ? bias.data_ptr<float>() : nullptr;
  // The rows of x as one dense [batch * seq, d_in] matrix, which oneDNN takes.
  const bool dense_rows = x_ld == d_in && (batch == 1 || x.stride(0) == seq * d_in);
  const OneDnnThreads onednn_threads(rows * d_in * qkv_ld);
  std::optional<size_t> onednn_scratchpad;
  if (weight.packed != nullptr && dense_rows) {
    onednn_scratchpad = prepareOneDnnGemm(p, *weight.packed, rows, has_bias, onednn_threads);
  }
  if (!onednn_scratchpad && !plain.defined()) {
    // Only oneDNN can read a weight that exists only packed: rows made dense first, or ATen's.
    if (!dense_rows && !x.is_contiguous()) {
      multiHeadAttention(p, x.contiguous(), weight);
      return;
    }
    reference();
    return;
  }
  // One scratch request: the [rows, 3 * d_model] projection, a score block per thread, then
  // oneDNN's scratchpad.
  const int64_t qkv_floats = roundToLine(rows * qkv_ld);
  const int64_t score_floats = roundToLine(headScratchFloats(s));
  const int64_t attention_floats = qkv_floats + scoreMatrices() * score_floats;
  auto* qkv = static_cast<float*>(
      p.scratch(attention_floats * sizeof(float) + onednn_scratchpad.value_or(0)));
  float* scores = qkv + qkv_floats;

  if (onednn_scratchpad) {
    runOneDnnGemm(p, x_data, bias_data, qkv, qkv + attention_floats);
  } else {
    // qkv = x @ weightᵀ + bias: sgemm adds into C (beta = 1) pre-filled with the bias rows.
    if (has_bias) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(qkv + r * qkv_ld, bias_data, qkv_ld * sizeof(float));
      }
    }
    useAtenThreadsForOpenBlas();
    const float* w_data = plain.data_ptr<float>();
    const float beta = has_bias ? 1.f : 0.f;
    if (batch == 1 || x.stride(0) == seq * x_ld) {
      // The batches are one [batch * seq, d_in] matrix: one GEMM.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, qkv_ld, d_in, 1.f, x_data, x_ld,
                  w_data, d_in, beta, qkv, qkv_ld);
    } else {
      for (int64_t b = 0; b < batch; ++b) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq, qkv_ld, d_in, 1.f,
                    x_data + b * x.stride(0), x_ld, w_data, d_in, beta, qkv + b * seq * qkv_ld,
                    qkv_ld);
      }
    }
  }

  float* out_data = out.data_ptr<float>();
  const std::array<int64_t, 2> batch_sizes{batch, heads};
  forEachHead(batch * heads, s, scores, score_floats, [&](int64_t pair, float* head_scores) {
    const int64_t b = pair / heads;
    const int64_t h = pair % heads;
    const HeadMask mask_data =
        headMask(*mask_layout, batchOffset(pair, batch_sizes, mask_layout->batch_strides));
    const float* q_h = qkv + b * seq * qkv_ld + h * head_dim;
    attendHead(s, q_h, q_h + d_model, q_h + 2 * d_model, mask_data, head_scores,
               out_data + b * seq * d_model + h * head_dim, d_model);
  });
}

constexpr const char* kAttentionSchema = "srt::attention(Tensor q, Tensor k, Tensor v, Tensor? "
                                         "mask, float scale, bool mask_fills, bool causal) -> "
                                         "Tensor";

constexpr const char* kMultiHeadAttentionSchema =
    "srt::multi_head_attention(Tensor x, Tensor qkv_weight, Tensor? qkv_bias, int num_heads, "
    "Tensor? mask, float scale, bool mask_fills, bool causal) -> Tensor";

// With oneDNN, a constant QKV weight is packed once here, when the module is built, as for
// srt::fused_linear: the projection is most of the node's arithmetic.
std::optional<KernelFunction> multiHeadAttentionFactory(const torch::jit::Node* node,
                                                        const KernelOptions& options) {
  if (!node->matches(kMultiHeadAttentionSchema)) {
    return std::nullopt;
  }
  std::shared_ptr<const OneDnnPackedWeight> packed;
  if (options.gemm_backend == GemmBackend::kOneDnn) {
    const auto weight = torch::jit::toIValue(node->input(1));
    if (weight && weight->isTensor() && weight->toTensor().dim() == 2) {
      packed = packOneDnnWeight(weight->toTensor().t());
    }
  }
  return [packed](ProcessedNode& p) {
    multiHeadAttention(p, p.input(0).toTensor(), {p.input(1).toTensor(), packed.get()});
  };
}

// The QKV weight held only packed (passes/linear_weight_packing.cpp), as for
// srt::fused_linear.packed.
constexpr const char* kPackedMultiHeadAttentionSchema =
    "srt::multi_head_attention.packed(Tensor x, __torch__.torch.classes.srt.LinearWeight "
    "qkv_weight, Tensor? qkv_bias, int num_heads, Tensor? mask, float scale, bool mask_fills, "
    "bool causal) -> Tensor";

at::Tensor packedMultiHeadAttentionReference(
    const at::Tensor& x, const c10::intrusive_ptr<PackedLinearWeight>& qkv_weight,
    const c10::optional<at::Tensor>& qkv_bias, int64_t num_heads,
    const c10::optional<at::Tensor>& mask, double scale, bool mask_fills, bool causal) {
  TORCH_CHECK(qkv_weight, "srt::multi_head_attention.packed: the packed weight is None");
  return multiHeadAttentionReference(x, unpackOneDnnWeight(*qkv_weight->packed).t(), qkv_bias,
                                     num_heads, mask, scale, mask_fills, causal);
}

std::optional<KernelFunction> packedMultiHeadAttentionFactory(const torch::jit::Node* node,
                                                              const KernelOptions&) {
  if (!node->matches(kPackedMultiHeadAttentionSchema)) {
    return std::nullopt;
  }
  const auto weight = torch::jit::toIValue(node->input(1));
  if (!weight || !weight->isCustomClass()) {
    return std::nullopt;
  }
  return [packed = weight->toCustomClass<PackedLinearWeight>()->packed](ProcessedNode& p) {
    multiHeadAttention(p, p.input(0).toTensor(), {at::Tensor(), packed.get()});
  };
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema(kAttentionSchema, c10::AliasAnalysisKind::FROM_SCHEMA), attentionReference);
  m.def(torch::schema(kMultiHeadAttentionSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        multiHeadAttentionReference);
  registerLinearWeightClass(); // first: the schema names it
  m.def(torch::schema(kPackedMultiHeadAttentionSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        packedMultiHeadAttentionReference);
}

SRT_REGISTER_KERNEL("srt::attention", kOutVariant, whenMatches(kAttentionSchema, attention));
SRT_REGISTER_KERNEL("srt::multi_head_attention", kOutVariant, multiHeadAttentionFactory);
SRT_REGISTER_KERNEL("srt::multi_head_attention", kOutVariant, packedMultiHeadAttentionFactory);

} // namespace srt::ops
