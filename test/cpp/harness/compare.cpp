#include "harness/compare.h"

#include <cmath>
#include <sstream>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

namespace srt::testing {
namespace {

std::string compareTensors(const at::Tensor& expected, const at::Tensor& actual, double tolerance,
                           const std::string& path) {
  std::ostringstream out;
  if (expected.defined() != actual.defined()) {
    out << path << ": one tensor is undefined";
  } else if (!expected.defined()) {
    return "";
  } else if (expected.scalar_type() != actual.scalar_type()) {
    out << path << ": dtype " << actual.scalar_type() << ", expected " << expected.scalar_type();
  } else if (expected.sizes() != actual.sizes()) {
    out << path << ": shape " << actual.sizes() << ", expected " << expected.sizes();
  } else if (expected.is_floating_point() || expected.is_complex()) {
    if (!at::allclose(expected, actual, tolerance, tolerance, /*equal_nan=*/true)) {
      out << path << ": max abs difference "
          << (expected - actual).abs().nan_to_num(0).max().item<double>() << " > " << tolerance;
    }
  } else if (!at::equal(expected, actual)) {
    out << path << ": values differ";
  }
  return out.str();
}

template <typename Elements>
std::string compareSequences(const Elements& expected, const Elements& actual, double tolerance,
                             const std::string& path) {
  if (expected.size() != actual.size()) {
    return path + ": " + std::to_string(actual.size()) + " elements, expected " +
           std::to_string(expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string difference =
        compareIValues(expected[i], actual[i], tolerance, path + "[" + std::to_string(i) + "]");
    if (!difference.empty()) {
      return difference;
    }
  }
  return "";
}

bool closeDoubles(double expected, double actual, double tolerance) {
  return (std::isnan(expected) && std::isnan(actual)) || expected == actual ||
         std::abs(expected - actual) <= tolerance * (1 + std::abs(expected));
}

} // namespace

std::string compareIValues(const c10::IValue& expected, const c10::IValue& actual, double tolerance,
                           const std::string& path) {
  if (expected.tagKind() != actual.tagKind()) {
    return path + ": a " + actual.tagKind() + ", expected a " + expected.tagKind();
  }
  if (expected.isTensor()) {
    return compareTensors(expected.toTensor(), actual.toTensor(), tolerance, path);
  }
  if (expected.isTuple()) {
    return compareSequences(expected.toTupleRef().elements().vec(),
                            actual.toTupleRef().elements().vec(), tolerance, path);
  }
  if (expected.isList()) {
    return compareSequences(expected.toList().vec(), actual.toList().vec(), tolerance, path);
  }
  if (expected.isGenericDict()) {
    auto expected_dict = expected.toGenericDict();
    auto actual_dict = actual.toGenericDict();
    if (expected_dict.size() != actual_dict.size()) {
      return path + ": dict of " + std::to_string(actual_dict.size()) + " entries, expected " +
             std::to_string(expected_dict.size());
    }
    for (const auto& entry : expected_dict) {
      const std::string key_path = path + "[" + c10::str(entry.key()) + "]";
      auto found = actual_dict.find(entry.key());
      if (found == actual_dict.end()) {
        return key_path + ": missing";
      }
      std::string difference = compareIValues(entry.value(), found->value(), tolerance, key_path);
      if (!difference.empty()) {
        return difference;
      }
    }
    return "";
  }
  if (expected.isDouble()) {
    return closeDoubles(expected.toDouble(), actual.toDouble(), tolerance)
               ? ""
               : path + ": " + c10::str(actual) + ", expected " + c10::str(expected);
  }
  return expected == actual ? ""
                            : path + ": " + c10::str(actual) + ", expected " + c10::str(expected);
}

} // namespace srt::testing
