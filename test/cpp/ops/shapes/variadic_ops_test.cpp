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

const char* kChannelCat = R"JIT(
def forward(self, a, b, c):
    return torch.cat([a, b, c], 1)
)JIT";

// Channel concatenations of image batches laid out differently (NCHW and channels last, a
// [N, C, L] with channel stride 1 among contiguous ones, NCDHW and channels-last 3-D), where ATen
// writes a contiguous result: channel halves of a larger tensor (one image, and two whose batch
// stride is the whole's), and the cases left to ATen's cat (every input channels last: a
// channels-last result; an input strided within its rows). Values and the result's strides are
// ATen's, each input set twice.
TEST(VariadicOps, ChannelCatOfMixedLayoutsMatchesCat) {
  const auto channels_last = [](at::Tensor t) {
    return t.contiguous(t.dim() == 5 ? at::MemoryFormat::ChannelsLast3d
                                     : at::MemoryFormat::ChannelsLast);
  };
  const std::vector<InputSet> inputs = {
      {{torch::randn({1, 16, 5, 7}).slice(1, 0, 8), channels_last(torch::randn({1, 3, 5, 7})),
        torch::randn({1, 4, 5, 7})}},
      {{torch::randn({2, 16, 5, 7}).slice(1, 4, 12), channels_last(torch::randn({2, 3, 5, 7})),
        channels_last(torch::randn({2, 4, 5, 7}))}},
      {{torch::randn({2, 6, 9}), torch::randn({2, 9, 5}).transpose(1, 2), torch::randn({2, 4, 9})}},
      {{torch::randn({1, 4, 3, 4, 5}), channels_last(torch::randn({1, 2, 3, 4, 5})),
        torch::randn({1, 3, 3, 4, 5})}},
      {{channels_last(torch::randn({2, 8, 5, 7})), channels_last(torch::randn({2, 3, 5, 7})),
        channels_last(torch::randn({2, 4, 5, 7}))}},
      {{torch::randn({1, 8, 10, 7}).slice(2, 0, 10, 2), channels_last(torch::randn({1, 3, 5, 7})),
        torch::randn({1, 4, 5, 7})}}};
  expectMatchesJit(kChannelCat, inputs);
  StaticModule module(scriptModule(kChannelCat));
  for (const InputSet& set : inputs) {
    for (int run = 0; run < 2; ++run) {
      const at::Tensor ours = module(set.args).toTensor();
      const at::Tensor aten =
          at::cat({set.args[0].toTensor(), set.args[1].toTensor(), set.args[2].toTensor()}, 1);
      EXPECT_TRUE(torch::equal(ours, aten));
      EXPECT_EQ(ours.strides(), aten.strides());
    }
  }
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
