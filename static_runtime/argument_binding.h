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
// type. Throws c10::Error naming the argument (too many, missing, unknown keyword, wrong type).
void bindArguments(const c10::FunctionSchema& schema, std::vector<c10::IValue>& args,
                   const Kwargs& kwargs);

} // namespace srt
