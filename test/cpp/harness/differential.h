// The differential harness: a module run by the JIT and by us must agree, run after run.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>

#include "static_runtime/static_runtime.h"

namespace srt::testing {

struct InputSet {
  std::vector<c10::IValue> args;
  Kwargs kwargs;
};

// Every valid combination of the boolean StaticModuleOptions (20 of 32).
std::vector<StaticModuleOptions> allValidOptions();
std::string describe(const StaticModuleOptions& options);

// Deep copy, so a test can later prove the runtime did not write into the caller's inputs.
c10::IValue deepClone(const c10::IValue& value);

// Structural comparison; tensors must match in dtype and shape and be within `tolerance`
// (absolute and relative) for floating point, exactly otherwise. Returns "" when equal, else
// what differs and where (`path` names the position, e.g. "output[1]['a']").
std::string compareIValues(const c10::IValue& expected, const c10::IValue& actual,
                           double tolerance = 1e-5, const std::string& path = "output");

// Runs `module` through the JIT (reference) and through a StaticModule built with `options`:
// each input set twice in a row, then the first set again after the others (shape changes both
// ways). Checks outputs agree and inputs are left unmodified. Reports failures with gtest.
void expectMatchesJit(const torch::jit::Module& module, const std::vector<InputSet>& inputs,
                      const StaticModuleOptions& options = {}, double tolerance = 1e-5);

// The same for a TorchScript source defining `forward(self, ...)`, over every valid option set.
void expectMatchesJit(const std::string& source, const std::vector<InputSet>& inputs,
                      double tolerance = 1e-5);

// A module with `source` defined on it.
torch::jit::Module scriptModule(const std::string& source);

} // namespace srt::testing
