#include "static_runtime/options.h"

#include <c10/util/Exception.h>

namespace srt {

void StaticModuleOptions::validate() const {
  TORCH_CHECK(enable_out_variant || !optimize_memory,
              "StaticModuleOptions: optimize_memory=true requires enable_out_variant=true (only "
              "out-variant kernels write into planned memory)");
  TORCH_CHECK(enable_out_variant || !manage_output_tensors,
              "StaticModuleOptions: manage_output_tensors=true requires enable_out_variant=true");
}

} // namespace srt
