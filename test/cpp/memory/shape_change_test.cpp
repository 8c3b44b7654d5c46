// Shapes that grow, shrink and alternate: results match the JIT on every run, every plan
// verifies, and because slots only grow, the arena stops growing (and the plan stops changing)
// once the largest shape has been seen: alternating shapes do not thrash.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/zoo.h"

namespace srt::testing {
namespace {

struct ShapeChangeCase {
  std::string model;
  // Leading dims (batch, and for sequence models the sequence length) of every tensor argument;
  // the zoo's first input set supplies the other dims. Distinct shapes come first in growing
  // order, ending with the largest; the runs after them revisit those shapes in mixed order.
  std::vector<std::vector<int64_t>> leading_dims;
  size_t num_distinct;
};

InputSet withLeadingDims(const InputSet& like, const std::vector<int64_t>& leading) {
  InputSet set{{}, like.kwargs};
  for (const c10::IValue& arg : like.args) {
    if (!arg.isTensor()) {
      set.args.push_back(arg);
      continue;
    }
    std::vector<int64_t> sizes = arg.toTensor().sizes().vec();
    for (size_t i = 0; i < leading.size() && i < sizes.size(); ++i) {
      sizes[i] = leading[i];
    }
    set.args.push_back(torch::randn(sizes));
  }
  return set;
}

class ShapeChange : public ::testing::TestWithParam<ShapeChangeCase> {};

TEST_P(ShapeChange, GrowShrinkAndAlternateMatchTheJitWithoutThrashing) {
  const ShapeChangeCase& test_case = GetParam();
  torch::manual_seed(0);
  torch::jit::Module jit = loadZooModel(test_case.model);
  const InputSet like = loadZooInputs(test_case.model).front();
  std::vector<InputSet> distinct;
  for (size_t i = 0; i < test_case.num_distinct; ++i) {
    distinct.push_back(withLeadingDims(like, test_case.leading_dims[i]));
  }
  std::vector<c10::IValue> expected;
  for (const InputSet& set : distinct) {
    torch::NoGradGuard no_grad;
    expected.push_back(jit.get_method("forward")(set.args, set.kwargs));
  }

  StaticModule module(jit);
  StaticRuntime runtime(module);
  size_t reallocations_after_largest = 0;
  size_t unplanned_scratch_after_largest = 0;
  std::string plan_after_largest;
  for (size_t run = 0; run < test_case.leading_dims.size(); ++run) {
    const std::vector<int64_t>& dims = test_case.leading_dims[run];
    size_t shape = 0;
    while (test_case.leading_dims[shape] != dims) {
      ++shape;
    }
    ASSERT_LT(shape, test_case.num_distinct) << "run " << run << " uses an unlisted shape";
    const std::string where =
        test_case.model + " run " + std::to_string(run) + " leading dims " + c10::str(dims);
    const c10::IValue actual = runtime(distinct[shape].args, distinct[shape].kwargs);
    EXPECT_EQ(compareIValues(expected[shape], actual), "") << where;
    EXPECT_EQ(runtime.verifyMemoryPlan(), "") << where << "\n" << runtime.memoryPlan();

    const ModuleStats stats = runtime.stats();
    if (run + 1 == test_case.num_distinct) {
      reallocations_after_largest = stats.arena_reallocations;
      unplanned_scratch_after_largest = stats.unplanned_scratch_requests;
      plan_after_largest = runtime.memoryPlan();
    } else if (run >= test_case.num_distinct) {
      EXPECT_EQ(stats.arena_reallocations, reallocations_after_largest) << where;
      EXPECT_EQ(stats.unplanned_scratch_requests, unplanned_scratch_after_largest) << where;
      EXPECT_EQ(runtime.memoryPlan(), plan_after_largest) << where << ": the plan changed";
    }
  }
  const ModuleStats stats = runtime.stats();
  EXPECT_GE(stats.arena_reallocations, 1u);
  EXPECT_LE(stats.managed_bytes, stats.managed_lower_bound_bytes * 11 / 10) << runtime.memoryPlan();
  RecordProperty("arena_reallocations", std::to_string(stats.arena_reallocations));
  RecordProperty("managed_bytes", std::to_string(stats.managed_bytes));

  // The harness's own order (each shape twice, then the first again), every valid option set,
  // also through the thread-safe StaticModule entry point; and the inputs left unmodified.
  for (const StaticModuleOptions& options : allValidOptions()) {
    expectMatchesJit(jit, distinct, options);
  }
}

// Distinct shapes first (growing), then the same shapes revisited: growing, shrinking, and
// alternating between the smallest and the largest.
std::vector<std::vector<int64_t>> revisit(std::vector<std::vector<int64_t>> distinct,
                                          const std::vector<size_t>& then) {
  std::vector<std::vector<int64_t>> sequence = distinct;
  for (size_t index : then) {
    sequence.push_back(distinct[index]);
  }
  return sequence;
}

const std::vector<size_t> kRevisits{1, 0, 2, 1, 0, 2, 2, 0, 2, 0, 1, 2};

INSTANTIATE_TEST_SUITE_P(
    Models, ShapeChange,
    ::testing::Values(ShapeChangeCase{"mlp", revisit({{1}, {4}, {16}}, kRevisits), 3},
                      ShapeChangeCase{"deep_and_wide", revisit({{1}, {4}, {16}}, kRevisits), 3},
                      ShapeChangeCase{"transformer_block",
                                      revisit({{1, 4}, {2, 8}, {4, 16}}, kRevisits), 3}),
    [](const ::testing::TestParamInfo<ShapeChangeCase>& info) { return info.param.model; });

} // namespace
} // namespace srt::testing
