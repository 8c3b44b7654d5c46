// passes/conv1d_lowering.cpp: conv1d and conv_transpose1d with a constant weight run as 2-D ones
// on the oneDNN kernels, with the results the JIT gives, for every argument form; what it cannot
// take stays 1-D.
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

torch::jit::Module conv1dModule(const std::string& source) {
  torch::jit::Module module("Conv1dModule");
  module.register_parameter("w", torch::randn({24, 8, 5}) * 0.2, false);
  module.register_parameter("grouped", torch::randn({24, 2, 3}) * 0.3, false);
  module.register_parameter("b", torch::randn({24}), false);
  module.define(source);
  module.eval();
  return module;
}

// wav2vec2's feature extractor (strided, then GELU, read transposed) and conv_tasnet's
// (dilated, grouped, PReLU-like activations) as they call conv1d.
constexpr const char* kForms = R"JIT(
def forward(self, x):
    plain = torch.conv1d(x, self.w, self.b)
    strided = torch.gelu(torch.conv1d(x, self.w, None, [5], [0], [1], 1))
    padded = torch.relu(torch.conv1d(x, self.w, self.b, [2], [3], [2], 1))
    grouped = torch.conv1d(x, self.grouped, self.b, [1], [1], [1], 4)
    return plain, strided.transpose(1, 2), padded, grouped
)JIT";

TEST(Conv1dLowering, EveryFormMatchesJit) {
  expectMatchesJit(conv1dModule(kForms),
                   {{{torch::randn({1, 8, 40})}, {}},
                    {{torch::randn({3, 8, 57})}, {}},
                    {{torch::randn({2, 8, 96}).transpose(1, 2).contiguous().transpose(1, 2)}, {}}},
                   {}, 1e-4);
  const StaticModule module(conv1dModule(kForms));
  const auto kinds = kernelKinds(module);
  EXPECT_EQ(kinds.count("aten::conv1d"), 0u) << module.graph();
  for (const auto& [kind, kernel_kinds] : kinds) {
    if (kind.find("conv") != std::string::npos) {
      EXPECT_EQ(kernel_kinds, std::set<KernelKind>{KernelKind::kOutVariant}) << kind;
    }
  }
}

TEST(Conv1dLowering, RewritesOnlyConstantWeightsAndIntPadding) {
  auto graph = passes::prepareModule(conv1dModule(R"JIT(
def forward(self, x, w):
    lowered = torch.conv1d(x, self.w, self.b, 1, 2)
    given = torch.conv1d(x, w, None, 1, 1)
    same = torch.conv1d(x, self.w, self.b, 1, "same")
    return lowered, given, same
)JIT"))
                   .graph;
  auto lowered = expectPassPreservesResults(passes::lowerConv1d, graph,
                                            {{torch::randn({1, 8, 20}), torch::randn({4, 8, 3})},
                                             {torch::randn({2, 8, 31}), torch::randn({4, 8, 3})}},
                                            /*expect_changed=*/true, 1e-4);
  EXPECT_EQ(countKind(*lowered, "aten::conv2d"), 1u) << *lowered;
  EXPECT_EQ(countKind(*lowered, "aten::conv1d"), 2u) << *lowered;
}

// conv_tasnet's decoder (a transposed convolution with stride half its kernel, no bias) and the
// other arguments: padding, output_padding, groups, dilation; batched, unbatched and
// non-contiguous input.
TEST(Conv1dLowering, TransposedFormsMatchJit) {
  torch::jit::Module module("ConvTranspose1dModule");
  module.register_parameter("decoder", torch::randn({16, 1, 8}) * 0.2, false);
  module.register_parameter("w", torch::randn({16, 6, 3}) * 0.2, false);
  module.register_parameter("grouped", torch::randn({16, 3, 4}) * 0.2, false);
  module.register_parameter("b", torch::randn({6}), false);
  module.define(R"JIT(
def forward(self, x):
    decoded = torch.conv_transpose1d(x, self.decoder, None, [4])
    padded = torch.conv_transpose1d(x, self.w, self.b, [2], [1], [1])
    dilated = torch.conv_transpose1d(x, self.w, self.b, [3], [2], [2], 1, [2])
    grouped = torch.conv_transpose1d(x, self.grouped, None, [2], [0], [0], 2)
    return decoded, padded, dilated, grouped
)JIT");
  module.eval();
  expectMatchesJit(module,
                   {{{torch::randn({1, 16, 20})}, {}},
                    {{torch::randn({3, 16, 7})}, {}},
                    {{torch::randn({16, 9})}, {}},
                    {{torch::randn({2, 11, 16}).transpose(1, 2)}, {}}},
                   {}, 1e-4);
  const StaticModule prepared(module);
  const auto kinds = kernelKinds(prepared);
  EXPECT_EQ(kinds.count("aten::conv_transpose1d"), 0u) << prepared.graph();
  EXPECT_EQ(kinds.at("aten::conv_transpose2d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

} // namespace
} // namespace srt::testing
