// Binds a caller's positional and keyword arguments to forward's schema.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

namespace srt {

using Kwargs = std::unordered_map<std::string, c10::IValue>;

// Appends keyword arguments and defaults to `args` in schema order and checks every argument's
// type. Then refuses tensors the runtime cannot run (also inside lists, tuples and dicts): not on
// the CPU, not strided (sparse, mkldnn), quantized. Throws c10::Error naming the argument (too
// many, missing, unknown keyword, wrong type, device, layout or dtype) and what was expected.
void bindArguments(const c10::FunctionSchema& schema, std::vector<c10::IValue>& args,
                   const Kwargs& kwargs);

} // namespace srt
