// The differential harness: a module run by the JIT and by us must agree, run after run.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>

#include "harness/compare.h"
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

// The exact bytes of every tensor in a (possibly nested) value: the whole storage each one views,
// its sizes, strides, offset and dtype. Proves later that nothing wrote into a caller's tensors,
// not even outside the elements they show, and that none was resized or restrided.
class TensorBytes {
public:
  explicit TensorBytes(const c10::IValue& value);
  // "" when every tensor of `value` (the same tensors, later) still holds the recorded bytes and
  // layout; else which one (`name` then its position, e.g. "'x'[1]") and what changed.
  std::string compare(const c10::IValue& value, const std::string& name) const;

private:
  struct Record {
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides;
    int64_t storage_offset = 0;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    std::vector<uint8_t> bytes; // empty without CPU memory (meta tensors, empty storages)
  };
  std::vector<Record> records_;
};

// Runs `module` through the JIT (reference) and through a StaticModule built with `options`:
// each input set twice in a row, then the first set again after the others (shape changes both
// ways). Checks outputs agree, and that every input tensor (by its argument name) holds exactly
// the bytes it held before each run; only where TorchScript itself writes into an input (an
// in-place op on an argument, which the JIT does too) must it instead hold what the JIT left in
// its copy. Reports failures with gtest.
void expectMatchesJit(const torch::jit::Module& module, const std::vector<InputSet>& inputs,
                      const StaticModuleOptions& options = {}, double tolerance = 1e-5);

// Runs `module` through the JIT and through one StaticRuntime of it (prepared with `options`, run
// with `runtime_options`, e.g. two intra-op threads on the runtime's own workers): each input in
// turn, twice (the second run on reused memory). Results must agree within `tolerance`.
void expectRuntimeMatchesJit(const torch::jit::Module& module,
                             const std::vector<at::Tensor>& inputs,
                             const StaticModuleOptions& options,
                             const RuntimeOptions& runtime_options, double tolerance = 1e-5);

// The same for a TorchScript source defining `forward(self, ...)`, over every valid option set.
void expectMatchesJit(const std::string& source, const std::vector<InputSet>& inputs,
                      double tolerance = 1e-5);

// A module with `source` defined on it.
torch::jit::Module scriptModule(const std::string& source);

} // namespace srt::testing
