// passes/conv_weight_packing.cpp: convolution weights end up packed once, as one constant of
// srt::packed_conv2d, with the plain constants gone; a weight given at run time stays as it is;
// the packed op computes what the convolutions did, through our kernels and through its JIT
// reference.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

// A convolution fused with an activation, a plain one without bias, a grouped one with a
// residual, a small one, and one whose weight is an input.
torch::jit::Module packingModule() {
  torch::jit::Module module("ConvPackingModule");
  module.register_parameter("large", torch::randn({96, 8, 3, 3}) * 0.2, false);
  module.register_parameter("large_bias", torch::randn({96}), false);
  module.register_parameter("grouped", torch::randn({96, 24, 1, 1}) * 0.2, false);
  module.register_parameter("small", torch::randn({16, 8, 3, 3}) * 0.2, false);
  module.define(R"JIT(
def forward(self, x, w):
    a = torch.relu(torch.conv2d(x, self.large, self.large_bias, 1, 1))
    b = torch.conv2d(x, self.large, None, 1, 1, 1, 1)
    c = torch.conv2d(a + b, self.grouped, None, 1, 0, 1, 4) + a
    d = torch.conv2d(x, self.small, None, 1, 1)
    e = torch.conv2d(x, w, None, 1, 1)
    return torch.hardswish(c), d, e
)JIT");
  module.eval();
  return module;
}

TEST(ConvWeightPacking, PacksLargeWeightsAndDropsTheirPlainCopies) {
  StaticModule module(packingModule());
  const torch::jit::Graph& graph = module.graph();
  EXPECT_EQ(countKind(graph, "srt::packed_conv2d"), 4u) << graph;
  EXPECT_EQ(countKind(graph, "aten::conv2d") + countKind(graph, "srt::fused_conv2d"), 1u) << graph;
  EXPECT_EQ(tensorConstantsOfSize(graph, {96, 8, 3, 3}), 0u) << graph;
  EXPECT_EQ(tensorConstantsOfSize(graph, {96, 24, 1, 1}), 0u) << graph;
  EXPECT_EQ(tensorConstantsOfSize(graph, {16, 8, 3, 3}), 0u) << graph;
}

// The JIT runs the packed graph through srt::packed_conv2d's reference (the weight unpacked).
TEST(ConvWeightPacking, PackedGraphComputesTheSameOnTheJit) {
  auto graph = passes::prepareModule(packingModule()).graph;
  passes::fuseConvEpilogues(graph);
  auto packed =
      expectPassPreservesResults(passes::packConvWeights, graph,
                                 {{torch::randn({1, 8, 6, 6}), torch::randn({4, 8, 3, 3})},
                                  {torch::randn({2, 8, 5, 7}), torch::randn({4, 8, 3, 3})}},
                                 /*expect_changed=*/true, 1e-4);
  EXPECT_EQ(countKind(*packed, "srt::packed_conv2d"), 4u) << *packed;
}

// Our kernels on the packed weights, NCHW and channels-last inputs, other shapes, twice each;
// and inputs the oneDNN kernel does not take (strided) through the reference path.
TEST(ConvWeightPacking, PackedKernelsMatchJit) {
  const at::Tensor wide = torch::randn({2, 8, 7, 12});
  const at::Tensor w = torch::randn({4, 8, 3, 3});
  expectMatchesJit(
      packingModule(),
      {{{torch::randn({1, 8, 6, 6}), w}, {}},
       {{torch::randn({2, 8, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast), w}, {}},
       {{wide.slice(3, 0, 12, 2), w}, {}}},
      {}, 1e-4);
}

} // namespace
} // namespace srt::testing
