// What kernel factories may be asked for, fixed when the module is built.
#pragma once

#include "ops/core/multiply_precision.h"

namespace srt::ops {

enum class GemmBackend {
  kOneDnn,   // oneDNN matmul/inner-product with the weight pre-packed at build time
  kOpenBlas, // cblas_sgemm
  kAten,     // ATen's own out-variant (mm_out / addmm_out ...)
};

const char* toString(GemmBackend backend);

struct KernelOptions {
  // When false, out-variant factories are skipped (StaticModuleOptions::enable_out_variant).
  bool enable_out_variant = true;
  GemmBackend gemm_backend = GemmBackend::kOneDnn;
  // What the products of weights a kernel factory packs itself (the recurrent layers') multiply
  // in; the weights the packing passes make are repacked by passes/bf16_weights.cpp instead.
  MultiplyPrecision weight_precision = MultiplyPrecision::kFloat32;
};

} // namespace srt::ops
