// logical_or, masked_fill, logical_not and tril/triu against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

size_t outVariantNodes(const char* source) {
  return StaticModule(scriptModule(source)).stats().out_variant_nodes;
}

TEST(Masking, LogicalOrBroadcastsAndAcceptsNonBoolInputs) {
  const char* source = R"JIT(
def forward(self, a, b):
    return torch.logical_or(a, b)
)JIT";
  expectMatchesJit(source, {{{torch::rand({3, 4}) > 0.5, torch::rand({4}) > 0.5}},
                            {{torch::randint(0, 2, {2, 5}), torch::rand({2, 5}).t().t()}},
                            {{torch::rand({0, 4}) > 0.5, torch::rand({4}) > 0.5}}});
  EXPECT_EQ(outVariantNodes(source), 1u);
}

TEST(Masking, MaskedFillScalarAndTensorValues) {
  const char* source = R"JIT(
def forward(self, x, mask, fill: Tensor):
    return x.masked_fill(mask, float("-inf")) + x.masked_fill(mask, fill)
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3, 3}), torch::rand({3, 3}) > 0.5, torch::tensor(2.0)}},
                    {{torch::randn({4, 5}).t(), torch::rand({5, 4}) > 0.3, torch::tensor(-1.0)}},
                    {{torch::randn({1, 3}), torch::rand({2, 3}) > 0.5, torch::tensor(0.5)}}});
  EXPECT_EQ(outVariantNodes(source), 3u);
}

// A causal mask from the run's sequence length, as GPT-style attention builds it.
TEST(Masking, TrilAndTriuOfARunTimeSize) {
  const char* source = R"JIT(
def forward(self, x, diagonal: int):
    t = x.size(-1)
    causal = torch.tril(torch.ones(t, t))
    return x.masked_fill(causal == 0, float("-inf")), x.triu(diagonal), torch.tril(x, -1)
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 4, 4}), 1}},
                            {{torch::randn({5, 5}).t(), -2}},
                            {{torch::randn({1, 6, 6}, torch::kFloat64), 0}},
                            {{torch::randn({0, 3, 3}), 0}}});
  expectKinds(source, {{"aten::tril", KernelKind::kOutVariant},
                       {"aten::triu", KernelKind::kOutVariant},
                       {"aten::ones", KernelKind::kOutVariant}});
}

} // namespace
} // namespace srt::testing
