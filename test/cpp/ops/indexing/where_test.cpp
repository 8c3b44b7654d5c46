// aten::where out-variant kernels against the JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

at::Tensor mask(at::IntArrayRef shape) {
  return torch::rand(shape) > 0.5;
}

TEST(ElementwiseWhere, TensorTensor) {
  const std::string source = forwardReturning("c, a, b", "torch.where(c, a, b)");
  expectAllOutVariant(source);
  for (const auto& make : {randnFloat, randnDouble, randintLong}) {
    expectMatchesJit(source, {inputs({mask({2, 3}), make({2, 3}), make({2, 3})}),
                              inputs({mask({5}), make({5}), make({5})}),
                              inputs({mask({4, 1}), make({1, 3}), make({4, 3})}),
                              inputs({mask({3, 4}).t(), make({4, 3}), make({3, 4}).t()}),
                              inputs({mask({0, 5}), make({0, 5}), make({0, 5})}),
                              inputs({mask({3, 40000}), make({3, 40000}), make({3, 40000})})});
  }
  // Mixed dtypes promote.
  expectMatchesJit(source, {inputs({mask({2, 3}), randintLong({2, 3}), randnFloat({2, 3})}),
                            inputs({mask({3}), randnFloat({3}), randnDouble({3})})});
}

TEST(ElementwiseWhere, ScalarOperands) {
  for (const std::string expression : {"torch.where(c, a, 0.5)", "torch.where(c, a, 2)",
                                       "torch.where(c, 1.5, a)", "torch.where(c, -1, a)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("c, a", expression);
    expectAllOutVariant(source);
    for (const auto& make : {randnFloat, randnDouble, randintLong}) {
      expectMatchesJit(source,
                       {inputs({mask({2, 3}), make({2, 3})}), inputs({mask({4, 1}), make({3})}),
                        inputs({mask({0, 2}), make({0, 2})})});
    }
  }
}

TEST(ElementwiseWhere, BothScalars) {
  for (const std::string expression : {"torch.where(c, 1.0, 0.0)", "torch.where(c, 3, -3)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("c", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, {inputs({mask({2, 3})}), inputs({mask({5})}), inputs({mask({0})})});
  }
}

// where(condition): the nonzero indices, one tensor per dim (torchvision's box filtering),
// natively.
TEST(ElementwiseWhere, ConditionOnlyOverloadIsNative) {
  const std::string source = forwardReturning("c", "torch.where(c)");
  ModuleStats stats = StaticModule(scriptModule(source)).stats();
  EXPECT_EQ(stats.fallback_nodes, 0u);
  expectMatchesJit(source, {inputs({mask({2, 3})}), inputs({mask({4})}),
                            inputs({torch::zeros({3, 2}, torch::kBool)})});
}

TEST(ElementwiseWhere, FastPathAgreesWithAtenPath) {
  const at::Tensor c = mask({33, 65});
  const at::Tensor a = torch::randn({33, 65});
  const at::Tensor b = torch::randn({33, 65});
  StaticModule module(scriptModule(forwardReturning("c, a, b", "torch.where(c, a, b)")));
  const at::Tensor fast = module({c, a, b}).toTensor();
  const at::Tensor aten = module({c, a.t().contiguous().t(), b}).toTensor();
  EXPECT_TRUE(torch::equal(fast, aten));
}

} // namespace
} // namespace srt::testing
