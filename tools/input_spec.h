// Input specs ("8x64:float32", "scalar:int64") and the deterministic tensors made from them.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>

namespace srt::cli {

struct InputSpec {
  // Empty: a 0-dim tensor ("scalar").
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::kFloat;
};

// "SHAPE[:DTYPE]": SHAPE is dims joined by 'x' or "scalar"; DTYPE is float32 (default), float64,
// int64, int32 or bool. Throws UsageError naming the spec and what was expected.
InputSpec parseInputSpec(const std::string& text);

// The model's extra file srt/example_inputs: one spec per line, blank lines ignored.
std::vector<InputSpec> parseExampleInputs(const std::string& contents);

// Seeds torch with 0, then: floating → randn, integer → randint(0, 10), bool → randint(0, 2).
std::vector<c10::IValue> makeInputs(const std::vector<InputSpec>& specs);

// The names a spec uses ("float32"); other dtypes get PyTorch's Python names where known.
std::string dtypeName(c10::ScalarType dtype);
std::string describe(const InputSpec& spec);
// The specs' descriptions joined by spaces.
std::string describe(const std::vector<InputSpec>& specs);

} // namespace srt::cli
