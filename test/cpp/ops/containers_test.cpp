// Native tuple, list and dict kernels against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"

namespace srt::testing {
namespace {

TEST(Containers, ConstructAndUnpack) {
  expectMatchesJit(
      R"JIT(
def forward(self, x, y):
    pair = (x, y)
    a, b = pair
    items = [a, b, a + b]
    first, second, third = items
    table = {"sum": third, "x": first}
    return (table, items, pair[1], second)
)JIT",
      {{{torch::randn({2}), torch::randn({2})}}, {{torch::randn({3, 1}), torch::randn({3, 1})}}});
}

TEST(Containers, NativeKernelsAreUsed) {
  auto module = scriptModule(R"JIT(
def forward(self, x):
    items = [x, x]
    a, b = items
    return (a, b)
)JIT");
  ModuleStats stats = StaticModule(module).stats();
  EXPECT_EQ(stats.fallback_nodes, 0u);
  EXPECT_EQ(stats.native_nodes, stats.nodes);
}

TEST(Containers, TupleIndexWithNegativeIndex) {
  expectMatchesJit(
      R"JIT(
def forward(self, x, y):
    t = (x, y, x * y)
    return t[-1] + t[0]
)JIT",
      {{{torch::randn({2}), torch::randn({2})}}, {{torch::randn({1, 4}), torch::randn({1, 4})}}});
}

} // namespace
} // namespace srt::testing
