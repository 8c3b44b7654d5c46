// passes/depthwise_explicit_padding.cpp: depthwise convolutions whose padding oneDNN's depthwise
// kernels refuse read an explicitly padded input instead, with the JIT's results, and stay
// channels last through the pad.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "ops/conv/onednn_conv.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

ops::ConvArguments depthwise1d(int64_t channels, int64_t dilation, int64_t padding) {
  ops::ConvArguments arguments;
  arguments.groups = channels;
  arguments.dilation[1] = dilation;
  arguments.padding[1] = padding;
  return arguments;
}

// The oneDNN fact the pass stands on: padding = dilation = 1 runs on a depthwise kernel as it
// is; padding = dilation = 32 only once the padding is explicit.
TEST(DepthwiseExplicitPadding, OneDnnTakesLargePaddingOnlyExplicitly) {
  const at::Tensor weight = torch::randn({64, 1, 1, 3});
  EXPECT_FALSE(ops::oneDnnDepthwiseWantsExplicitPadding(weight, depthwise1d(64, 1, 1)));
  EXPECT_FALSE(ops::oneDnnDepthwiseWantsExplicitPadding(weight, depthwise1d(64, 32, 0)));
  EXPECT_TRUE(ops::oneDnnDepthwiseWantsExplicitPadding(weight, depthwise1d(64, 32, 32)));
  EXPECT_FALSE(ops::oneDnnDepthwiseWantsExplicitPadding(torch::randn({64, 4, 1, 3}),
                                                        depthwise1d(16, 32, 32)))
      << "grouped, not depthwise";
}

// Conv-TasNet's temporal block: dilated depthwise 1-D convolutions padded by their dilation,
// between 1x1 convolutions, PReLU and GroupNorm, with a residual.
TEST(DepthwiseExplicitPadding, DilatedTemporalBlocksMatchJitChannelsLast) {
  torch::jit::Module module("TemporalConvNet");
  module.register_parameter("expand", torch::randn({64, 16, 1}) * 0.2, false);
  module.register_parameter("depthwise", torch::randn({64, 1, 3}) * 0.3, false);
  module.register_parameter("bias", torch::randn({64}), false);
  module.register_parameter("project", torch::randn({16, 64, 1}) * 0.1, false);
  module.register_parameter("slopes", torch::rand({64}) * 0.3, false);
  module.define(R"JIT(
def forward(self, x):
    for dilation in [1, 8, 32]:
        y = torch.prelu(torch.conv1d(x, self.expand), self.slopes)
        y = torch.conv1d(y, self.depthwise, self.bias, [1], [dilation], [dilation], 64)
        y = torch.group_norm(torch.prelu(y, self.slopes), 1, None, None, 1e-8)
        x = x + torch.conv1d(y, self.project)
    return x
)JIT");
  module.eval();
  expectMatchesJit(module, {{{torch::randn({1, 16, 300})}, {}}, {{torch::randn({2, 16, 97})}, {}}},
                   {}, 1e-4);
  StaticModule prepared(module);
  // The loop unrolls (a constant list): dilations 8 and 32 get their pad.
  EXPECT_EQ(countKind(prepared.graph(), "aten::constant_pad_nd"), 2u) << prepared.graph();
  // Channels last from the first convolution to the output: the input's conversion, the output's.
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  const auto kinds = kernelKinds(prepared);
  EXPECT_EQ(kinds.at("aten::constant_pad_nd"), std::set<KernelKind>{KernelKind::kOutVariant});
}

} // namespace
} // namespace srt::testing
