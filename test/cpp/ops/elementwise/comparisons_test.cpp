// Out-variant eq / ne / lt / le / gt / ge on tensors (ops/elementwise/comparisons.cpp) against the
// JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// Standalone comparisons (the element-wise fusion pass would take a chain); tensor operands that
// broadcast, differ in dtype or are transposed, and number operands, int and float.
const char* const kComparisons = R"JIT(
def forward(self, x, y):
    return (x == y, x != y, x < y, x <= y, x > y, x >= y,
            x == 0, x != 1.5, x < 0.25, x <= 0, x > -1, x >= 2)
)JIT";

TEST(Comparisons, TensorAndScalarOverloadsMatchTheJit) {
  expectMatchesJit(kComparisons,
                   {{{torch::randn({3, 4}), torch::randn({4})}},
                    {{torch::randint(-2, 3, {2, 5}), torch::randint(-2, 3, {5, 2}).t()}},
                    {{torch::randn({2, 3}, torch::kFloat64), torch::randint(-1, 2, {1, 3})}},
                    {{torch::randn({0, 3}), torch::randn({3})}},
                    {{torch::tensor(1.0), torch::randn({2, 2})}}});
}

TEST(Comparisons, RunAsOutVariantsWhileNumberOverloadsStayNative) {
  const std::map<std::string, KernelKind> out_variant = {
      {"aten::eq", KernelKind::kOutVariant}, {"aten::ne", KernelKind::kOutVariant},
      {"aten::lt", KernelKind::kOutVariant}, {"aten::le", KernelKind::kOutVariant},
      {"aten::gt", KernelKind::kOutVariant}, {"aten::ge", KernelKind::kOutVariant}};
  expectKinds(kComparisons, out_variant, withoutPass("elementwise_fusion"));
  expectKinds(R"JIT(
def forward(self, x, n: int):
    return x.size(0) > n, x.size(0) == n
)JIT",
              {{"aten::gt", KernelKind::kNative}, {"aten::eq", KernelKind::kNative}});
}

// The bool output is reused run after run, also when a later run's shape differs.
TEST(Comparisons, OutputIsReusedAcrossRuns) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    mask = x > 0
    return x.masked_fill(mask, 0.0)
)JIT"));
  StaticRuntime runtime(module);
  for (const auto& shape : {std::vector<int64_t>{4, 3}, {2, 2}, {4, 3}}) {
    auto x = torch::randn(shape);
    EXPECT_TRUE(torch::equal(runtime({x}).toTensor(), x.masked_fill(x > 0, 0.0)));
  }
}

} // namespace
} // namespace srt::testing
