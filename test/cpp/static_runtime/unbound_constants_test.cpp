// Unbound constants: weights left out of freezing and supplied after the module is built.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/zoo.h"

namespace srt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// The JIT's result for `module` with fc1.weight replaced by `weight`.
at::Tensor expectedWith(const torch::jit::Module& module, const at::Tensor& weight,
                        const at::Tensor& x) {
  torch::jit::Module copy = module.clone();
  copy.attr("fc1").toModule().setattr("weight", weight);
  return copy.forward({x}).toTensor();
}

StaticModuleOptions withUnbound(std::vector<std::string> names) {
  StaticModuleOptions options;
  options.unbound_constants = std::move(names);
  return options;
}

TEST(UnboundConstants, MustBeSetBeforeRunningThenApplyToEveryRuntime) {
  const torch::jit::Module mlp = loadZooModel("mlp");
  StaticModule module(mlp, withUnbound({"fc1.weight", "fc3.bias"}));
  EXPECT_THAT(module.unboundConstants(), ::testing::ElementsAre("fc1.weight", "fc3.bias"));
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({4, 64});
  EXPECT_THAT([&] { (void)runtime({x}); },
              ThrowsMessage<c10::Error>(HasSubstr("not set yet: fc1.weight, fc3.bias")));

  const at::Tensor original = mlp.attr("fc1").toModule().attr("weight").toTensor();
  module.setConstant("fc1.weight", original);
  EXPECT_THAT([&] { (void)runtime({x}); },
              ThrowsMessage<c10::Error>(HasSubstr("not set yet: fc3.bias")));
  module.setConstant("fc3.bias", mlp.attr("fc3").toModule().attr("bias").toTensor());
  for (int64_t rows : {4, 1, 4}) {
    const at::Tensor input = torch::randn({rows, 64});
    EXPECT_TRUE(torch::allclose(runtime({input}).toTensor(), expectedWith(mlp, original, input),
                                1e-5, 1e-5));
  }

  // Replaced between runs: the next run of every runtime (this one, and the module's pool) uses it.
  const at::Tensor replacement = torch::randn_like(original);
  const at::Tensor before = replacement.clone();
  module.setConstant("fc1.weight", replacement);
  const at::Tensor expected = expectedWith(mlp, replacement, x);
  EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), expected, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(module({x}).toTensor(), expected, 1e-5, 1e-5));
  EXPECT_TRUE(torch::equal(replacement, before)) << "the caller's tensor must not be written";
}

TEST(UnboundConstants, NamesAreCheckedWhenBuildingAndSetting) {
  const torch::jit::Module mlp = loadZooModel("mlp");
  EXPECT_THAT([&] { StaticModule module(mlp, withUnbound({"fc9.weight"})); },
              ThrowsMessage<c10::Error>(HasSubstr("'fc9.weight' is not an attribute")));
  EXPECT_THAT([&] { StaticModule module(mlp, withUnbound({"fc1"})); },
              ThrowsMessage<c10::Error>(HasSubstr("expected a tensor attribute")));
  StaticModule module(mlp, withUnbound({"fc2.bias"}));
  EXPECT_THAT([&] { module.setConstant("fc2.weight", torch::ones({1})); },
              ThrowsMessage<c10::Error>(HasSubstr("they are: fc2.bias")));
  StaticModule plain(mlp);
  EXPECT_THAT([&] { plain.setConstant("fc2.bias", torch::ones({1})); },
              ThrowsMessage<c10::Error>(HasSubstr("it has none")));
}

} // namespace
} // namespace srt::testing
