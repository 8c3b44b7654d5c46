// What a StaticModule optimizes: fixed when the module is built.
#pragma once

#include "memory/planner.h"
#include "ops/kernel_options.h"

namespace srt {

// Field names and defaults follow PyTorch's torch::jit::StaticModuleOptions.
struct StaticModuleOptions {
  // Pick out-variant kernels (write into the previous run's output tensor) where they exist.
  bool enable_out_variant = true;
  // Let the memory planner own intermediate tensors. Requires enable_out_variant.
  bool optimize_memory = true;
  // Let the planner own graph outputs too; the caller must hand them back before the next run.
  // Requires enable_out_variant.
  bool manage_output_tensors = false;
  // Replace views that feed kernels with copying variants the planner can manage.
  bool use_copy_variants = true;
  // Same for ops that only sometimes alias their input.
  bool use_maybe_copy_variants = true;
  // How the planner places managed tensors in the arena (not in PyTorch's options).
  memory::PlannerAlgorithm memory_planner = memory::PlannerAlgorithm::kGreedyBySize;
  // Which library runs linear / addmm / matmul / mm / bmm (not in PyTorch's options).
  ops::GemmBackend gemm_backend = ops::GemmBackend::kOneDnn;

  // Throws c10::Error naming the offending combination.
  void validate() const;
};

} // namespace srt
