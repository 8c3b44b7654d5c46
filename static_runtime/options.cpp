#include "static_runtime/options.h"

#include <c10/util/Exception.h>

#include "passes/pipeline.h"
#include "static_runtime/runtime_options.h"

namespace srt {

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
  return skip;
}

void RuntimeOptions::validate() const {
  TORCH_CHECK(intra_op_threads >= 0,
              "RuntimeOptions: intra_op_threads must be >= 0 (0 keeps the "
              "caller's setting), got ",
              intra_op_threads);
}

} // namespace srt
