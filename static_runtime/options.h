// What a StaticModule optimizes: fixed when the module is built.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace srt {

// How the memory planner places managed tensors in the arena.
enum class MemoryPlannerAlgorithm {
  kGreedyBySize, // largest first, each in the best-fitting gap among buffers live at once
  kNaive,        // one slot per buffer: the baseline
};

// The library that runs linear / addmm / matmul / mm / bmm.
enum class GemmBackend {
  kOneDnn,   // oneDNN, with constant weights pre-packed when the module is built
  kOpenBlas, // cblas_sgemm
  kAten,     // ATen's own kernels
};

// What the products of linear, convolution and recurrent layers with constant weights may
// multiply in (PyTorch's name: torch.backends.mkldnn's fp32_precision).
enum class Fp32Precision {
  kIeee, // float32, as the model is written
  kBf16, // bfloat16 products summed in float32 (8 mantissa bits: results differ as under
         // PyTorch's bfloat16 autocast), several times faster where the CPU has AMX or AVX512-BF16
};

// "greedy_by_size", "naive"; "onednn", "openblas", "aten"; "ieee", "bf16": the names Python and
// the CLI take.
const char* toString(MemoryPlannerAlgorithm algorithm);
const char* toString(GemmBackend backend);
const char* toString(Fp32Precision precision);

// The optimization passes, in the order they run: the names disabled_passes takes.
std::vector<std::string> passNames();

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
  MemoryPlannerAlgorithm memory_planner = MemoryPlannerAlgorithm::kGreedyBySize;
  // Which library runs linear / addmm / matmul / mm / bmm (not in PyTorch's options).
  // oneDNN, measured with benchmarks/gemm_backends (1 thread, AVX-512 EPYC, median CPU µs of a
  // StaticRuntime running one linear; onednn / openblas / aten):
  //   OPENBLAS_CORETYPE=Haswell: oneDNN fastest on all 12 zoo shapes, e.g.
  //     M=1 128->128 3.4 / 7.5 / 9.6, M=16 64->256 7.7 / 10.8 / 12.6,
  //     M=1024 256->768 3930 / 5183 / 5312.
  //   OPENBLAS_CORETYPE unset (OpenBLAS picks AVX-512 kernels): oneDNN 10-30% ahead from M=16 up
  //     (M=1024 256->768 4015 / 4362 / 4392); at M=1 all within 0.5 µs of each other, and
  //     OpenBLAS ahead for N=10, which oneDNN pads to its 64-wide blocks (M=64: 6.9 / 5.3 / 7.2).
  GemmBackend gemm_backend = GemmBackend::kOneDnn;
  // "bf16" lets the kernels of linear layers and convolutions (pass bf16_weights) and of recurrent
  // layers and cells (their weights packed so at build) with constant weights multiply in
  // bfloat16; a CPU without native bfloat16 keeps float32. Off by default: it changes results
  // beyond float32 rounding. Not in PyTorch's options.
  Fp32Precision fp32_precision = Fp32Precision::kIeee;
  // Tensor attributes ("fc1.weight") left out of freezing, constant folding and pre-packing,
  // supplied after build with StaticModule::setConstant (weights that arrive late or change).
  std::vector<std::string> unbound_constants;
  // Optimization passes to skip, by name (passNames(); `srt inspect` lists them).
  std::set<std::string> disabled_passes;

  // Throws c10::Error naming the offending combination.
  void validate() const;

  // disabled_passes plus the passes other options switch off (copy variants without
  // out variants, ...).
  std::set<std::string> passesToSkip() const;
};

} // namespace srt
