// exp, log, sqrt, rsqrt and pow out-variant kernels against the JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

const std::vector<std::string> kUnaryMath = {"torch.exp(x)", "torch.log(x)", "torch.sqrt(x)",
                                             "torch.rsqrt(x)"};

// Every exponent ATen special-cases, and two it does not.
const std::vector<std::string> kPowers = {"x ** 0",   "x ** 1",   "x ** 2",          "x ** 3",
                                          "x ** -1",  "x ** -2",  "x ** 0.5",        "x ** -0.5",
                                          "x ** 1.7", "x ** 2.0", "torch.pow(x, -3)"};

TEST(ElementwiseMath, UnaryFloat) {
  for (const auto& expression : kUnaryMath) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, unaryShapes(randPositive));
    expectMatchesJit(
        source, unaryShapes([](at::IntArrayRef s) { return randPositive(s).to(torch::kDouble); }));
    // Negative inputs: NaN where ATen gives NaN.
    expectMatchesJit(source, {inputs({randnFloat({4, 5})}), inputs({randnFloat({9})})});
  }
}

TEST(ElementwiseMath, UnaryInt64PromotesToFloat) {
  for (const auto& expression : kUnaryMath) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("x", expression),
                     {inputs({torch::randint(1, 9, {2, 3}, torch::kLong)}),
                      inputs({torch::randint(1, 9, {0}, torch::kLong)})});
  }
}

TEST(ElementwiseMath, PowTensorScalar) {
  for (const auto& expression : kPowers) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, unaryShapes(randPositive));
    expectMatchesJit(source, unaryShapes(randnDouble));
  }
  // int64 bases: integer exponents stay int64, float exponents promote.
  for (const std::string expression : {"x ** 2", "x ** 3", "x ** 0", "x ** 0.5", "x ** 1.5"}) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("x", expression),
                     {inputs({torch::randint(0, 9, {2, 3}, torch::kLong)}),
                      inputs({torch::randint(0, 9, {4}, torch::kLong)})});
  }
}

TEST(ElementwiseMath, PowTensorTensorAndScalarTensor) {
  for (const std::string expression : {"x ** y", "torch.pow(x, y)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x, y", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, binaryShapes(randPositive));
  }
  for (const std::string expression : {"2 ** y", "2.5 ** y", "torch.pow(1, y)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("y", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, unaryShapes(randnFloat));
    expectMatchesJit(source, {inputs({torch::randint(0, 5, {2, 3}, torch::kLong)}),
                              inputs({torch::randint(0, 5, {7}, torch::kLong)})});
  }
}

TEST(ElementwiseMath, ExponentFromInput) {
  const std::string source = forwardReturning("x, e: float", "x ** e");
  expectMatchesJit(source, {inputs({randPositive({2, 3}), 2.0}), inputs({randPositive({5}), 0.5}),
                            inputs({randPositive({3}), -1.0}), inputs({randPositive({4}), 1.3})});
}

TEST(ElementwiseMath, FastPathAgreesWithAtenPath) {
  const at::Tensor x = randPositive({41, 73}) * 3;
  const at::Tensor xn = x.t().contiguous().t();
  std::vector<std::string> expressions = kUnaryMath;
  expressions.insert(expressions.end(), kPowers.begin(), kPowers.end());
  for (const auto& expression : expressions) {
    SCOPED_TRACE(expression);
    StaticModule module(scriptModule(forwardReturning("x", expression)));
    const at::Tensor fast = module({x}).toTensor();
    const at::Tensor aten = module({xn}).toTensor();
    EXPECT_TRUE(torch::allclose(fast, aten, 1e-6, 1e-6));
  }
}

TEST(ElementwiseMath, ScalarOverloadsFallBack) {
  const std::string source =
      forwardReturning("x: float", "(torch.exp(x), torch.log(x), torch.sqrt(x))");
  ModuleStats stats = StaticModule(scriptModule(source)).stats();
  EXPECT_EQ(stats.out_variant_nodes, 0u);
  expectMatchesJit(source, {inputs({0.5}), inputs({2.0})});
}

} // namespace
} // namespace srt::testing
