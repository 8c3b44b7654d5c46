// The one structural comparison of results, shared by the GoogleTest harness and the fuzzers
// (no gtest here: the fuzz harnesses link it alone).
#pragma once

#include <string>

#include <ATen/core/ivalue.h>

namespace srt::testing {

// "" when `actual` equals `expected`, else what differs and where (`path` names the position,
// e.g. "output[1]['a']"). Tensors must match in dtype and shape; floating and complex ones within
// `tolerance` (absolute and relative, NaN equal to NaN), others exactly. Floats within
// `tolerance` relative to the expected value (NaN equal to NaN); everything else exactly.
std::string compareIValues(const c10::IValue& expected, const c10::IValue& actual,
                           double tolerance = 1e-5, const std::string& path = "output");

} // namespace srt::testing
