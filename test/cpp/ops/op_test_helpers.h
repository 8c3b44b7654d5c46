// Helpers for the op-library tests: one-expression TorchScript sources, the input shapes every
// element-wise kernel is run on, and checks of which kernel a node got.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"

namespace srt::testing {

// `def forward(self, <params>): return <expression>`. The op tests' sources are one expression
// each, so they are written where they are tested rather than in scripts.h. Module::define knows
// only builtins: torch.gelu rather than torch.nn.functional.gelu, and dtypes by their ScalarType
// code (dtype=6 is torch.float32, dtype=7 torch.float64).
inline std::string forwardReturning(const std::string& params, const std::string& expression) {
  return "def forward(self, " + params + "):\n    return " + expression + "\n";
}

inline InputSet inputs(std::vector<c10::IValue> args) {
  return InputSet{std::move(args), {}};
}

// Shapes for one-input element-wise ops, each run twice and the first again after the others:
// contiguous, a different shape, transposed (non-contiguous), zero-size, 0-dim, and one large
// enough to be split over intra-op threads (> 32768 elements).
inline std::vector<InputSet> unaryShapes(const std::function<at::Tensor(at::IntArrayRef)>& make) {
  return {inputs({make({2, 3})}), inputs({make({5})}), inputs({make({4, 3}).t()}),
          inputs({make({0, 5})}), inputs({make({})}),  inputs({make({3, 70001})})};
}

// Pairs for two-input element-wise ops: same shape, a shape change, broadcasting both ways,
// transposed, zero-size, one operand 0-dim, and a large same-shape pair.
inline std::vector<InputSet> binaryShapes(const std::function<at::Tensor(at::IntArrayRef)>& make) {
  return {inputs({make({2, 3}), make({2, 3})}),        inputs({make({7}), make({7})}),
          inputs({make({4, 1}), make({1, 3})}),        inputs({make({4, 3}).t(), make({3, 4})}),
          inputs({make({0, 5}), make({0, 5})}),        inputs({make({3, 2}), make({})}),
          inputs({make({2, 40000}), make({2, 40000})})};
}

inline at::Tensor randnFloat(at::IntArrayRef shape) {
  return torch::randn(shape);
}

inline at::Tensor randnDouble(at::IntArrayRef shape) {
  return torch::randn(shape, torch::kDouble);
}

// int64 values in [-9, 9].
inline at::Tensor randintLong(at::IntArrayRef shape) {
  return torch::randint(-9, 10, shape, torch::kLong);
}

// Positive floats, for log / sqrt / pow with fractional exponents.
inline at::Tensor randPositive(at::IntArrayRef shape) {
  return torch::rand(shape) + 0.1;
}

// The module's kernel counts: every node an out-variant except `native` natives (lists of dims),
// and no fallback.
inline void expectAllOutVariant(const std::string& source, size_t out_variant_nodes = 1) {
  ModuleStats stats = StaticModule(scriptModule(source)).stats();
  EXPECT_EQ(stats.out_variant_nodes, out_variant_nodes) << source;
  EXPECT_EQ(stats.fallback_nodes, 0u) << source;
}

// The node of `op` was declined by its out-variant factory and runs the JIT operator.
inline void expectFallback(const std::string& source, const std::string& op) {
  ModuleStats stats = StaticModule(scriptModule(source)).stats();
  EXPECT_EQ(stats.fallback_ops[op], 1u) << source;
}

} // namespace srt::testing
