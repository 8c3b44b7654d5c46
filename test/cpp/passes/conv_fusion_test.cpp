// passes/conv_fusion.cpp: conv2d + residual add + activation -> srt::fused_conv2d, each written
// form, its numerics on small and large weights, and what stays unfused.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

// `channels` output channels from 8 input channels.
torch::jit::Module convModule(int64_t channels, const std::string& source) {
  torch::jit::Module module("ConvFusionModule");
  module.register_parameter("w", torch::randn({channels, 8, 3, 3}) * 0.2, /*is_buffer=*/false);
  module.register_parameter("b", torch::randn({channels}), /*is_buffer=*/false);
  module.register_parameter("project", torch::randn({channels, 8, 1, 1}) * 0.3,
                            /*is_buffer=*/false);
  module.define(source);
  module.eval();
  return module;
}

// One convolution per activation, the ReLU6 of MobileNetV2 as hardtanh(0, 6) and as written by
// hand, clamp(0, 6) (and clamp with int bounds), ResNet's residual
// then ReLU either operand order, and an inverted-residual add with no activation.
constexpr const char* kEveryForm = R"JIT(
def forward(self, x):
    c = torch.conv2d(x, self.w, self.b, 1, 1)
    a1 = torch.relu(torch.conv2d(x * 1.5, self.w, self.b, 1, 1))
    a2 = torch.hardtanh(torch.conv2d(x * 2.0, self.w, self.b, 1, 1), 0.0, 6.0)
    a3 = torch.leaky_relu(torch.conv2d(x * 3.0, self.w, None, 1, 1), 0.1)
    a4 = torch.sigmoid(torch.conv2d(x * 4.0, self.w, self.b, 1, 1))
    a5 = torch.tanh(torch.conv2d(x * 5.0, self.w, self.b, 1, 1))
    a6 = torch.silu(torch.conv2d(x * 6.0, self.w, self.b, 1, 1))
    a7 = torch.hardswish(torch.conv2d(x * 7.0, self.w, self.b, 1, 1))
    a8 = torch.hardsigmoid(torch.conv2d(x * 8.0, self.w, self.b, 1, 1))
    a9 = torch.gelu(torch.conv2d(x * 9.0, self.w, self.b, 1, 1))
    identity = torch.conv2d(x * 10.0, self.project, None)
    r1 = torch.relu(torch.conv2d(x * 11.0, self.w, self.b, 1, 1) + identity)
    r2 = torch.relu(identity + torch.conv2d(x * 12.0, self.w, self.b, 1, 1))
    r3 = torch.conv2d(x * 13.0, self.w, self.b, 1, 1) + identity
    a10 = torch.clamp(torch.conv2d(x * 14.0, self.w, self.b, 1, 1), 0.0, 6.0)
    a11 = torch.conv2d(x * 15.0, self.w, self.b, 1, 1).clamp(-1, 2)
    return c, a1, a2, a3, a4, a5, a6, a7, a8, a9, r1, r2, r3, a10, a11
)JIT";

TEST(ConvFusion, FusesEveryWrittenForm) {
  auto graph = passes::prepareModule(convModule(16, kEveryForm)).graph;
  auto fused = expectPassPreservesResults(
      passes::fuseConvEpilogues, graph,
      {{torch::randn({1, 8, 6, 6})}, {torch::randn({2, 8, 5, 7})}}, /*expect_changed=*/true, 1e-4);
  EXPECT_EQ(countKind(*fused, "srt::fused_conv2d"), 14u) << *fused;
  // The plain one, and the projection whose output is used twice.
  EXPECT_EQ(countKind(*fused, "aten::conv2d"), 2u) << *fused;
  for (const char* op : {"aten::relu", "aten::hardtanh", "aten::leaky_relu", "aten::sigmoid",
                         "aten::tanh", "aten::silu", "aten::hardswish", "aten::hardsigmoid",
                         "aten::gelu", "aten::add", "aten::clamp"}) {
    EXPECT_EQ(countKind(*fused, op), 0u) << op << "\n" << *fused;
  }
}

// Small and large weights: every epilogue as the JIT computes it, run after run.
TEST(ConvFusion, FusedKernelsMatchJitOnBothPaths) {
  for (int64_t channels : {16, 96}) {
    SCOPED_TRACE(channels);
    expectMatchesJit(convModule(channels, kEveryForm),
                     {{{torch::randn({1, 8, 6, 6})}, {}},
                      {{torch::randn({2, 8, 5, 7})}, {}},
                      {{torch::randn({1, 8, 9, 4})}, {}}},
                     {}, 1e-4);
  }
}

TEST(ConvFusion, LeavesNearMissesAlone) {
  auto graph = passes::prepareModule(convModule(16, R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w, self.b, 1, 1)
    scaled = torch.add(torch.conv2d(x, self.w, self.b, 1, 1), y, alpha=2)
    floor_only = torch.clamp(torch.conv2d(x * 2.0, self.w, self.b, 1, 1), 0.0)
    return torch.relu(y), y, scaled, floor_only
)JIT"))
                   .graph;
  auto result =
      expectPassPreservesResults(passes::fuseConvEpilogues, graph, {{torch::randn({1, 8, 6, 6})}},
                                 /*expect_changed=*/false, 1e-4);
  EXPECT_EQ(countKind(*result, "srt::fused_conv2d"), 0u) << *result;
}

// The input is written between its definition and the convolution (torchvision's detection
// transform: a zero batch filled through copy_ into views, in a loop). The rewriter would put the
// fused node right after the input's definition, above the writes: left unfused there, and the
// same form without writes still fuses.
TEST(ConvFusion, NeverMovesAboveWritesToTheInput) {
  const torch::jit::Module module = convModule(16, R"JIT(
def forward(self, x):
    batch = x.new_zeros([x.size(0), 8, x.size(2) + 2, x.size(3)])
    for i in range(x.size(0)):
        batch[i, :, 1:x.size(2) + 1].copy_(x[i])
    written = torch.relu(torch.conv2d(batch, self.w, self.b, 1, 1))
    batch2 = x.new_zeros([x.size(0), 8, x.size(2), x.size(3)])
    batch2.add_(x)
    added = torch.relu(torch.conv2d(batch2, self.w, self.b, 1, 1))
    plain = torch.relu(torch.conv2d(x * 2.0, self.w, self.b, 1, 1))
    return written, added, plain
)JIT");
  auto graph = passes::prepareModule(module).graph;
  auto result = expectPassPreservesResults(passes::fuseConvEpilogues, graph,
                                           {{torch::randn({2, 8, 5, 6})}}, true, 1e-4);
  EXPECT_EQ(countKind(*result, "srt::fused_conv2d"), 1u) << *result;
  expectMatchesJit(module, {{{torch::randn({2, 8, 5, 6})}, {}}, {{torch::randn({1, 8, 3, 4})}, {}}},
                   {}, 1e-4);
}

// The same forms after conv3d (video networks: r3d_18's ReLUs and residual adds) become
// srt::fused_conv3d.
TEST(ConvFusion, FusesThreeDimensionalConvolutions) {
  torch::jit::Module module("Conv3dFusionModule");
  module.register_parameter("w", torch::randn({8, 8, 3, 3, 3}) * 0.2, false);
  module.register_parameter("b", torch::randn({8}), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv3d(x, self.w, self.b, 1, 1))
    r = torch.conv3d(a, self.w, self.b, 1, 1) + x
    h = torch.hardswish(torch.conv3d(x * 2.0, self.w, None, 1, 1))
    return torch.relu(r), h
)JIT");
  module.eval();
  auto graph = passes::prepareModule(module).graph;
  auto fused =
      expectPassPreservesResults(passes::fuseConvEpilogues, graph,
                                 {{torch::randn({1, 8, 3, 5, 5})}, {torch::randn({2, 8, 4, 3, 6})}},
                                 /*expect_changed=*/true, 1e-4);
  EXPECT_EQ(countKind(*fused, "srt::fused_conv3d"), 3u) << *fused;
  for (const char* op : {"aten::conv3d", "aten::relu", "aten::hardswish", "aten::add"}) {
    EXPECT_EQ(countKind(*fused, op), 0u) << op << "\n" << *fused;
  }
  expectMatchesJit(module,
                   {{{torch::randn({1, 8, 3, 5, 5})}, {}}, {{torch::randn({2, 8, 4, 3, 6})}, {}}},
                   {}, 1e-4);
}

// 1-D convolutions, which conv1d_lowering makes conv2d + squeeze, keep their activation fused
// (audio front ends: conv1d + GELU); one whose output is also read raw stays unfused.
TEST(ConvFusion, FusesActivationsAfterLoweredConv1d) {
  torch::jit::Module module("Conv1dFusionModule");
  module.register_parameter("w", torch::randn({16, 8, 5}) * 0.2, false);
  module.register_parameter("b", torch::randn({16}), false);
  module.define(R"JIT(
def forward(self, x):
    g = torch.gelu(torch.conv1d(x, self.w, self.b, 2))
    r = torch.relu(torch.conv1d(x * 2.0, self.w, None, 1, 2))
    raw = torch.conv1d(x * 3.0, self.w, self.b)
    return g, r, torch.sigmoid(raw), raw
)JIT");
  module.eval();
  auto graph = passes::prepareModule(module).graph;
  passes::lowerConv1d(graph);
  const std::vector<GraphInputs> inputs = {{torch::randn({1, 8, 40})}, {torch::randn({3, 8, 17})}};
  auto fused = expectPassPreservesResults(passes::fuseConvEpilogues, graph, inputs,
                                          /*expect_changed=*/true, 1e-4);
  EXPECT_EQ(countKind(*fused, "srt::fused_conv2d"), 2u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::conv2d"), 1u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::gelu") + countKind(*fused, "aten::relu"), 0u) << *fused;
  EXPECT_EQ(countKind(*fused, "aten::sigmoid"), 1u) << *fused;
  expectMatchesJit(module, {{{torch::randn({1, 8, 40})}, {}}, {{torch::randn({3, 8, 17})}, {}}}, {},
                   1e-4);
}

} // namespace
} // namespace srt::testing
