#include "static_runtime/options.h"

#include <c10/util/Exception.h>

#include "passes/pipeline.h"
#include "static_runtime/internal_options.h"
#include "static_runtime/runtime_options.h"

namespace srt {

namespace {

ops::GemmBackend kernelBackend(GemmBackend backend) {
  switch (backend) {
  case GemmBackend::kOneDnn:
    return ops::GemmBackend::kOneDnn;
  case GemmBackend::kOpenBlas:
    return ops::GemmBackend::kOpenBlas;
  case GemmBackend::kAten:
    break;
  }
  return ops::GemmBackend::kAten;
}

} // namespace

ops::KernelOptions kernelOptions(const StaticModuleOptions& options) {
  return {options.enable_out_variant, kernelBackend(options.gemm_backend),
          options.fp32_precision == Fp32Precision::kBf16 ? ops::MultiplyPrecision::kBFloat16
                                                         : ops::MultiplyPrecision::kFloat32};
}

memory::PlannerAlgorithm plannerAlgorithm(MemoryPlannerAlgorithm algorithm) {
  return algorithm == MemoryPlannerAlgorithm::kNaive ? memory::PlannerAlgorithm::kNaive
                                                     : memory::PlannerAlgorithm::kGreedyBySize;
}

std::vector<std::string> passNames() {
  return passes::passNames();
}

const char* toString(MemoryPlannerAlgorithm algorithm) {
  return memory::toString(plannerAlgorithm(algorithm));
}

const char* toString(GemmBackend backend) {
  return ops::toString(kernelBackend(backend));
}

const char* toString(Fp32Precision precision) {
  return precision == Fp32Precision::kBf16 ? "bf16" : "ieee";
}

void StaticModuleOptions::validate() const {
  TORCH_CHECK(enable_out_variant || !optimize_memory,
              "StaticModuleOptions: optimize_memory=true requires enable_out_variant=true (only "
              "out-variant kernels write into planned memory)");
  TORCH_CHECK(enable_out_variant || !manage_output_tensors,
              "StaticModuleOptions: manage_output_tensors=true requires enable_out_variant=true");
  passes::checkPassNames(disabled_passes);
}

std::set<std::string> StaticModuleOptions::passesToSkip() const {
  std::set<std::string> skip = disabled_passes;
  // Copies only pay off when an out-variant kernel writes them into planned memory.
  if (!use_copy_variants || !enable_out_variant) {
    skip.insert("copy_variants");
  }
  if (!use_maybe_copy_variants || !enable_out_variant) {
    skip.insert("maybe_copy_variants");
  }
  // Packed linear weights are what oneDNN's matmul reads; the other backends read plain ones.
  if (gemm_backend != GemmBackend::kOneDnn || !enable_out_variant) {
    skip.insert("linear_weight_packing");
  }
  if (fp32_precision != Fp32Precision::kBf16) {
    skip.insert("bf16_weights");
  }
  return skip;
}

void RuntimeOptions::validate() const {
  TORCH_CHECK(intra_op_threads >= 0,
              "RuntimeOptions: intra_op_threads must be >= 0 (0 keeps the "
              "caller's setting), got ",
              intra_op_threads);
}

} // namespace srt
