// For tests whose graphs TorchScript cannot spell (IR with typed values, in-place writes the
// preparation would remove): the graph run by the JIT and by a StaticModule must agree.
#pragma once

#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"

namespace srt::testing {

// Runs every input set twice through one StaticModule built from `graph` (passes included) and
// compares the single output with the JIT's on the unoptimized graph.
inline void expectGraphMatchesJit(const std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<GraphInputs>& input_sets,
                                  const StaticModuleOptions& options = {}) {
  StaticModule module(graph->copy(), options);
  for (size_t set = 0; set < input_sets.size(); ++set) {
    const std::vector<c10::IValue> expected = runWithJit(graph, input_sets[set]);
    ASSERT_EQ(expected.size(), 1u);
    for (int run = 0; run < 2; ++run) {
      std::vector<c10::IValue> args;
      for (const c10::IValue& input : input_sets[set]) {
        args.push_back(deepClone(input));
      }
      const c10::IValue actual = module(std::move(args));
      EXPECT_EQ(compareIValues(expected[0], actual), "")
          << "input set " << set << ", run " << run << ", graph:\n"
          << module.graph();
    }
  }
}

} // namespace srt::testing
