// passes/conv_padding_modes.cpp: convolutions written with padding="same" or "valid" run on the
// oneDNN kernels like any other, with the JIT's results, symmetric or not; what it cannot spell
// out (a run-time weight, a strided "same") stays ATen's.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

torch::jit::Module paddingModule(const std::string& source) {
  torch::jit::Module module("PaddingModes");
  module.register_parameter("odd1d", torch::randn({6, 4, 5}) * 0.2, false);
  module.register_parameter("even1d", torch::randn({6, 4, 4}) * 0.2, false);
  module.register_parameter("odd2d", torch::randn({8, 4, 3, 3}) * 0.2, false);
  module.register_parameter("even2d", torch::randn({8, 4, 2, 4}) * 0.2, false);
  module.register_parameter("grouped2d", torch::randn({8, 2, 3, 2}) * 0.2, false);
  module.register_parameter("even3d", torch::randn({4, 4, 2, 3, 2}) * 0.2, false);
  module.register_parameter("b6", torch::randn({6}), false);
  module.register_parameter("b8", torch::randn({8}), false);
  module.define(source);
  module.eval();
  return module;
}

// Every branch of the rewrite: "valid"; "same" symmetric (odd kernel, or even kernel with even
// dilation); "same" asymmetric (even kernel, odd dilation) in one or several dimensions, grouped,
// followed by an activation conv_fusion takes; 1-D through conv1d_lowering, 3-D.
constexpr const char* kForms = R"JIT(
def forward(self, x1, x2, x3):
    valid1 = torch.conv1d(x1, self.odd1d, self.b6, 1, "valid")
    same1 = torch.relu(torch.conv1d(x1, self.odd1d, self.b6, 1, "same", 2))
    even1 = torch.conv1d(x1, self.even1d, None, 1, "same")
    even1_dilated = torch.conv1d(x1, self.even1d, self.b6, 1, "same", 2)
    valid2 = torch.conv2d(x2, self.odd2d, self.b8, [1, 1], "valid", [2, 1])
    same2 = torch.sigmoid(torch.conv2d(x2, self.odd2d, self.b8, 1, "same"))
    even2 = torch.relu(torch.conv2d(x2, self.even2d, self.b8, [1, 1], "same", [1, 3]))
    grouped2 = torch.conv2d(x2, self.grouped2d, None, 1, "same", 1, 2)
    even3 = torch.conv3d(x3, self.even3d, None, 1, "same")
    return valid1, same1, even1, even1_dilated, valid2, same2, even2, grouped2, even3
)JIT";

TEST(ConvPaddingModes, EveryFormMatchesJitOnOurKernels) {
  const torch::jit::Module module = paddingModule(kForms);
  expectMatchesJit(
      module,
      {{{torch::randn({1, 4, 17}), torch::randn({1, 4, 9, 11}), torch::randn({1, 4, 5, 6, 7})}, {}},
       {{torch::randn({3, 4, 30}), torch::randn({2, 4, 6, 13}), torch::randn({2, 4, 4, 3, 5})},
        {}}},
      {}, 1e-4);
  const StaticModule prepared(module);
  const auto kinds = kernelKinds(prepared);
  for (const auto& [kind, kernel_kinds] : kinds) {
    if (kind.find("conv") != std::string::npos || kind == "aten::constant_pad_nd") {
      EXPECT_EQ(kernel_kinds, std::set<KernelKind>{KernelKind::kOutVariant}) << kind << "\n"
                                                                             << prepared.graph();
    }
  }
}

TEST(ConvPaddingModes, SpellsOutOnlyWhatItCanProve) {
  auto graph = passes::prepareModule(paddingModule(R"JIT(
def forward(self, x, w):
    constant = torch.conv2d(x, self.even2d, self.b8, 1, "same")
    given = torch.conv2d(x, w, None, 1, "same")
    return constant, given
)JIT"))
                   .graph;
  auto rewritten =
      expectPassPreservesResults(passes::spellOutConvPaddingModes, graph,
                                 {{torch::randn({1, 4, 7, 9}), torch::randn({3, 4, 3, 2})},
                                  {torch::randn({2, 4, 5, 4}), torch::randn({3, 4, 2, 2})}},
                                 /*expect_changed=*/true, 1e-5);
  // The constant weight's even kernel: a pad of one on the right of both spatial dimensions.
  EXPECT_EQ(countKind(*rewritten, "aten::constant_pad_nd"), 1u) << *rewritten;
  size_t string_padded = 0;
  for (const torch::jit::Node* node : rewritten->nodes()) {
    if (node->kind() == c10::aten::conv2d &&
        node->input(4)->type()->kind() == c10::TypeKind::StringType) {
      ++string_padded;
    }
  }
  EXPECT_EQ(string_padded, 1u) << *rewritten;
}

// ATen refuses "same" with a stride; the pass leaves it, so the caller gets ATen's message.
TEST(ConvPaddingModes, StridedSameKeepsAtensError) {
  StaticModule module(paddingModule(R"JIT(
def forward(self, x):
    return torch.conv2d(x, self.odd2d, self.b8, 2, "same")
)JIT"));
  EXPECT_THROW(
      {
        try {
          static_cast<void>(module({torch::randn({1, 4, 8, 8})}));
        } catch (const c10::Error& e) {
          EXPECT_NE(std::string(e.what()).find("same"), std::string::npos) << e.what();
          throw;
        }
      },
      c10::Error);
}

} // namespace
} // namespace srt::testing
