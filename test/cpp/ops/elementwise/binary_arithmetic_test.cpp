// aten::add / sub / mul / div out-variant kernels against the JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

const std::vector<std::string> kTensorTensorExpressions = {
    "a + b", "torch.add(a, b, alpha=2)", "torch.add(a, b, alpha=0.5)",
    "a - b", "torch.sub(a, b, alpha=3)", "a * b",
    "a / b"};

TEST(ElementwiseBinary, TensorTensorFloat) {
  for (const auto& expression : kTensorTensorExpressions) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("a, b", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, binaryShapes(randnFloat));
  }
}

TEST(ElementwiseBinary, TensorTensorDouble) {
  for (const auto& expression : kTensorTensorExpressions) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("a, b", expression), binaryShapes(randnDouble));
  }
}

TEST(ElementwiseBinary, TensorTensorInt64) {
  // Integer alpha only: a float alpha with integer tensors is an error in ATen.
  for (const std::string expression : {"a + b", "torch.add(a, b, alpha=2)", "a - b", "a * b"}) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("a, b", expression), binaryShapes(randintLong));
  }
}

TEST(ElementwiseBinary, TypePromotion) {
  const std::vector<InputSet> sets = {
      inputs({randintLong({2, 3}), randnFloat({2, 3})}),
      inputs({randnFloat({2, 3}), randnDouble({2, 3})}),
      inputs({randnFloat({4}), torch::tensor(2.5, torch::kDouble)})}; // 0-dim keeps float32
  for (const std::string expression : {"a + b", "a - b", "a * b", "a / b"}) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("a, b", expression), sets);
  }
  // bool promotes to the other operand's type (subtracting a bool tensor is an error).
  for (const std::string expression : {"a + b", "a * b"}) {
    expectMatchesJit(forwardReturning("a, b", expression),
                     {inputs({randintLong({3}), torch::tensor(true)}),
                      inputs({torch::rand({2, 2}) > 0.5, torch::rand({2, 2}) > 0.5})});
  }
  // Integer true division gives the default float dtype.
  expectMatchesJit(forwardReturning("a, b", "a / b"),
                   {inputs({randintLong({2, 3}), torch::randint(1, 5, {2, 3}, torch::kLong)})});
}

const std::vector<std::string> kTensorScalarExpressions = {"a + 2",
                                                           "a + 2.5",
                                                           "torch.add(a, 3, alpha=2)",
                                                           "a - 1.5",
                                                           "torch.sub(a, 2, alpha=3)",
                                                           "a * 3",
                                                           "a * 0.5",
                                                           "a / 4",
                                                           "a / 2.5"};

TEST(ElementwiseBinary, TensorScalar) {
  for (const auto& expression : kTensorScalarExpressions) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("a", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, unaryShapes(randnFloat));
    expectMatchesJit(source, unaryShapes(randnDouble));
    // int64 tensor with int scalars stays int64; a float scalar promotes to float32.
    expectMatchesJit(source, unaryShapes(randintLong));
  }
}

TEST(ElementwiseBinary, ScalarsFromInputs) {
  const std::vector<InputSet> sets = {inputs({randnFloat({2, 3}), 1.5, int64_t{3}}),
                                      inputs({randnFloat({5}), -2.0, int64_t{-4}}),
                                      inputs({randintLong({4}), 0.25, int64_t{2}})};
  expectMatchesJit(forwardReturning("a, s: float, i: int", "(a * s + i) / s - a * i"), sets);
}

TEST(ElementwiseBinary, DivRoundingModes) {
  const std::vector<InputSet> float_sets = binaryShapes(randnFloat);
  const std::vector<InputSet> int_sets = {
      inputs({randintLong({2, 3}), torch::randint(1, 5, {2, 3}, torch::kLong)}),
      inputs({randintLong({4, 1}), -torch::randint(1, 5, {1, 3}, torch::kLong)})};
  for (const std::string mode : {"'trunc'", "'floor'", "None"}) {
    SCOPED_TRACE(mode);
    const std::string source =
        forwardReturning("a, b", "torch.div(a, b, rounding_mode=" + mode + ")");
    expectAllOutVariant(source);
    expectMatchesJit(source, float_sets);
    expectMatchesJit(source, int_sets);
    const std::string scalar_source =
        forwardReturning("a", "torch.div(a, 3, rounding_mode=" + mode + ")");
    expectAllOutVariant(scalar_source);
    expectMatchesJit(scalar_source, unaryShapes(randnFloat));
    expectMatchesJit(scalar_source, {inputs({randintLong({2, 3})}), inputs({randintLong({0})})});
  }
}

TEST(ElementwiseBinary, ComplexScalarTakesTheAtenPath) {
  const std::vector<InputSet> sets = {inputs({randnFloat({2, 3})}), inputs({randnFloat({4})})};
  expectMatchesJit(forwardReturning("a", "a * complex(1.0, 2.0)"), sets);
}

// The tensor factories decline list concatenation (add.t); the list kernels take it natively.
TEST(ElementwiseBinary, ListAddIsNotATensorKernel) {
  const std::string source = forwardReturning("a: List[int], b: List[int]", "a + b");
  EXPECT_EQ(StaticModule(scriptModule(source)).stats().out_variant_nodes, 0u);
  expectMatchesJit(source, {inputs({c10::List<int64_t>({1, 2}), c10::List<int64_t>({3})})});
}

TEST(ElementwiseBinary, FastPathAgreesWithAtenPath) {
  // The same values contiguous (a, b: our vectorized loops) and transposed in memory (an, bn:
  // at::cpu::*_out); results within 1e-6.
  const std::string source = forwardReturning(
      "a, b, an, bn",
      "(torch.add(a, b, alpha=0.3), torch.add(an, bn, alpha=0.3), a * b, an * bn, a / b, an / bn, "
      "a - 0.7, an - 0.7, a * 1.3, an * 1.3, a / 3, an / 3)");
  const at::Tensor a = torch::randn({37, 67});
  const at::Tensor b = torch::randn({37, 67});
  const at::Tensor an = a.t().contiguous().t();
  const at::Tensor bn = b.t().contiguous().t();
  ASSERT_FALSE(an.is_contiguous());
  const c10::IValue result = StaticModule(scriptModule(source))({a, b, an, bn});
  const auto& outputs = result.toTupleRef().elements();
  for (size_t i = 0; i < outputs.size(); i += 2) {
    EXPECT_TRUE(torch::allclose(outputs[i].toTensor(), outputs[i + 1].toTensor(), 1e-6, 1e-6))
        << "output " << i;
  }
}

// Squeeze-excitation's scaling: a channels-last image times one factor per channel, either order,
// per image or shared, whole vectors of channels and a tail (37): ATen's bits and layout, run
// after run; other shapes and layouts keep ATen's broadcasting loop.
TEST(ElementwiseBinary, ChannelScaleOfChannelsLastImages) {
  StaticModule module(scriptModule(forwardReturning("x, s, t", "(x * s, s * x, x * t)")));
  for (const auto& [batch, channels] : std::vector<std::pair<int64_t, int64_t>>{{2, 37}, {1, 64}}) {
    const at::Tensor x =
        torch::randn({batch, channels, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor s = torch::rand({batch, channels, 1, 1});
    const at::Tensor t = torch::rand({1, channels, 1, 1});
    for (int run = 0; run < 2; ++run) {
      const auto outputs = module({x, s, t}).toTupleRef().elements();
      const at::Tensor expected[] = {x * s, s * x, x * t};
      for (size_t i = 0; i < 3; ++i) {
        const at::Tensor actual = outputs[i].toTensor();
        EXPECT_TRUE(torch::equal(actual, expected[i])) << i;
        EXPECT_EQ(actual.strides(), expected[i].strides()) << i;
      }
    }
  }
  // A contiguous image and a non-broadcast shape take ATen's loop, with its results.
  const at::Tensor plain = torch::randn({2, 3, 4, 4});
  const at::Tensor rows = torch::randn({2, 3, 4, 1});
  const auto outputs = module({plain, rows, torch::rand({1, 3, 1, 1})}).toTupleRef().elements();
  EXPECT_TRUE(torch::equal(outputs[0].toTensor(), plain * rows));
}

} // namespace
} // namespace srt::testing
