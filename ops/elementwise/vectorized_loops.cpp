// Picks the capability build of ops/elementwise/cpu/float_loops.cpp and splits large ranges over
// threads.
#include "ops/elementwise/vectorized_loops.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <ATen/Version.h>

#include "ops/core/parallelism.h"

namespace srt::ops::vec {

// One declaration per build of ops/elementwise/cpu/float_loops.cpp (cmake/CpuKernels.cmake).
#define SRT_DECLARE_CAPABILITY_LOOPS(capability)                                                   \
  namespace capability {                                                                           \
  void unaryLoop(UnaryOp op, const float* x, float* out, int64_t n, Params params);                \
  void fastUnaryLoop(UnaryOp op, float* x, int64_t n, Params params);                              \
  void binaryLoop(BinaryOp op, const float* x, const float* y, float* out, int64_t n,              \
                  Params params);                                                                  \
  void ternaryLoop(TernaryOp op, const float* x, const float* y, const float* z, float* out,       \
                   int64_t n);                                                                     \
  void softmaxRowsLoop(float* x, int64_t rows, int64_t n, int64_t ld);                             \
  void layerNormRowsLoop(const float* x, const float* gamma, const float* beta, float eps,         \
                         float* out, int64_t rows, int64_t n);                                     \
  float dotLoop(const float* x, const float* y, int64_t n);                                        \
  void rowTimesMatrixLoop(const float* x, const float* w, int64_t ld, const float* bias, float* y, \
                          int64_t k, int64_t n);                                                   \
  void scaleRowsLoop(const float* x, const float* scale, float* out, int64_t rows, int64_t n);     \
  void affineRowsLoop(const float* x, int64_t x_stride, const float* scale, const float* shift,    \
                      float* out, int64_t out_stride, int64_t rows, int64_t n);                    \
  void sumRowsLoop(const float* x, int64_t rows, int64_t n, float* sums);                          \
  }
SRT_DECLARE_CAPABILITY_LOOPS(DEFAULT)
SRT_DECLARE_CAPABILITY_LOOPS(AVX2)
SRT_DECLARE_CAPABILITY_LOOPS(AVX512)
#undef SRT_DECLARE_CAPABILITY_LOOPS

namespace {

struct Loops {
  const char* name;
  decltype(&DEFAULT::unaryLoop) unary;
  decltype(&DEFAULT::fastUnaryLoop) fast_unary;
  decltype(&DEFAULT::binaryLoop) binary;
  decltype(&DEFAULT::ternaryLoop) ternary;
  decltype(&DEFAULT::softmaxRowsLoop) softmax_rows;
  decltype(&DEFAULT::layerNormRowsLoop) layer_norm_rows;
  decltype(&DEFAULT::dotLoop) dot;
  decltype(&DEFAULT::rowTimesMatrixLoop) row_times_matrix;
  decltype(&DEFAULT::scaleRowsLoop) scale_rows;
  decltype(&DEFAULT::affineRowsLoop) affine_rows;
  decltype(&DEFAULT::sumRowsLoop) sum_rows;
};

#define SRT_CAPABILITY_LOOPS(capability)                                                           \
  Loops {                                                                                          \
#capability, capability::unaryLoop, capability::fastUnaryLoop, capability::binaryLoop,         \
        capability::ternaryLoop, capability::softmaxRowsLoop, capability::layerNormRowsLoop,       \
        capability::dotLoop, capability::rowTimesMatrixLoop, capability::scaleRowsLoop,            \
        capability::affineRowsLoop, capability::sumRowsLoop                                        \
  }
constexpr Loops kDefault = SRT_CAPABILITY_LOOPS(DEFAULT);
constexpr Loops kAvx2 = SRT_CAPABILITY_LOOPS(AVX2);
constexpr Loops kAvx512 = SRT_CAPABILITY_LOOPS(AVX512);
#undef SRT_CAPABILITY_LOOPS

bool cpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool cpuHasAvx512() {
  return cpuHasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

// ATen's choice (ATEN_CPU_CAPABILITY, else what the CPU has: Debian's 1.13 reports AVX2 on
// this project's AVX-512 machines). LibTorch 1.13 has no getter for it; its build report names it.
// Matching it keeps our results bit-identical to ATen's: the capabilities differ in Sleef routines.
const Loops& pickLoops() {
  const std::string report = at::show_config();
  const std::string key = "CPU capability usage: ";
  const size_t at = report.find(key);
  const std::string aten =
      at == std::string::npos
          ? std::string()
          : report.substr(at + key.size(), report.find('\n', at) - at - key.size());
  if (aten == "AVX512" && cpuHasAvx512()) {
    return kAvx512;
  }
  if ((aten == "AVX2" || aten.empty()) && cpuHasAvx2()) {
    return kAvx2;
  }
  return kDefault;
}

const Loops& loops() {
  static const Loops& chosen = pickLoops();
  return chosen;
}

// Sums of products owe ATen no bits (no Sleef routine in them, and ATen's GEMMs sum in another
// order anyway): they run on the widest vectors the CPU has.
const Loops& widestLoops() {
  static const Loops& chosen = cpuHasAvx512() ? kAvx512 : cpuHasAvx2() ? kAvx2 : kDefault;
  return chosen;
}

// ATen's at::internal::GRAIN_SIZE: the least a task gets once the work is split.
constexpr int64_t kGrainSize = 32768;

// n elements' work split over the intra-op threads when the cost model says it pays.
template <typename Body> void splitOverThreads(WorkerPool* workers, int64_t n, const Body& body) {
  splitIfWorthIt(workers, n, kGrainSize, static_cast<double>(n) * kNanosecondsPerElement, body);
}

} // namespace

void map(UnaryOp op, const float* x, float* out, int64_t n, Params params, WorkerPool* workers) {
  const auto fn = loops().unary;
  splitOverThreads(workers, n, [&](int64_t begin, int64_t end) {
    fn(op, x + begin, out + begin, end - begin, params);
  });
}

bool hasFastFormula(UnaryOp op) {
  return op == UnaryOp::kSigmoid || op == UnaryOp::kSilu;
}

void mapFast(UnaryOp op, float* x, int64_t n, Params params) {
  widestLoops().fast_unary(op, x, n, params);
}

void map(BinaryOp op, const float* x, const float* y, float* out, int64_t n, Params params,
         WorkerPool* workers) {
  const auto fn = loops().binary;
  splitOverThreads(workers, n, [&](int64_t begin, int64_t end) {
    fn(op, x + begin, y + begin, out + begin, end - begin, params);
  });
}

void map(TernaryOp op, const float* x, const float* y, const float* z, float* out, int64_t n,
         WorkerPool* workers) {
  const auto fn = loops().ternary;
  splitOverThreads(workers, n, [&](int64_t begin, int64_t end) {
    fn(op, x + begin, y + begin, z + begin, out + begin, end - begin);
  });
}

// Rows per task so that a task holds about kGrainSize floats.
template <typename Body>
void splitRowsOverThreads(int64_t rows, int64_t n, const Body& body,
                          WorkerPool* workers = nullptr) {
  splitIfWorthIt(workers, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, n)),
                 static_cast<double>(rows * n) * kNanosecondsPerElement, body);
}

// Softmax and layer norm owe ATen no bits either (softmax's exp is our polynomial, layer norm's
// sums run in an order of their own): the widest vectors. On AVX-512 machines whose ATen reports
// AVX2, vit_b_16's softmax took 4.4 ms of 340 on AVX2.
void softmaxRows(float* x, int64_t rows, int64_t n, int64_t ld) {
  const auto fn = widestLoops().softmax_rows;
  splitRowsOverThreads(rows, n,
                       [&](int64_t begin, int64_t end) { fn(x + begin * ld, end - begin, n, ld); });
}

void layerNormRows(const float* x, const float* gamma, const float* beta, float eps, float* out,
                   int64_t rows, int64_t n) {
  const auto fn = widestLoops().layer_norm_rows;
  splitRowsOverThreads(rows, n, [&](int64_t begin, int64_t end) {
    fn(x + begin * n, gamma, beta, eps, out + begin * n, end - begin, n);
  });
}

float dot(const float* x, const float* y, int64_t n) {
  return widestLoops().dot(x, y, n);
}

void rowTimesMatrix(const float* x, const float* w, int64_t ld, const float* bias, float* y,
                    int64_t k, int64_t n) {
  widestLoops().row_times_matrix(x, w, ld, bias, y, k, n);
}

void scaleRows(const float* x, const float* scale, int64_t scale_rows, float* out, int64_t blocks,
               int64_t rows, int64_t n, WorkerPool* workers) {
  const auto fn = widestLoops().scale_rows;
  splitRowsOverThreads(
      blocks * rows, n,
      [&](int64_t begin, int64_t end) {
        // Rows [begin, end) of all blocks, a block's part at a time.
        while (begin < end) {
          const int64_t block = begin / rows;
          const int64_t stop = std::min(end, (block + 1) * rows);
          fn(x + begin * n, scale + (block % scale_rows) * n, out + begin * n, stop - begin, n);
          begin = stop;
        }
      },
      workers);
}

void affineRows(const float* x, int64_t x_stride, const float* scale, const float* shift,
                float* out, int64_t out_stride, int64_t rows, int64_t n) {
  widestLoops().affine_rows(x, x_stride, scale, shift, out, out_stride, rows, n);
}

void sumRows(const float* x, int64_t rows, int64_t n, float* sums) {
  widestLoops().sum_rows(x, rows, n, sums);
}

void meanRows(const float* x, int64_t rows, int64_t n, float* means) {
  std::fill_n(means, n, 0.f);
  sumRows(x, rows, n, means);
  const float scale = 1.f / static_cast<float>(rows);
  for (int64_t i = 0; i < n; ++i) {
    means[i] *= scale;
  }
}

UnaryOp powFormula(double exponent, Params* params) {
  if (exponent == 0.0) {
    params->a = 1.f;
    return UnaryOp::kFill;
  }
  if (exponent == 1.0) {
    return UnaryOp::kCopy;
  }
  if (exponent == 0.5) {
    return UnaryOp::kSqrt;
  }
  if (exponent == -0.5) {
    return UnaryOp::kRsqrt;
  }
  if (exponent == -1.0) {
    return UnaryOp::kReciprocal;
  }
  if (exponent == 2.0) {
    return UnaryOp::kSquare;
  }
  if (exponent == 3.0) {
    return UnaryOp::kCube;
  }
  if (exponent == -2.0) {
    return UnaryOp::kInverseSquare;
  }
  params->a = static_cast<float>(exponent);
  return UnaryOp::kPow;
}

const char* capability() {
  return loops().name;
}

const char* widestCapability() {
  return widestLoops().name;
}

} // namespace srt::ops::vec
