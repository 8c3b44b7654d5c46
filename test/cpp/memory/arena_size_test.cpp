// On every zoo model, after runs over all its input sets (shapes that grow, shrink and
// alternate), the greedy arena stays within 10% of the lower bound (peak bytes live at once) and
// every plan verifies.
#include <gtest/gtest.h>

#include "harness/zoo.h"

namespace srt::testing {
namespace {

class ArenaSize : public ::testing::TestWithParam<std::string> {};

TEST_P(ArenaSize, GreedyArenaIsWithinTenPercentOfTheLowerBound) {
  const std::string& name = GetParam();
  StaticModule module(loadZooModel(name));
  StaticRuntime runtime(module);
  const std::vector<InputSet> inputs = loadZooInputs(name);
  for (int round = 0; round < 2; ++round) {
    for (const InputSet& set : inputs) {
      (void)runtime(set.args, set.kwargs);
    }
  }
  const ModuleStats stats = runtime.stats();
  RecordProperty("managed_bytes", std::to_string(stats.managed_bytes));
  RecordProperty("lower_bound_bytes", std::to_string(stats.managed_lower_bound_bytes));
  EXPECT_LE(stats.managed_bytes, stats.managed_lower_bound_bytes * 11 / 10) << name << "\n"
                                                                            << runtime.memoryPlan();
  EXPECT_EQ(stats.memory_planner, "greedy_by_size");
}

INSTANTIATE_TEST_SUITE_P(Models, ArenaSize, ::testing::ValuesIn(zooModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

} // namespace
} // namespace srt::testing
