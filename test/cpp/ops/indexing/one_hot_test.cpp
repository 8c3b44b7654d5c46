// aten::one_hot (ops/indexing/one_hot.cpp) against the JIT, and ATen's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

constexpr const char* kOneHot = R"JIT(
def forward(self, labels, classes: int):
    return torch.one_hot(labels), torch.one_hot(labels, classes).float()
)JIT";

TEST(OneHot, MatchesJit) {
  expectMatchesJit(kOneHot, {{{torch::tensor({0, 3, 1, 3}), int64_t{5}}},
                             {{torch::tensor({{2, 0}, {1, 1}, {0, 4}}), int64_t{6}}},
                             {{torch::tensor({0}).expand({3}), int64_t{1}}}});
  expectKinds(kOneHot, {{"aten::one_hot", KernelKind::kOutVariant}});
}

TEST(OneHot, BadLabelsAreAtensErrorsAndTheRuntimeKeepsWorking) {
  StaticModule module(scriptModule(kOneHot));
  const auto fails = [&](const torch::Tensor& labels, int64_t classes, const char* message) {
    EXPECT_THAT(
        [&] {
          static_cast<void>(module({labels, classes}));
        },
        ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr(message)));
  };
  fails(torch::tensor({0, -1}), 3, "Class values must be non-negative.");
  fails(torch::tensor({0, 3}), 3, "Class values must be smaller than num_classes.");
  fails(torch::tensor({0.0, 1.0}), 3, "one_hot is only applicable to index tensor.");
  fails(torch::zeros({0}, torch::kLong), 3, "Can not infer total number of classes");
  const torch::Tensor labels = torch::tensor({2, 0});
  const auto outputs = module({labels, int64_t{4}}).toTupleRef().elements();
  EXPECT_TRUE(torch::equal(outputs[0].toTensor(), torch::one_hot(labels)));
  EXPECT_TRUE(torch::equal(outputs[1].toTensor(), torch::one_hot(labels, 4).to(torch::kFloat)));
}

} // namespace
} // namespace srt::testing
