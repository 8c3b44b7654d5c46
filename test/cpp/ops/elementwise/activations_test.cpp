// Activation out-variant kernels (relu, gelu, sigmoid, tanh, silu, leaky_relu, hardswish,
// hardsigmoid, hardtanh, clamp)
// against the JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

const std::vector<std::string> kFloatActivations = {
    "torch.relu(x)",
    "torch.gelu(x)",
    "torch.gelu(x, approximate='tanh')",
    "torch.sigmoid(x)",
    "torch.tanh(x)",
    "torch.silu(x)",
    "torch.leaky_relu(x)",
    "torch.leaky_relu(x, 0.2)",
    "torch.hardswish(x)",
    "torch.hardsigmoid(x)",
    "torch.hardtanh(x)",
    "torch.hardtanh(x, 0.0, 6.0)", // nn.ReLU6 after inlining
    "torch.hardtanh(x, -0.25, 0.75)",
    "torch.clamp(x, -0.5, 0.5)",
    "torch.clamp(x, min=-0.25)",
    "torch.clamp(x, max=0.75)",
    "torch.clamp(x, 1, 0)", // min > max: every element is max
};

TEST(Activation, Float32) {
  for (const auto& expression : kFloatActivations) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, unaryShapes(randnFloat));
  }
}

TEST(Activation, Float64) {
  for (const auto& expression : kFloatActivations) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("x", expression), unaryShapes(randnDouble));
  }
}

TEST(Activation, Int64) {
  // relu and clamp keep int64; sigmoid and tanh compute in the default float dtype; clamp with
  // a float bound promotes.
  for (const std::string expression :
       {"torch.relu(x)", "torch.clamp(x, -3, 4)", "torch.clamp(x, min=2)", "torch.clamp(x, max=-1)",
        "torch.hardtanh(x, 0, 6)", "torch.hardtanh(x, -2.5, 2.5)", "torch.clamp(x, -2.5, 2.5)",
        "torch.sigmoid(x)", "torch.tanh(x)"}) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("x", expression), unaryShapes(randintLong));
  }
}

TEST(Activation, ExtremeValues) {
  const at::Tensor x = torch::tensor({-1e30f, -100.f, -20.f, -0.f, 0.f, 1e-30f, 20.f, 100.f, 1e30f,
                                      std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity(), NAN});
  for (const auto& expression : kFloatActivations) {
    SCOPED_TRACE(expression);
    expectMatchesJit(forwardReturning("x", expression), {inputs({x}), inputs({x.reshape({3, 4})})});
  }
}

TEST(Activation, ClampWithTensorBounds) {
  const std::vector<InputSet> sets = {
      inputs({randnFloat({2, 3}), randnFloat({2, 3}) - 1, randnFloat({3}) + 1}),
      inputs({randnFloat({4, 3}).t(), randnFloat({1}), randnFloat({3, 1}) + 1}),
      inputs({randintLong({2, 3}), randintLong({2, 3}), randnFloat({3})}), // promotes to float
      inputs({randintLong({0, 5}), randintLong({5}), randintLong({5})})};
  for (const std::string expression :
       {"torch.clamp(x, lo, hi)", "torch.clamp(x, min=lo)", "torch.clamp(x, max=hi)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x, lo, hi", expression);
    expectAllOutVariant(source);
    expectMatchesJit(source, sets);
  }
}

TEST(Activation, BoundsAndSlopesFromInputs) {
  const std::string source =
      forwardReturning("x, lo: Optional[float], hi: Optional[float], slope: float",
                       "(torch.clamp(x, lo, hi), torch.leaky_relu(x, slope))");
  expectMatchesJit(source, {inputs({randnFloat({2, 3}), -0.5, 0.5, 0.1}),
                            inputs({randnFloat({7}), c10::IValue(), 0.25, 0.3}),
                            inputs({randnFloat({4, 3}).t(), -0.1, c10::IValue(), 0.0})});
}

TEST(Activation, FastPathAgreesWithAtenPath) {
  // Contiguous x takes our vectorized loops (gelu: oneDNN's primitive, as ATen's), its transposed
  // copy the loops over its memory in order, every other column at::cpu::*_out.
  const at::Tensor x = torch::randn({67, 131}) * 4;
  const at::Tensor transposed = x.t().contiguous().t();
  const at::Tensor strided = torch::stack({x, x}, 2).select(2, 0);
  ASSERT_FALSE(strided.is_non_overlapping_and_dense());
  for (const auto& expression : kFloatActivations) {
    SCOPED_TRACE(expression);
    StaticModule module(scriptModule(forwardReturning("x", expression)));
    const at::Tensor fast = module({x}).toTensor();
    for (const at::Tensor& other : {transposed, strided}) {
      const at::Tensor result = module({other}).toTensor();
      EXPECT_TRUE(torch::allclose(fast, result, 1e-6, 1e-6))
          << "max difference " << (fast - result).abs().max().item<float>();
    }
  }
}

// A dense input in another dimension order (channels last, transposed) maps its memory in order
// into an output laid out as ATen lays out its result: the same strides.
TEST(Activation, DenseInputsKeepTheirLayout) {
  const at::Tensor channels_last =
      (torch::randn({2, 5, 4, 3}) * 3).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor transposed = (torch::randn({9, 6}) * 3).t();
  for (const auto& expression : kFloatActivations) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectMatchesJit(source, {inputs({channels_last}), inputs({transposed})});
    StaticModule module(scriptModule(source));
    for (const at::Tensor& x : {channels_last, transposed}) {
      const at::Tensor ours = module({x}).toTensor();
      const at::Tensor aten = scriptModule(source).forward({x}).toTensor();
      EXPECT_EQ(ours.strides(), aten.strides());
    }
  }
}

// gelu of a contiguous float32 tensor is ATen's to the bit (both on oneDNN's primitive).
TEST(Activation, GeluIsAtensBitForBit) {
  StaticModule module(scriptModule(forwardReturning("x", "torch.gelu(x)")));
  for (int repeat = 0; repeat < 20; ++repeat) {
    for (const int64_t n : {1, 2, 17, 100003}) {
      const at::Tensor x = torch::randn({n}) * 4;
      static_cast<void>(module({x}));
      EXPECT_TRUE(torch::equal(module({x}).toTensor(), torch::gelu(x))) << n;
    }
  }
}

TEST(Activation, UnsupportedOverloadsFallBack) {
  // tanh of a float is the scalar overload: declined, the JIT runs it.
  const std::string source = forwardReturning("x: float", "torch.tanh(x)");
  expectFallback(source, "aten::tanh");
  expectMatchesJit(source, {inputs({0.5}), inputs({-2.0})});
}

} // namespace
} // namespace srt::testing
