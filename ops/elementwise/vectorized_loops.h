// Element-wise float32 loops over contiguous memory, with at::vec::Vectorized and no
// TensorIterator: the fast path of the element-wise out-variant kernels.
#pragma once

#include <string_view>

#include <cstdint>

namespace srt::ops {
class WorkerPool;
} // namespace srt::ops

namespace srt::ops::vec {

// The element-wise formulas, by arity: the one list of them that the unfused kernels, the fused
// bytecode (ops/elementwise/fused_bytecode.h) and the GEMM epilogues (ops/gemm/epilogue.h) name.
// Each is written once (ops/elementwise/cpu/formulas.h), as ATen 1.13's vectorized CPU kernel for
// the op, and on the capability ATen uses gives bit-identical results (measured on 10^5 values),
// with two exceptions within 5e-7: gelu "none" (ATen hands contiguous float32 to oneDNN) and a
// general pow exponent (ATen computes the last partial vector with std::pow).
//
// out[i] = f(x[i]) with parameters a, b.
enum class UnaryOp : uint8_t {
  kRelu,
  kSigmoid,
  kTanh,
  kGelu,     // approximate="none"
  kGeluTanh, // approximate="tanh"
  kSilu,
  kHardswish,
  kHardsigmoid,
  kLeakyRelu, // a: negative slope
  kClamp,     // a: min, b: max
  kClampMin,  // a: min
  kClampMax,  // b: max
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kSquare,
  kCube,
  kNeg,
  kAbs,
  kInverseSquare, // 1 / (x * x)
  kPow,           // x ** a
  kFill,          // a
  kCopy,
  kAddScalar, // x + a * b  (b: alpha)
  kMulScalar, // x * a
  kDivScalar, // x / a
  kAffine,    // x * a + b
};

// out[i] = f(x[i], y[i]) with parameter a.
enum class BinaryOp : uint8_t {
  kAdd, // x + y * a  (a: alpha; sub passes -alpha)
  kMul,
  kDiv,
  kPow,
  // 1.0 where true, 0.0 where false: a mask, only ever read as kWhere's condition.
  kGt,
  kLt,
  kGe,
  kLe,
  kEq,
  kNe,
};

// out[i] = f(x[i], y[i], z[i]).
enum class TernaryOp : uint8_t {
  kMulAdd, // x * y + z
  kWhere,  // x != 0 ? y : z
};

struct Params {
  float a = 0.f;
  float b = 0.f;
};

// The formula ATen's pow(float32 tensor, exponent) runs: it special-cases 0, 1, 0.5, -0.5, -1, 2, 3
// and -2 (compared in double, as ATen does) with kernels of their own; any other exponent is kPow
// with `params->a` set.
UnaryOp powFormula(double exponent, Params* params);

// The loops below, over `n` contiguous floats; `out` may be one of the inputs. Above ATen's grain
// size (32768 elements) the range is split over the intra-op threads, as ATen splits its own: the
// runtime's own `workers` where the caller has them (ProcessedNode::workers), else OpenMP's.
void map(UnaryOp op, const float* x, float* out, int64_t n, Params params = {},
         WorkerPool* workers = nullptr);
void map(BinaryOp op, const float* x, const float* y, float* out, int64_t n, Params params = {},
         WorkerPool* workers = nullptr);
void map(TernaryOp op, const float* x, const float* y, const float* z, float* out, int64_t n,
         WorkerPool* workers = nullptr);

// In place over n contiguous floats, on the caller's thread: sigmoid, silu (x * sigmoid), tanh
// and gelu with the fast formulas (ops/elementwise/cpu/polynomial_exp.h: fastSigmoid within 2e-7
// of ATen's and about three times as fast), on the widest capability. For epilogues that owe
// ATen no bits. Other ops: map()'s formula, with `params`. hasFastFormula: the ops a
// convolution's epilogue applies this way rather than as oneDNN's post-op (sigmoid and silu,
// where the post-op measured slower).
bool hasFastFormula(UnaryOp op);
void mapFast(UnaryOp op, float* x, int64_t n, Params params = {});

// Row-wise kernels over `rows` contiguous rows of `n` floats, rows split over the intra-op threads
// when there are enough of them. One call for a whole block of rows: the small rows of attention
// and transformer layers (16 to 128 floats) cost less than a call each.
// Each row replaced by its softmax: exp(x - max) * (1 / sum), as ATen's last-dimension softmax,
// with a polynomial exp within 2 ulp of expf (ATen's is within 1): -inf keys give exactly 0.
// Rows `ld` floats apart (ld >= n: a row stride rounded up to whole vectors keeps every row's
// loads and stores aligned).
void softmaxRows(float* x, int64_t rows, int64_t n, int64_t ld);
// out = (x - mean) * rstd * gamma + beta per row, rstd = 1 / sqrt(biased variance + eps); gamma
// and beta are n floats or nullptr (then 1 and 0). `out` may be `x`.
void layerNormRows(const float* x, const float* gamma, const float* beta, float eps, float* out,
                   int64_t rows, int64_t n);

// sum(x[i] * y[i]) over n contiguous floats, in vector-width partial sums (so not in ATen's
// order: within float rounding of it). One call per product; never split over threads.
float dot(const float* x, const float* y, int64_t n);

// y = bias + x @ w for one row x of k floats: w is [k, ld] row-major with its first n columns
// the matrix and the rest zero, ld a multiple of kRowTimesMatrixAlignment (so every capability
// reads whole vectors); bias is n floats or nullptr. Sums in k order per column. For the small
// single-row products where a library call's fixed cost is most of the time. w (with bias and y)
// may start at a column that is a multiple of kRowTimesMatrixAlignment: a slice of the columns,
// what threads split the product into.
constexpr int64_t kRowTimesMatrixAlignment = 16;
void rowTimesMatrix(const float* x, const float* w, int64_t ld, const float* bias, float* y,
                    int64_t k, int64_t n);

// out[b, r, i] = x[b, r, i] * scale[b % scale_rows, i] over `blocks` contiguous blocks of `rows`
// rows of n floats: an image times one factor per channel (squeeze-excitation's scaling), channels
// last (a block per image of [H * W, C]) or channel-blocked (a block per image and 16 channels of
// [H * W, 16]), its factors per image or shared by all. One product per element, so ATen's bits
// on any capability: it runs on the widest, all blocks' rows split over the intra-op threads at
// once (`workers` as for map).
void scaleRows(const float* x, const float* scale, int64_t scale_rows, float* out, int64_t blocks,
               int64_t rows, int64_t n, WorkerPool* workers = nullptr);

// out[r][i] = x[r][i] * scale[i] + shift[i] for `rows` rows of n floats, x's rows x_stride floats
// apart and out's out_stride (a channels-last image's channels [c, c + n) among more): one
// channel range of a concatenation normalized into its place. On the calling thread.
void affineRows(const float* x, int64_t x_stride, const float* scale, const float* shift,
                float* out, int64_t out_stride, int64_t rows, int64_t n);

// sums[i] += x[0, i] + x[1, i] + ... over `rows` contiguous rows of n floats, each column summed
// in row order (the same bits on any capability, so on the widest). On the caller's thread.
void sumRows(const float* x, int64_t rows, int64_t n, float* sums);

// means[i] = (x[0, i] + x[1, i] + ...) / rows over `rows` contiguous rows of n floats: sumRows'
// sums, each then multiplied by 1 / rows (a global average pool's channels). On the caller's
// thread.
void meanRows(const float* x, int64_t rows, int64_t n, float* means);

// The CPU capability whose build of the loops runs: "DEFAULT", "AVX2" or "AVX512"; ATen's, so
// that element-wise results are ATen's to the bit.
const char* capability();

// The widest capability the CPU has: what loops owing ATen no bits run on (dot, rowTimesMatrix
// and other sums of products, within rounding of ATen's whatever the capability; the recurrent
// kernels, whose gates' inputs already differ from ATen's by those products' rounding).
const char* widestCapability();

// Of a loop's builds for the three capabilities (ops/*/cpu/, cmake/CpuKernels.cmake), the one
// widestCapability() names.
template <typename T> T widestOf(T default_build, T avx2_build, T avx512_build) {
  const std::string_view name = widestCapability();
  return name == "AVX512" ? avx512_build : name == "AVX2" ? avx2_build : default_build;
}

} // namespace srt::ops::vec
