// prelu and glu out-variant kernels (ops/elementwise/parametric_activations.cpp) against the JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

TEST(Prelu, OneSlopeAndOneSlopePerChannel) {
  const std::string source = forwardReturning("x, w", "torch.prelu(x, w)");
  expectAllOutVariant(source, 1);
  for (const auto& make : {randnFloat, randnDouble}) {
    expectMatchesJit(source,
                     {inputs({make({2, 3, 5}), make({3})}), inputs({make({4, 3}), make({3})}),
                      inputs({make({2, 3, 4, 4}), make({1})}),
                      inputs({make({5, 3}).t(), make({5})}), inputs({make({7}), make({1})}),
                      inputs({make({0, 3}), make({3})}), inputs({make({4, 16, 5000}), make({16})}),
                      // Channels innermost: a 1-D convolution's output read through a transpose,
                      // channels last; one slope on a transposed input.
                      inputs({make({2, 300, 24}).transpose(1, 2), make({24})}),
                      inputs({make({2, 5, 6, 8}).permute({0, 3, 1, 2}), make({8})}),
                      inputs({make({2, 300, 24}).transpose(1, 2), make({1})})});
  }
}

TEST(Prelu, AWeightOfTheWrongSizeIsAClearError) {
  StaticModule module(scriptModule(forwardReturning("x, w", "torch.prelu(x, w)")));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({torch::randn({2, 3, 4}), torch::randn({2})})),
               c10::Error);
  const at::Tensor x = torch::randn({2, 3, 4});
  const at::Tensor w = torch::rand({3});
  EXPECT_TRUE(torch::allclose(runtime({x, w}).toTensor(), torch::prelu(x, w)));
}

TEST(Glu, MatchesTheJit) {
  for (const std::string expression : {"torch.glu(x, -1)", "torch.glu(x, 1)", "torch.glu(x, 0)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randnDouble}) {
      expectMatchesJit(source, {inputs({make({4, 6, 8})}), inputs({make({2, 4, 2})}),
                                inputs({make({8, 6, 4}).transpose(0, 2)})});
    }
  }
}

} // namespace
} // namespace srt::testing
