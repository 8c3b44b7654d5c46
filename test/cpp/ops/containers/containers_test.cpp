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

// What segmentation models (a dict of heads) and feature collectors (list writes) do, natively.
TEST(Containers, DictAndListWritesAreNative) {
  const std::string source = R"JIT(
def forward(self, x, y):
    result: Dict[str, Tensor] = {}
    result["out"] = x * 2
    result["aux"] = y + 1
    copied = dict(result)
    copied["out"] = copied["out"] - 1
    features = [x]
    features.insert(0, y)
    features.insert(-5, x * 3)
    features.extend([y, x])
    features.extend(features)
    features[1] = x - y
    total = torch.stack(features, 0).sum(0)
    return (result["out"], copied, total, len(result), "aux" in result, list(result.keys()),
            list(result.values()), result.items())
)JIT";
  expectMatchesJit(source, {{{torch::randn({2}), torch::randn({2})}},
                            {{torch::randn({3, 1}), torch::randn({3, 1})}}});
  const ModuleStats stats = StaticModule(scriptModule(source)).stats();
  EXPECT_EQ(stats.fallback_nodes, 0u) << "falls back on " << stats.fallback_ops.size() << " ops";
}

TEST(Containers, MissingKeyAndBadIndexAreErrors) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x, key: str, index: int):
    d = {"a": x}
    features = [x]
    features[index] = x + 1
    return d[key] + features[0]
)JIT"));
  EXPECT_THROW(module({torch::ones({1}), std::string("b"), int64_t{0}}), c10::Error);
  EXPECT_THROW(module({torch::ones({1}), std::string("a"), int64_t{3}}), c10::Error);
  EXPECT_EQ(module({torch::ones({1}), std::string("a"), int64_t{-1}}).toTensor().item<float>(),
            3.f);
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
