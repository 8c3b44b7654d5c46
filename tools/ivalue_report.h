// Printing a model's (possibly nested) inputs and outputs, and comparing two outputs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

namespace srt::cli {

// One line per leaf: tuples, lists and dicts are walked, with paths like output[0]["key"].
// A tensor prints its shape, dtype and checksum (sum as double, 6 significant digits); an
// int, float, bool, string or None prints its value.
void printLeaves(std::ostream& out, const std::string& root, const c10::IValue& value);

// One line per leaf of `expected` (TorchScript) and `actual` (static_runtime): the max abs
// difference of each tensor, equality of everything else, then the max over all tensors.
void printOutputMatch(std::ostream& out, const c10::IValue& expected, const c10::IValue& actual);

} // namespace srt::cli
