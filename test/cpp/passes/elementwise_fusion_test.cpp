// elementwise_fusion: which groups become srt::fused_elementwise (and which must not), that the
// rewritten graph computes what the original did (JIT on both: the reference implementation),
// and that StaticModule, which runs the fused kernel, matches the JIT on the unfused model.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "harness/zoo.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

constexpr const char* kFused = "srt::fused_elementwise";

// The programs of the graph's fused nodes, in graph order (sub-blocks included).
void collectPrograms(const torch::jit::Block& block, std::vector<std::string>& programs) {
  for (const torch::jit::Node* node : block.nodes()) {
    if (node->kind().toQualString() == std::string(kFused)) {
      programs.push_back(torch::jit::toIValue(node->input(0))->toStringRef());
    }
    for (const torch::jit::Block* sub_block : node->blocks()) {
      collectPrograms(*sub_block, programs);
    }
  }
}

std::vector<std::string> programs(const torch::jit::Graph& graph) {
  std::vector<std::string> found;
  collectPrograms(*graph.block(), found);
  return found;
}

std::vector<GraphInputs> twoShapes(size_t num_tensors) {
  std::vector<GraphInputs> sets(2);
  for (size_t i = 0; i < num_tensors; ++i) {
    sets[0].push_back(torch::randn({3, 5}));
    sets[1].push_back(torch::randn({2, 4, 33}));
  }
  return sets;
}

// Fuses `source`'s prepared graph; checks the result against the original with the JIT, and the
// StaticModule (all passes, fused kernel) against the JIT on the unfused module.
std::shared_ptr<torch::jit::Graph> fuse(const std::string& source,
                                        const std::vector<GraphInputs>& sets, bool expect_changed) {
  auto rewritten = expectPassPreservesResults(passes::fuseElementwiseChains, preparedGraph(source),
                                              sets, expect_changed);
  expectMatchesJit(source, asInputSets(sets));
  return rewritten;
}

TEST(ElementwiseFusion, FusesAChainIntoOneNode) {
  const auto graph = fuse(R"JIT(
def forward(self, x, y):
    return torch.sigmoid(x * 0.5 + y)
)JIT",
                          twoShapes(2), true);
  EXPECT_EQ(countKind(*graph, kFused), 1u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::mul") + countKind(*graph, "aten::add") +
                countKind(*graph, "aten::sigmoid"),
            0u)
      << *graph;
  EXPECT_EQ(programs(*graph), std::vector<std::string>{"sigmoid(add(mul(x0, 0.5), x1))"});
}

TEST(ElementwiseFusion, SharedIntermediateInsideTheGroupIsComputedOnce) {
  const auto graph = fuse(R"JIT(
def forward(self, x, y):
    t = torch.add(x, y, alpha=2)
    return t * torch.tanh(t) - torch.relu(t)
)JIT",
                          twoShapes(2), true);
  EXPECT_EQ(programs(*graph),
            std::vector<std::string>{"t0 = add(x0, x1, 2); sub(mul(t0, tanh(t0)), relu(t0))"});
}

TEST(ElementwiseFusion, HonorsAlphaAndScalarOperands) {
  const auto graph = fuse(R"JIT(
def forward(self, x, y, s: float):
    a = torch.sub(x, y, alpha=0.5)
    b = torch.rsub(a, 1.0, alpha=3)
    return torch.clamp(b * s, -1.0, 2) / 3
)JIT",
                          {{torch::randn({3, 5}), torch::randn({3, 5}), 0.7},
                           {torch::randn({2, 40}), torch::randn({2, 40}), -2.0}},
                          true);
  EXPECT_EQ(
      programs(*graph),
      std::vector<std::string>{"div(clamp(mul(rsub(sub(x0, x1, 0.5), 1.0, 3), x2), -1.0, 2), 3)"});
}

TEST(ElementwiseFusion, WhereWithAComputedCondition) {
  const auto graph = fuse(R"JIT(
def forward(self, x, y):
    return torch.where(x > 0, x, y * 0.1)
)JIT",
                          twoShapes(2), true);
  EXPECT_EQ(programs(*graph), std::vector<std::string>{"where(gt(x0, 0), x0, mul(x1, 0.1))"});
}

TEST(ElementwiseFusion, IntermediateUsedOutsideTheGroupStaysATensor) {
  // t feeds the fused relu + add and is also returned: it is the group's input, not a member.
  const auto graph = fuse(R"JIT(
def forward(self, x):
    t = x * 2.0
    return torch.relu(t) + 1, t
)JIT",
                          twoShapes(1), true);
  EXPECT_EQ(countKind(*graph, "aten::mul"), 1u) << *graph;
  EXPECT_EQ(programs(*graph), std::vector<std::string>{"add(relu(x0), 1)"});
}

TEST(ElementwiseFusion, IntermediateUsedByTwoGroupsIsNotDuplicated) {
  const auto graph = fuse(R"JIT(
def forward(self, x):
    t = torch.abs(x) + 1
    return torch.log(t) * 2.0, torch.sqrt(t) - 1.0
)JIT",
                          twoShapes(1), true);
  EXPECT_EQ(programs(*graph), (std::vector<std::string>{"add(abs(x0), 1)", "mul(log(x0), 2.0)",
                                                        "sub(sqrt(x0), 1.0)"}));
}

TEST(ElementwiseFusion, LeavesSingleOpsAndComparisonResultsAlone) {
  fuse(R"JIT(
def forward(self, x, y):
    return torch.relu(x), x * 2.0 > y, torch.sigmoid(torch.softmax(x, -1))
)JIT",
       twoShapes(2), false);
}

TEST(ElementwiseFusion, DoesNotFuseThroughANonElementwiseOp) {
  const auto graph = fuse(R"JIT(
def forward(self, x):
    return torch.sigmoid(torch.softmax(x * 2.0 + 1.0, -1) - 0.5) * 3.0
)JIT",
                          twoShapes(1), true);
  EXPECT_EQ(countKind(*graph, "aten::softmax"), 1u);
  EXPECT_EQ(programs(*graph), (std::vector<std::string>{"add(mul(x0, 2.0), 1.0)",
                                                        "mul(sigmoid(sub(x0, 0.5)), 3.0)"}));
}

TEST(ElementwiseFusion, NonConstantParametersAreNotFused) {
  // A run-time exponent or bound decides which kernel ATen takes: the node stays as it is.
  fuse(R"JIT(
def forward(self, x, n: float, lo: float):
    return torch.clamp(torch.relu(x) ** n, lo)
)JIT",
       {{torch::rand({3, 5}), 2.0, 0.1}, {torch::rand({4, 9}), 0.5, -1.0}}, false);
}

TEST(ElementwiseFusion, InPlaceOpsAreNeverFusedNorMovedAcross) {
  // relu_ writes t: mul's result has a user outside any group, so only add could root a group,
  // and alone it is not one.
  const auto in_place = parsedGraph(R"IR(
graph(%x : Tensor):
  %c2 : int = prim::Constant[value=2]()
  %c1 : int = prim::Constant[value=1]()
  %t : Tensor = aten::mul(%x, %c2)
  %r : Tensor = aten::relu_(%t)
  %y : Tensor = aten::add(%t, %c1, %c1)
  return (%y)
)IR");
  expectPassPreservesResults(passes::fuseElementwiseChains, in_place, twoShapes(1), false);

  // y is written between mul (which reads it) and the group's root: mul must not move past the
  // write, so only relu joins add.
  const auto written_input = parsedGraph(R"IR(
graph(%x : Tensor, %y : Tensor):
  %c2 : int = prim::Constant[value=2]()
  %c1 : int = prim::Constant[value=1]()
  %t : Tensor = aten::mul(%y, %c2)
  %w : Tensor = aten::add_(%y, %c1, %c1)
  %r : Tensor = aten::relu(%t)
  %z : Tensor = aten::add(%r, %y, %c1)
  return (%z)
)IR");
  const auto rewritten =
      expectPassPreservesResults(passes::fuseElementwiseChains, written_input, twoShapes(2), true);
  EXPECT_EQ(countKind(*rewritten, "aten::mul"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::add_"), 1u) << *rewritten;
  EXPECT_EQ(programs(*rewritten), std::vector<std::string>{"add(relu(x0), x1)"});
}

TEST(ElementwiseFusion, FusesInsideEachBlockButNotAcrossBlocks) {
  const auto graph = fuse(R"JIT(
def forward(self, x, flag: bool):
    t = x * 2.0
    if flag:
        y = torch.relu(t + 1.0)
    else:
        y = torch.tanh(t) - 1.0
    return y
)JIT",
                          {{torch::randn({3, 5}), true}, {torch::randn({2, 7}), false}}, true);
  EXPECT_EQ(countKind(*graph, "aten::mul"), 1u) << *graph;
  EXPECT_EQ(programs(*graph),
            (std::vector<std::string>{"relu(add(x0, 1.0))", "sub(tanh(x0), 1.0)"}));
  for (const torch::jit::Node* node : graph->block()->nodes()) {
    EXPECT_NE(node->kind().toQualString(), std::string(kFused)) << "fused at the top level";
  }
}

TEST(ElementwiseFusion, StridedIntegerAndBroadcastInputsTakeTheReferencePath) {
  const std::string source = R"JIT(
def forward(self, x, y):
    return torch.relu(x * 2 + y) - 1
)JIT";
  const std::vector<GraphInputs> sets = {
      {torch::randn({4, 3}).t(), torch::randn({3, 4})},
      {torch::randint(-9, 10, {3, 5}), torch::randint(-9, 10, {3, 5})},
      {torch::randint(-9, 10, {3, 5}), torch::randn({3, 5})},
      {torch::randn({4, 1}), torch::randn({1, 6})},
      {torch::randn({2, 6}, torch::kDouble), torch::randn({2, 6})},
      {torch::randn({5, 8}), torch::randn({1})},
  };
  fuse(source, sets, true);
}

// --- the zoo: models with element-wise chains ---------------------------------------------------

class ElementwiseFusionZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(ElementwiseFusionZoo, MatchesJit) {
  const std::string& name = GetParam();
  const torch::jit::Module module = loadZooModel(name);
  expectMatchesJit(module, loadZooInputs(name));
}

INSTANTIATE_TEST_SUITE_P(Models, ElementwiseFusionZoo,
                         ::testing::Values("activations", "scalar_arithmetic", "where_clamp",
                                           "gelu"));

TEST(ElementwiseFusion, ZooModelsGetFusedNodes) {
  for (const std::string name : {"activations", "scalar_arithmetic", "where_clamp"}) {
    const StaticModule module(loadZooModel(name));
    EXPECT_GE(countKind(module.graph(), kFused), 1u) << name << ":\n" << module.graph();
    EXPECT_EQ(module.stats().fallback_nodes, 0u) << name;
  }
}

} // namespace
} // namespace srt::testing
