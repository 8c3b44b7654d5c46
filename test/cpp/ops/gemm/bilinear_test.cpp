// aten::bilinear (ops/gemm/bilinear.cpp) against the JIT: with and without bias, leading
// dimensions of any rank, and ATen's errors for inputs that do not fit the weight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

constexpr const char* kBilinear = R"JIT(
def forward(self, a, b, weight, bias):
    return torch.bilinear(a, b, weight, bias), torch.bilinear(a, b, weight, None).relu()
)JIT";

TEST(Bilinear, MatchesJit) {
  const torch::Tensor weight = torch::randn({5, 8, 6});
  const torch::Tensor bias = torch::randn({5});
  expectMatchesJit(kBilinear, {{{torch::randn({4, 8}), torch::randn({4, 6}), weight, bias}},
                               {{torch::randn({2, 3, 8}), torch::randn({2, 3, 6}), weight, bias}},
                               {{torch::randn({8}), torch::randn({6}), weight, bias}}});
  expectKinds(kBilinear, {{"aten::bilinear", KernelKind::kOutVariant}});
}

TEST(Bilinear, InputsThatDoNotFitTheWeightAreClearErrors) {
  StaticModule module(scriptModule(kBilinear));
  const torch::Tensor weight = torch::randn({5, 8, 6});
  const torch::Tensor bias = torch::randn({5});
  EXPECT_THAT(
      [&] {
        static_cast<void>(module({torch::randn({4, 7}), torch::randn({4, 6}), weight, bias}));
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("input1 size does not match")));
  EXPECT_THAT(
      [&] {
        static_cast<void>(module({torch::randn({4, 8}), torch::randn({3, 6}), weight, bias}));
      },
      ::testing::ThrowsMessage<c10::Error>(
          ::testing::HasSubstr("input batch dimensions do not match")));
  // The runtime keeps working after the errors.
  const torch::Tensor a = torch::randn({4, 8});
  const torch::Tensor b = torch::randn({4, 6});
  const auto outputs = module({a, b, weight, bias}).toTupleRef().elements();
  EXPECT_TRUE(torch::allclose(outputs[0].toTensor(), torch::bilinear(a, b, weight, bias)));
}

} // namespace
} // namespace srt::testing
