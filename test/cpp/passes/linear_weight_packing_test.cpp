// passes/linear_weight_packing.cpp: linear weights end up packed once, as one constant of
// srt::fused_linear.packed, with the plain constants gone; a weight given at run time or read by
// another op stays as it is; a weight two layers share is packed once; the packed op computes
// what the layers did, through our kernels (dense, strided and 1-D activations, residuals, other
// shapes) and through its JIT reference; other GEMM backends keep plain weights.
#include <set>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "ops/gemm/packed_linear.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

// A linear fused with relu, one without bias feeding a residual add, a layer applied twice
// (shared weight), a weight read by another op too, a small head, and one whose weight is an
// input.
torch::jit::Module packingModule() {
  torch::jit::Module module("LinearPackingModule");
  module.register_parameter("w1", torch::randn({96, 40}) * 0.2, false);
  module.register_parameter("b1", torch::randn({96}), false);
  module.register_parameter("w2", torch::randn({40, 96}) * 0.2, false);
  module.register_parameter("shared", torch::randn({40, 40}) * 0.2, false);
  module.register_parameter("also_read", torch::randn({24, 40}) * 0.2, false);
  module.register_parameter("head", torch::randn({3, 40}) * 0.2, false);
  module.define(R"JIT(
def forward(self, x, w):
    h = torch.relu(torch.linear(x, self.w1, self.b1))
    y = torch.linear(h, self.w2) + x
    z = torch.linear(torch.linear(y, self.shared), self.shared)
    a = torch.linear(z, self.also_read) * self.also_read.sum()
    c = torch.linear(z, self.head)
    d = torch.linear(x, w)
    return a, c, d
)JIT");
  module.eval();
  return module;
}

size_t packedLinears(const torch::jit::Graph& graph) {
  size_t count = 0;
  for (const torch::jit::Node* node : graph.nodes()) {
    count += node->kind() == c10::Symbol::fromQualString("srt::fused_linear") &&
                     node->input(1)->type()->kind() == c10::TypeKind::ClassType
                 ? 1
                 : 0;
  }
  return count;
}

TEST(LinearWeightPacking, PacksConstantWeightsAndDropsTheirPlainCopies) {
  StaticModule module(packingModule());
  const torch::jit::Graph& graph = module.graph();
  EXPECT_EQ(packedLinears(graph), 6u) << graph;
  EXPECT_EQ(countKind(graph, "aten::linear"), 1u) << graph; // the weight given at run time
  EXPECT_EQ(tensorConstantsOfSize(graph, {96, 40}), 0u) << graph;
  EXPECT_EQ(tensorConstantsOfSize(graph, {40, 96}), 0u) << graph;
  EXPECT_EQ(tensorConstantsOfSize(graph, {40, 40}), 0u) << graph;
  EXPECT_EQ(tensorConstantsOfSize(graph, {3, 40}), 0u) << graph;
  // Read by aten::sum as well: kept (constant folding may have folded the sum away instead).
  EXPECT_LE(tensorConstantsOfSize(graph, {24, 40}), 1u) << graph;
  // One packed weight for the shared layer: 5 objects for 6 layers.
  std::set<const void*> packed_objects;
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::Constant &&
        node->output()->type()->kind() == c10::TypeKind::ClassType) {
      // Each constant is its own TorchScript object; the packed weight inside is what is shared.
      packed_objects.insert(
          torch::jit::toIValue(node->output())->toCustomClass<ops::PackedLinearWeight>().get());
    }
  }
  EXPECT_EQ(packed_objects.size(), 5u) << graph;
}

TEST(LinearWeightPacking, OtherBackendsKeepPlainWeights) {
  for (GemmBackend backend : {GemmBackend::kOpenBlas, GemmBackend::kAten}) {
    StaticModuleOptions options;
    options.gemm_backend = backend;
    StaticModule module(packingModule(), options);
    EXPECT_EQ(packedLinears(module.graph()), 0u) << module.graph();
  }
}

// The JIT runs the packed graph through srt::fused_linear.packed's reference (weight unpacked).
TEST(LinearWeightPacking, PackedGraphComputesTheSameOnTheJit) {
  auto graph = passes::prepareModule(packingModule()).graph;
  auto packed = expectPassPreservesResults(passes::packLinearWeights, graph,
                                           {{torch::randn({5, 40}), torch::randn({7, 40})},
                                            {torch::randn({2, 3, 40}), torch::randn({7, 40})}},
                                           /*expect_changed=*/true, 1e-4);
  EXPECT_EQ(packedLinears(*packed), 6u) << *packed;
}

// Our kernels on the packed weights: rows, batches of rows, one row (the single-row paths),
// a strided activation (a column slice, like ViT's x[:, 0]), a 1-D activation and an empty
// batch, each twice and in a changing order.
TEST(LinearWeightPacking, PackedKernelsMatchJit) {
  const at::Tensor w = torch::randn({7, 40});
  const at::Tensor wide = torch::randn({6, 3, 40});
  expectMatchesJit(packingModule(),
                   {{{torch::randn({5, 40}), w}, {}},
                    {{torch::randn({2, 9, 40}), w}, {}},
                    {{torch::randn({1, 40}), w}, {}},
                    {{wide.select(1, 0), w}, {}},
                    {{torch::randn({40}), w}, {}},
                    {{torch::randn({0, 40}), w}, {}}},
                   {}, 1e-4);
}

// Single-row linears split into slices of the packed weight's column blocks over the runtime's
// own workers (forced here; on by default under OMP_WAIT_POLICY=PASSIVE), between runs of several
// rows (one primitive); N not a multiple of the block; bias, activation and a fused residual.
TEST(LinearWeightPacking, ColumnPiecesOverOwnWorkersMatchJit) {
  torch::jit::Module module("ColumnPieces");
  module.register_parameter("w1", torch::randn({1000, 576}) * 0.05, false);
  module.register_parameter("b1", torch::randn({1000}), false);
  module.register_parameter("w2", torch::randn({1000, 1000}) * 0.03, false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.linear(x, self.w1, self.b1))
    return torch.linear(y, self.w2) + y
)JIT");
  module.eval();
  StaticModule prepared(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  StaticRuntime runtime(prepared, options);
  const std::vector<at::Tensor> inputs = {torch::randn({1, 576}), torch::randn({7, 576}),
                                          torch::randn({2, 3, 576}), torch::randn({1, 576})};
  for (const at::Tensor& x : inputs) {
    for (int run = 0; run < 2; ++run) {
      const at::Tensor expected = module.forward({x}).toTensor();
      EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), expected, 1e-4, 1e-4))
          << "input " << x.sizes() << ", run " << run;
    }
  }
}

// A wrong activation width is the reference's error, naming the shapes, and the runtime keeps
// working after it.
TEST(LinearWeightPacking, WrongWidthIsAClearErrorAndTheRuntimeRecovers) {
  StaticModule module(packingModule());
  StaticRuntime runtime(module);
  const at::Tensor w = torch::randn({7, 40});
  EXPECT_THROW(
      {
        try {
          (void)runtime({torch::randn({5, 41}), w});
        } catch (const c10::Error& error) {
          EXPECT_NE(std::string(error.what()).find("41"), std::string::npos) << error.what();
          throw;
        }
      },
      c10::Error);
  const auto outputs = runtime({torch::randn({5, 40}), w}).toTuple()->elements();
  EXPECT_EQ(outputs.at(1).toTensor().sizes(), (at::IntArrayRef{5, 3}));
}

} // namespace
} // namespace srt::testing
