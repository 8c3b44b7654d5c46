// Out-variant cat, stack, index_select and gather (ops/shapes/shape_ops.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

TEST(Shape, Cat) {
  const char* source = R"JIT(
def forward(self, a, b):
    ab = torch.cat([a, b], 1)
    aba = torch.cat([a, b, a], -1)
    rows = torch.cat([a, a], 0)
    return ab + 1, aba, rows
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3}), torch::randn({2, 4})}},
                            {{torch::randn({5, 1}), torch::randn({5, 0})}},
                            {{torch::randn({3, 2}).t(), torch::randn({2, 2})}},
                            {{torch::zeros({0, 2}), torch::zeros({0, 1})}}});
  expectKinds(source, {{"aten::cat", KernelKind::kOutVariant}}, withoutPass("variadic_cat_stack"));
}

TEST(Shape, CatDtypes) {
  const char* source = R"JIT(
def forward(self, a, b):
    return torch.cat([a, b], 0)
)JIT";
  expectMatchesJit(source,
                   {{{torch::arange(3), torch::arange(2)}},
                    {{torch::randn({2}, torch::kFloat64), torch::randn({4}, torch::kFloat64)}},
                    {{torch::randn({2}), torch::randn({1}, torch::kFloat64)}},
                    {{torch::arange(2), torch::randn({2})}}});
}

TEST(Shape, Stack) {
  const char* source = R"JIT(
def forward(self, a, b, c):
    return torch.stack([a, b, c], 0), torch.stack([a, c], -1), torch.stack([b], 1) * 2
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3}), torch::randn({2, 3}), torch::randn({2, 3})}},
                    {{torch::randn({4}), torch::randn({4}), torch::randn({4})}},
                    {{torch::randn({3, 2}).t(), torch::randn({2, 3}), torch::randn({3, 2}).t()}},
                    {{torch::zeros({0, 2}), torch::zeros({0, 2}), torch::zeros({0, 2})}},
                    {{torch::arange(3), torch::arange(3), torch::arange(3)}}});
  expectKinds(source, {{"aten::stack", KernelKind::kOutVariant}},
              withoutPass("variadic_cat_stack"));
}

TEST(Shape, IndexSelectAndGather) {
  const char* source = R"JIT(
def forward(self, x, index):
    rows = torch.index_select(x, 0, index)
    cols = x.index_select(1, index)
    gathered = torch.gather(x, 1, index.unsqueeze(0).expand(x.size(0), index.size(0)))
    return rows, cols + 1, gathered
)JIT";
  expectMatchesJit(source, {{{torch::randn({4, 3}), torch::tensor({0, 2, 2, 1})}},
                            {{torch::randn({3, 5}).t(), torch::tensor({1})}},
                            {{torch::randn({3, 3}, torch::kFloat64), torch::tensor({2, 0})}},
                            {{torch::arange(12).view({4, 3}), torch::zeros({0}, torch::kLong)}}});
  expectKinds(source, {{"aten::index_select", KernelKind::kOutVariant},
                       {"aten::gather", KernelKind::kOutVariant}});
}

TEST(Shape, Arange) {
  const char* source = R"JIT(
def forward(self, x, step: float):
    n = x.size(0)
    return (torch.arange(n), torch.arange(1, n + 1), torch.arange(0, n, 2), torch.arange(0.0, n + 0.5, step),
            torch.arange(n, dtype=7) * 2, torch.arange(n, device=x.device), torch.arange(n, 0, -1))
)JIT";
  expectMatchesJit(
      source, {{{torch::zeros({5}), 0.5}}, {{torch::zeros({0}), 1.0}}, {{torch::zeros({9}), 2.5}}});
  expectKinds(source, {{"aten::arange", KernelKind::kOutVariant}});
}

// The cat result is returned: it must be a fresh tensor every run, not last run's one.
TEST(Shape, ReturnedOutVariantResultIsNotOverwritten) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, a, b):
    return torch.cat([a, b], 0)
)JIT"));
  auto first = module({torch::ones({2}), torch::ones({1})}).toTensor();
  auto second = module({torch::zeros({2}), torch::zeros({1})}).toTensor();
  EXPECT_TRUE(torch::equal(first, torch::ones({3})));
  EXPECT_TRUE(torch::equal(second, torch::zeros({3})));
}

TEST(Shape, DisabledOutVariantsFallBack) {
  StaticModuleOptions options;
  options.enable_out_variant = false;
  options.optimize_memory = false;
  options.disabled_passes = {"variadic_cat_stack"};
  StaticModule module(scriptModule(R"JIT(
def forward(self, a, b):
    return torch.cat([a, b], 0)
)JIT"),
                      options);
  EXPECT_EQ(module.stats().fallback_ops.at("aten::cat"), 1u);
}

} // namespace
} // namespace srt::testing
