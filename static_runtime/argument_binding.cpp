#include "static_runtime/argument_binding.h"

#include <ATen/core/function_schema_inl.h>
#include <c10/util/Exception.h>

namespace srt {

void bindArguments(const c10::FunctionSchema& schema, std::vector<c10::IValue>& args,
                   const Kwargs& kwargs) {
  try {
    schema.checkAndNormalizeInputs<c10::Type>(args, kwargs);
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    // LibTorch reports unknown or duplicated keywords as std::runtime_error.
    TORCH_CHECK(false, e.what());
  }
}

} // namespace srt
