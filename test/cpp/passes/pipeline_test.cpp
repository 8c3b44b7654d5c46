// The pass pipeline: order, switching passes off by name, reports, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/pipeline.h"

namespace srt::testing {
namespace {

const char* kRepeatedWork = R"JIT(
def forward(self, x):
    a = torch.softmax(x, -1)
    b = torch.softmax(x, -1)
    unused = x * 3.0
    return torch.cat([a, b])
)JIT";

TEST(Pipeline, NamesAreUniqueAndNonEmpty) {
  const std::vector<std::string> names = passes::passNames();
  ASSERT_FALSE(names.empty());
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
}

TEST(Pipeline, ReportsEveryPassAndWhatItChanged) {
  auto graph = preparedGraph(kRepeatedWork);
  const size_t before = passes::countNodes(*graph->block());
  const std::vector<passes::PassReport> reports = passes::optimize(graph, {});
  ASSERT_EQ(reports.size(), passes::passNames().size());
  EXPECT_EQ(reports.front().nodes_before, before);
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].name, passes::passNames()[i]);
    EXPECT_TRUE(reports[i].ran);
    if (i > 0) {
      EXPECT_EQ(reports[i].nodes_before, reports[i - 1].nodes_after);
    }
  }
  EXPECT_EQ(reports.back().nodes_after, passes::countNodes(*graph->block()));
  EXPECT_EQ(countKind(*graph, "aten::softmax"), 1u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::mul"), 0u) << *graph;
}

TEST(Pipeline, DisabledPassDoesNotRun) {
  auto graph = preparedGraph(kRepeatedWork);
  const std::vector<passes::PassReport> reports = passes::optimize(graph, {"common_subexpression"});
  EXPECT_FALSE(reports.front().ran);
  EXPECT_FALSE(reports.front().changed);
  EXPECT_EQ(countKind(*graph, "aten::softmax"), 2u) << *graph;
}

TEST(Pipeline, UnknownPassNameListsTheValidOnes) {
  StaticModuleOptions options;
  options.disabled_passes = {"no_such_pass"};
  EXPECT_THAT([&] { options.validate(); }, ::testing::ThrowsMessage<c10::Error>(::testing::AllOf(
                                               ::testing::HasSubstr("unknown pass 'no_such_pass'"),
                                               ::testing::HasSubstr("common_subexpression"))));
}

TEST(Pipeline, StatsCarryThePassReports) {
  StaticModuleOptions options;
  options.disabled_passes = {"dead_code"};
  StaticModule module(scriptModule(kRepeatedWork), options);
  const ModuleStats stats = module.stats();
  ASSERT_EQ(stats.passes.size(), passes::passNames().size());
  EXPECT_TRUE(stats.passes.front().changed);
  EXPECT_FALSE(stats.passes.back().ran);
}

TEST(Pipeline, CopyVariantOptionsSwitchTheirPassesOff) {
  StaticModuleOptions options;
  options.use_copy_variants = false;
  options.use_maybe_copy_variants = false;
  const std::set<std::string> skipped = options.passesToSkip();
  for (const char* name : {"copy_variants", "maybe_copy_variants"}) {
    const std::vector<std::string> names = passes::passNames();
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      EXPECT_EQ(skipped.count(name), 1u) << name;
    }
  }
}

TEST(LibTorchPasses, CommonSubexpressionsKeepResults) {
  auto graph = preparedGraph(kRepeatedWork);
  std::vector<GraphInputs> inputs = {{torch::randn({3, 4})}, {torch::randn({7})}};
  auto rewritten = expectPassPreservesResults(passes::eliminateCommonSubexpressions, graph, inputs,
                                              /*expect_changed=*/true);
  EXPECT_EQ(countKind(*rewritten, "aten::softmax"), 1u);
  // Nothing repeated: a second run finds nothing to do.
  expectPassPreservesResults(passes::eliminateCommonSubexpressions, rewritten, inputs,
                             /*expect_changed=*/false);
}

TEST(LibTorchPasses, DeadCodeKeepsResults) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %unused : Tensor = aten::mul(%x, %x)
  %y : Tensor = aten::add(%x, %x, %one)
  return (%y)
)IR");
  std::vector<GraphInputs> inputs = {{torch::randn({3, 4})}, {torch::randn({2, 5})}};
  auto rewritten =
      expectPassPreservesResults(passes::eliminateDeadCode, graph, inputs, /*expect_changed=*/true);
  EXPECT_EQ(countKind(*rewritten, "aten::mul"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::add"), 1u);
}

} // namespace
} // namespace srt::testing
