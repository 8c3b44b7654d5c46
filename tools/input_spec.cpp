#include "tools/input_spec.h"

#include <charconv>
#include <sstream>
#include <utility>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "tools/usage_error.h"

namespace srt::cli {
namespace {

constexpr const char* kShapeExpected = "expected SHAPE[:DTYPE] like 8x64, 1x16x64:int64 or scalar";

// PyTorch's Python names. An input spec may use the first kInputDtypeCount; the rest only
// appear when printing outputs.
const std::pair<const char*, c10::ScalarType> kDtypeNames[] = {
    {"float32", c10::kFloat},     {"float64", c10::kDouble}, {"int64", c10::kLong},
    {"int32", c10::kInt},         {"bool", c10::kBool},      {"float16", c10::kHalf},
    {"bfloat16", c10::kBFloat16}, {"uint8", c10::kByte},     {"int8", c10::kChar},
    {"int16", c10::kShort},
};
constexpr size_t kInputDtypeCount = 5;

[[noreturn]] void throwBadSpec(const std::string& spec, const std::string& problem,
                               const std::string& expected) {
  throw UsageError("bad input spec '" + spec + "': " + problem + "; " + expected);
}

int64_t parseDim(const std::string& dim, const std::string& spec) {
  int64_t value = -1;
  const char* end = dim.data() + dim.size();
  auto [stop, error] = std::from_chars(dim.data(), end, value);
  if (dim.empty() || error != std::errc() || stop != end || value < 0) {
    throwBadSpec(spec, "dimension '" + dim + "' is not a non-negative integer", kShapeExpected);
  }
  return value;
}

std::vector<int64_t> parseShape(const std::string& shape, const std::string& spec) {
  if (shape == "scalar") {
    return {};
  }
  std::vector<int64_t> dims;
  std::istringstream parts(shape);
  std::string dim;
  while (std::getline(parts, dim, 'x')) {
    dims.push_back(parseDim(dim, spec));
  }
  // getline drops a trailing empty field, so "8x" would otherwise pass as "8".
  if (shape.empty() || shape.back() == 'x') {
    throwBadSpec(spec, "empty dimension", kShapeExpected);
  }
  return dims;
}

c10::ScalarType parseDtype(const std::string& name, const std::string& spec) {
  for (size_t i = 0; i < kInputDtypeCount; ++i) {
    if (name == kDtypeNames[i].first) {
      return kDtypeNames[i].second;
    }
  }
  throwBadSpec(spec, "unknown dtype '" + name + "'",
               "expected float32, float64, int64, int32 or bool");
}

std::string trim(const std::string& text) {
  const char* kSpace = " \t\r";
  size_t first = text.find_first_not_of(kSpace);
  if (first == std::string::npos) {
    return "";
  }
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

at::Tensor makeTensor(const InputSpec& spec) {
  at::TensorOptions options = at::TensorOptions().dtype(spec.dtype);
  if (spec.dtype == c10::kBool) {
    return at::randint(0, 2, spec.shape, options);
  }
  if (c10::isFloatingType(spec.dtype)) {
    return at::randn(spec.shape, options);
  }
  return at::randint(0, 10, spec.shape, options);
}

} // namespace

InputSpec parseInputSpec(const std::string& text) {
  size_t colon = text.find(':');
  InputSpec spec;
  spec.shape = parseShape(text.substr(0, colon), text);
  if (colon != std::string::npos) {
    spec.dtype = parseDtype(text.substr(colon + 1), text);
  }
  return spec;
}

std::vector<InputSpec> parseExampleInputs(const std::string& contents) {
  std::vector<InputSpec> specs;
  std::istringstream lines(contents);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (!line.empty()) {
      specs.push_back(parseInputSpec(line));
    }
  }
  return specs;
}

std::vector<c10::IValue> makeInputs(const std::vector<InputSpec>& specs) {
  torch::manual_seed(0);
  std::vector<c10::IValue> inputs;
  inputs.reserve(specs.size());
  for (const InputSpec& spec : specs) {
    inputs.emplace_back(makeTensor(spec));
  }
  return inputs;
}

std::string dtypeName(c10::ScalarType dtype) {
  for (const auto& [name, known] : kDtypeNames) {
    if (dtype == known) {
      return name;
    }
  }
  return c10::toString(dtype);
}

std::string describe(const InputSpec& spec) {
  if (spec.shape.empty()) {
    return "scalar:" + dtypeName(spec.dtype);
  }
  std::string text;
  for (int64_t dim : spec.shape) {
    text += (text.empty() ? "" : "x") + std::to_string(dim);
  }
  return text + ":" + dtypeName(spec.dtype);
}

std::string describe(const std::vector<InputSpec>& specs) {
  std::string text;
  for (const InputSpec& spec : specs) {
    text += (text.empty() ? "" : " ") + describe(spec);
  }
  return text;
}

} // namespace srt::cli
