// passes/activation_idioms.cpp: hand-written SiLU, hardswish, hardsigmoid and clamp(min=0) ->
// the ATen ops, each written form; what stays as written; and the whole pipeline folding them
// into the convolution before them.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"
#include "static_runtime/static_module.h"

namespace srt::testing {
namespace {

// 16 output channels from 8 (a convolution fixes the activations' dtype: float).
torch::jit::Module convModule(const std::string& source) {
  torch::jit::Module module("ActivationIdiomsModule");
  module.register_parameter("w", torch::randn({16, 8, 3, 3}) * 0.3, /*is_buffer=*/false);
  module.register_parameter("b", torch::randn({16}), /*is_buffer=*/false);
  module.define(source);
  module.eval();
  return module;
}

// Every form, each on its own convolution: SiLU both operand orders; hardswish as x * relu6(x +
// 3) / 6 with relu6 as hardtanh and as clamp, int and float constants, both orders, and as x *
// hardsigmoid(x) written out (x * (relu6(x + 3) / 6)) or not; hardsigmoid both ways; ReLU as
// clamp(min=0) and clamp_min.
constexpr const char* kEveryForm = R"JIT(
def forward(self, x):
    c1 = torch.conv2d(x, self.w, self.b, 1, 1)
    s1 = c1 * torch.sigmoid(c1)
    c2 = torch.conv2d(x * 2.0, self.w, self.b, 1, 1)
    s2 = torch.sigmoid(c2) * c2
    c3 = torch.conv2d(x * 3.0, self.w, self.b, 1, 1)
    w1 = c3 * torch.hardtanh(c3 + 3.0, 0.0, 6.0) / 6.0
    c4 = torch.conv2d(x * 4.0, self.w, self.b, 1, 1)
    w2 = torch.clamp(c4 + 3, 0, 6) * c4 / 6
    c5 = torch.conv2d(x * 5.0, self.w, self.b, 1, 1)
    w3 = c5 * (torch.hardtanh(c5 + 3.0, 0.0, 6.0) / 6.0)
    c6 = torch.conv2d(x * 6.0, self.w, self.b, 1, 1)
    w4 = torch.hardsigmoid(c6) * c6
    c7 = torch.conv2d(x * 7.0, self.w, self.b, 1, 1)
    h1 = torch.hardtanh(c7 + 3.0, 0.0, 6.0) / 6.0
    c8 = torch.conv2d(x * 8.0, self.w, self.b, 1, 1)
    h2 = torch.clamp(c8 + 3.0, 0.0, 6.0) / 6
    c9 = torch.conv2d(x * 9.0, self.w, self.b, 1, 1)
    r1 = c9.clamp(min=0)
    c10 = torch.conv2d(x * 10.0, self.w, self.b, 1, 1)
    r2 = torch.clamp_min(c10, 0.0)
    return s1, s2, w1, w2, w3, w4, h1, h2, r1, r2
)JIT";

TEST(ActivationIdioms, RewritesEveryWrittenForm) {
  auto graph = passes::prepareModule(convModule(kEveryForm)).graph;
  auto rewritten = expectPassPreservesResults(
      passes::rewriteActivationIdioms, graph,
      {{torch::randn({1, 8, 6, 6}) * 4}, {torch::randn({2, 8, 5, 7}) * 4}},
      /*expect_changed=*/true, 1e-5);
  EXPECT_EQ(countKind(*rewritten, "aten::silu"), 2u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::hardswish"), 4u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::hardsigmoid"), 2u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::relu"), 2u) << *rewritten;
  for (const char* op : {"aten::sigmoid", "aten::mul", "aten::div", "aten::hardtanh", "aten::clamp",
                         "aten::clamp_min"}) {
    // The convolutions' scaled inputs are the only products left.
    EXPECT_EQ(countKind(*rewritten, op), std::string(op) == "aten::mul" ? 9u : 0u) << op << "\n"
                                                                                   << *rewritten;
  }
}

// Near misses: another tensor than x, an intermediate read elsewhere, other constants, an input
// whose dtype the caller decides (an integer x would make the ops refuse what the arithmetic
// computes).
TEST(ActivationIdioms, LeavesNearMissesAlone) {
  auto graph = passes::prepareModule(convModule(R"JIT(
def forward(self, x):
    c = torch.conv2d(x, self.w, self.b, 1, 1)
    d = torch.conv2d(x * 2.0, self.w, self.b, 1, 1)
    other = c * torch.sigmoid(d)
    gate = torch.sigmoid(d * 3.0)
    shared = (d * 3.0) * gate
    shifted = c * torch.hardtanh(c + 2.0, 0.0, 6.0) / 6.0
    scaled = torch.hardtanh(d + 3.0, 0.0, 6.0) / 5.0
    floor = c.clamp(min=0.5)
    raw = x * torch.sigmoid(x)
    return other, gate, shared, shifted, scaled, floor, raw
)JIT"))
                   .graph;
  auto result = expectPassPreservesResults(passes::rewriteActivationIdioms, graph,
                                           {{torch::randn({1, 8, 6, 6})}},
                                           /*expect_changed=*/false, 1e-5);
  for (const char* op : {"aten::silu", "aten::hardswish", "aten::hardsigmoid", "aten::relu"}) {
    EXPECT_EQ(countKind(*result, op), 0u) << op << "\n" << *result;
  }
}

// Through the whole pipeline the ops then fold into the convolutions (and their padding lanes
// stay finite in the blocked layout: 20 channels), as the JIT computes them, on two shapes.
TEST(ActivationIdioms, PipelineMatchesJit) {
  torch::jit::Module module("ActivationIdiomsChain");
  module.register_parameter("w1", torch::randn({20, 3, 3, 3}) * 0.3, false);
  module.register_parameter("w2", torch::randn({20, 20, 3, 3}) * 0.1, false);
  module.register_parameter("w3", torch::randn({20, 20, 1, 1}) * 0.2, false);
  module.register_parameter("b", torch::randn({20}), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.conv2d(x, self.w1, self.b, 2, 1)
    a = a * torch.sigmoid(a)
    b = torch.conv2d(a, self.w2, self.b, 1, 1)
    b = b * torch.hardtanh(b + 3.0, 0.0, 6.0) / 6.0
    c = torch.conv2d(b, self.w3, self.b)
    c = c.clamp(min=0)
    d = torch.conv2d(c, self.w2, self.b, 1, 1)
    return torch.hardtanh(d + 3, 0, 6) / 6 * a
)JIT");
  module.eval();
  const StaticModule built(module);
  for (const char* op : {"aten::sigmoid", "aten::div", "aten::hardtanh", "aten::clamp",
                         "aten::silu", "aten::hardswish", "aten::hardsigmoid", "aten::relu"}) {
    EXPECT_EQ(countKind(built.graph(), op), 0u) << op << "\n" << built.graph();
  }
  // The last product, of two tensors.
  EXPECT_EQ(countKind(built.graph(), "aten::mul"), 1u) << built.graph();
  expectMatchesJit(
      module, {{{torch::randn({1, 3, 17, 19}) * 3}, {}}, {{torch::randn({2, 3, 12, 8}) * 3}, {}}},
      {}, 1e-4);
}

} // namespace
} // namespace srt::testing
