// srt::variadic_cat / variadic_stack kernels (ops/shapes/variadic_ops.cpp) against aten::cat /
// stack.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

const char* kCatStack = R"JIT(
def forward(self, a, b, dim: int):
    return torch.cat([a, b, a], dim), torch.stack([b, a], dim)
)JIT";

TEST(VariadicOps, OutVariantsMatchCatAndStack) {
  // Shape changes between runs, mixed dtypes (promoted like aten::cat), non-contiguous inputs,
  // empty tensors and negative dims.
  expectMatchesJit(kCatStack,
                   {{{torch::randn({2, 3}), torch::randn({2, 3}), int64_t{0}}},
                    {{torch::randn({4, 2}), torch::randn({4, 2}), int64_t{1}}},
                    {{torch::randn({2, 3}), torch::randn({2, 3}, torch::kFloat64), int64_t{-1}}},
                    {{torch::randn({3, 2}).t(), torch::randn({2, 3}), int64_t{0}}},
                    {{torch::zeros({0, 3}), torch::zeros({0, 3}), int64_t{0}}},
                    {{torch::arange(6).view({2, 3}), torch::arange(6).view({2, 3}), int64_t{1}}}});
  expectKinds(kCatStack, {{"srt::variadic_cat", KernelKind::kOutVariant},
                          {"srt::variadic_stack", KernelKind::kOutVariant}});
}

TEST(VariadicOps, NativeWithoutOutVariants) {
  StaticModuleOptions options;
  options.enable_out_variant = false;
  options.optimize_memory = false;
  StaticModule module(scriptModule(kCatStack), options);
  const auto kinds = kernelKinds(module);
  EXPECT_EQ(kinds.at("srt::variadic_cat"), std::set<KernelKind>{KernelKind::kNative});
  EXPECT_EQ(module.stats().fallback_nodes, 0u);
}

TEST(VariadicOps, ErrorsNameTheProblem) {
  StaticModule module(scriptModule(kCatStack));
  EXPECT_THROW((void)module({torch::randn({2, 3}), torch::randn({3, 3}), int64_t{1}}), c10::Error);
  // The runtime is usable after the error.
  EXPECT_NO_THROW((void)module({torch::randn({2, 3}), torch::randn({2, 3}), int64_t{1}}));
}

} // namespace
} // namespace srt::testing
