// Real models run without a single JIT-fallback node: every operator they use has a kernel.
#include <gtest/gtest.h>

#include "harness/zoo.h"

namespace srt::testing {
namespace {

class ZooCoverage : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooCoverage, RunsWithZeroFallbackNodes) {
  const ModuleStats stats = StaticModule(loadZooModel(GetParam())).stats();
  std::string fallback_ops;
  for (const auto& [op, count] : stats.fallback_ops) {
    fallback_ops += " " + op + " x" + std::to_string(count);
  }
  EXPECT_EQ(stats.fallback_nodes, 0u) << GetParam() << " falls back on:" << fallback_ops;
  EXPECT_GT(stats.out_variant_nodes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, ZooCoverage,
                         ::testing::Values("mlp", "transformer_block", "transformer_2block",
                                           "deep_and_wide", "cnn", "transformer_encoder_layer"));

} // namespace
} // namespace srt::testing
