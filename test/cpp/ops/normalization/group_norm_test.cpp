// group_norm, group_norm + activation and instance_norm out-variant kernels
// (ops/normalization/group_norm.cpp) against the
// JIT: contiguous float32 (the vectorized rows), channels innermost (rows of channels), other
// layouts and float64 (ATen's kernel into our output), with and without affine parameters.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

at::Tensor channelsLast(at::IntArrayRef shape) {
  return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
}

TEST(GroupNorm, MatchesTheJit) {
  for (const std::string expression :
       {"torch.group_norm(x, 2, w, b, 1e-5)", "torch.group_norm(x, 4, w, None, 1e-3)",
        "torch.group_norm(x, 1, None, b)", "torch.group_norm(x, 4)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x, w, b", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randnDouble}) {
      expectMatchesJit(source,
                       {inputs({make({2, 4, 5}), make({4}), make({4})}),
                        inputs({make({3, 8, 4, 6}), make({8}), make({8})}),
                        inputs({make({1, 4}), make({4}), make({4})}),
                        inputs({make({2, 8, 3, 5}).transpose(2, 3), make({8}), make({8})}),
                        inputs({make({0, 4, 3}), make({4}), make({4})}),
                        inputs({make({8, 64, 700}), make({64}), make({64})})},
                       1e-4);
    }
    // Channels innermost (normalized in their own layout): channels last, a 1-D convolution's
    // [N, C, L] read through a transpose, long rows; and channels innermost with the batch not
    // outermost (ATen's kernel).
    expectMatchesJit(
        source,
        {inputs({channelsLast({2, 8, 3, 5}), randnFloat({8}), randnFloat({8})}),
         inputs({channelsLast({1, 4, 6, 2}), randnFloat({4}), randnFloat({4})}),
         inputs({randnFloat({2, 30, 8}).transpose(1, 2), randnFloat({8}), randnFloat({8})}),
         inputs({(randnFloat({1, 2001, 64}) * 3 + 5).transpose(1, 2), randnFloat({64}),
                 randnFloat({64})}),
         inputs({randnFloat({30, 2, 8}).permute({1, 2, 0}), randnFloat({8}), randnFloat({8})})},
        1e-4);
  }
}

// group_norm + activation (passes/norm_activation.cpp) as one srt::group_norm_activation node:
// every activation on every path of the kernel (contiguous rows, channels innermost, ATen's
// kernel for float64 and other strides), with and without affine parameters, one of them large
// enough to split over the threads.
TEST(GroupNormActivation, EveryActivationOnEveryPathMatchesTheJit) {
  for (const std::string expression :
       {"torch.relu(torch.group_norm(x, 2, w, b))",
        "torch.sigmoid(torch.group_norm(x, 4, w, None, 1e-3))",
        "torch.tanh(torch.group_norm(x, 1, None, b))", "torch.silu(torch.group_norm(x, 2, w, b))",
        "torch.gelu(torch.group_norm(x, 4))",
        "torch.gelu(torch.group_norm(x, 2, w, b), approximate='tanh')"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x, w, b", expression);
    expectAllOutVariant(source, 1); // the one fused node
    expectMatchesJit(
        source,
        {inputs({randnFloat({2, 4, 5}), randnFloat({4}), randnFloat({4})}),
         inputs({randnFloat({8, 64, 700}) * 3, randnFloat({64}), randnFloat({64})}),
         inputs({channelsLast({2, 8, 3, 5}), randnFloat({8}), randnFloat({8})}),
         inputs({randnFloat({1, 2001, 64}).transpose(1, 2), randnFloat({64}), randnFloat({64})}),
         inputs({randnFloat({30, 2, 8}).permute({1, 2, 0}), randnFloat({8}), randnFloat({8})}),
         inputs({randnDouble({3, 8, 4, 6}), randnDouble({8}), randnDouble({8})})},
        1e-4);
  }
}

// A normalized value read by more than its activation is not fused (the activation would
// change what the other reader sees).
TEST(GroupNormActivation, AValueReadTwiceStaysUnfused) {
  const std::string source =
      "def forward(self, x):\n    y = torch.group_norm(x, 2)\n    return torch.relu(y), y\n";
  expectAllOutVariant(source, 2);
  expectMatchesJit(source, {inputs({randnFloat({2, 4, 5})})}, 1e-5);
}

TEST(GroupNorm, ChannelsThatDoNotDivideAreAClearError) {
  StaticModule module(scriptModule(forwardReturning("x", "torch.group_norm(x, 3)")));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({torch::randn({2, 4, 5})})), c10::Error);
  EXPECT_EQ(runtime({torch::randn({2, 6, 5})}).toTensor().sizes(), at::IntArrayRef({2, 6, 5}));
}

TEST(InstanceNorm, WithInputStatisticsMatchesTheJit) {
  const std::string source = forwardReturning(
      "x, w, b", "torch.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)");
  expectAllOutVariant(source, 1);
  for (const auto& make : {randnFloat, randnDouble}) {
    expectMatchesJit(source,
                     {inputs({make({2, 4, 5}), make({4}), make({4})}),
                      inputs({make({3, 3, 4, 6}), make({3}), make({3})}),
                      inputs({make({2, 3, 6, 4}).transpose(2, 3), make({3}), make({3})})},
                     1e-4);
  }
  expectMatchesJit(forwardReturning("x", "torch.instance_norm(x, None, None, None, None, True, "
                                         "0.1, 1e-5, False)"),
                   {inputs({randnFloat({2, 4, 5})}), inputs({randnFloat({1, 2, 3, 3})})}, 1e-4);
}

// Running statistics are updated (training) or used (eval with tracked statistics): the JIT's.
TEST(InstanceNorm, RunningStatisticsAreLeftToTheJit) {
  expectFallback(forwardReturning("x, m, v", "torch.instance_norm(x, None, None, m, v, True, 0.1, "
                                             "1e-5, False)"),
                 "aten::instance_norm");
}

} // namespace
} // namespace srt::testing
