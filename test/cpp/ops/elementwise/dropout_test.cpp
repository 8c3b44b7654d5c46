// aten::dropout out-variant kernel (ops/elementwise/dropout.cpp): the identity cases against the
// JIT, the training case against ATen under the same seed.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

// A probability and flag known only at run time survive preparation. Where ATen returns the input
// itself, later values must not take its memory while the dropout's result is read.
TEST(Dropout, IdentityCasesMatchTheJit) {
  const std::string source = R"JIT(
def forward(self, x, p: float, train: bool):
    a = x * 2.0
    b = torch.dropout(a, p, train)
    c = b + 1.0
    d = c * 3.0
    return d * b
)JIT";
  EXPECT_EQ(StaticModule(scriptModule(source)).stats().fallback_nodes, 0u);
  expectMatchesJit(source, {inputs({randnFloat({4, 5}), 0.0, true}),
                            inputs({randnFloat({2, 3}), 0.5, false}),
                            inputs({randnFloat({0, 3}), 0.5, true}),
                            inputs({randnFloat({3, 4}).t(), 0.0, true})});
}

// Training mode draws the same noise as ATen from the same generator state.
TEST(Dropout, TrainingDrawsAtensNoise) {
  const std::string source = forwardReturning("x, p: float", "torch.dropout(x * 1.0, p, True)");
  torch::jit::Module module = scriptModule(source);
  StaticModule static_module(module);
  StaticRuntime runtime(static_module);
  for (const double probability : {0.25, 0.5, 1.0}) {
    for (const auto& x : {torch::randn({4, 6}), torch::randn({3, 5}).t(), torch::randn({7})}) {
      for (int run = 0; run < 2; ++run) {
        torch::manual_seed(7 + run);
        const at::Tensor expected = module.forward({x, probability}).toTensor();
        torch::manual_seed(7 + run);
        const at::Tensor actual = runtime({x, probability}).toTensor();
        EXPECT_TRUE(torch::equal(expected, actual)) << "p=" << probability;
      }
    }
  }
}

TEST(Dropout, AProbabilityOutOfRangeIsAClearError) {
  StaticModule module(scriptModule(forwardReturning("x, p: float", "torch.dropout(x, p, True)")));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({torch::randn({2}), 1.5})), c10::Error);
  EXPECT_EQ(runtime({torch::ones({2}), 0.0}).toTensor().sizes(), at::IntArrayRef({2}));
}

} // namespace
} // namespace srt::testing
