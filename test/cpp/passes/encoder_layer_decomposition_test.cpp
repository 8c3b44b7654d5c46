// passes/encoder_layer_decomposition.cpp: nn.TransformerEncoderLayer's fast-path op becomes
// layer_norm, srt::multi_head_attention and srt::fused_linear; a layer that may get a mask keeps
// ATen's op for that case; a layer with weights that are not constants is left alone.
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "harness/zoo.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

constexpr const char* kLayerOp = "aten::_transformer_encoder_layer_fwd";

std::shared_ptr<torch::jit::Graph> preparedZooGraph(const std::string& name,
                                                    const std::vector<std::string>& unbound = {}) {
  return passes::prepareModule(loadZooModel(name), unbound).graph;
}

TEST(EncoderLayerDecomposition, DecomposesEveryZooEncoderLayer) {
  for (const char* name : {"transformer_encoder_layer", "encoder_layer_norm_first_gelu"}) {
    SCOPED_TRACE(name);
    auto graph = preparedZooGraph(name);
    ASSERT_EQ(countKind(*graph, kLayerOp), 1u) << *graph;
    // The module's own slow path (taken when the fast path's conditions fail) has two more.
    const size_t layer_norms = countKind(*graph, "aten::layer_norm");
    EXPECT_TRUE(passes::decomposeEncoderLayers(graph));
    graph->lint();
    // The layer's forward takes optional masks: ATen's op stays for a call with one.
    EXPECT_EQ(countKind(*graph, kLayerOp), 1u) << *graph;
    EXPECT_EQ(countKind(*graph, "srt::multi_head_attention"), 1u) << *graph;
    EXPECT_EQ(countKind(*graph, "srt::fused_linear"), 3u) << *graph;
    EXPECT_EQ(countKind(*graph, "aten::layer_norm"), layer_norms + 2) << *graph;
    // What is left is the op kept for a call with a mask: a second run leaves it as it is.
    const std::string once = graph->toString();
    EXPECT_FALSE(passes::decomposeEncoderLayers(graph));
    EXPECT_EQ(graph->toString(), once);
  }
}

// nn.TransformerEncoder with a padding mask runs its layers on a nested tensor in inference: the
// decomposed kernels take dense tensors only, so ATen's op stays for a nested input.
TEST(EncoderLayerDecomposition, KeepsAtensOpForNestedInputs) {
  auto graph = preparedZooGraph("encoder_padding_mask");
  ASSERT_GT(countKind(*graph, "aten::_nested_tensor_from_mask"), 0u) << *graph;
  const size_t layers = countKind(*graph, kLayerOp);
  ASSERT_EQ(layers, 2u) << *graph;
  const size_t nested_checks = countKind(*graph, "prim::is_nested"); // the module's own
  EXPECT_TRUE(passes::decomposeEncoderLayers(graph));
  graph->lint();
  EXPECT_EQ(countKind(*graph, "prim::is_nested"), nested_checks + layers) << *graph;
  EXPECT_EQ(countKind(*graph, kLayerOp), layers);
  EXPECT_EQ(countKind(*graph, "srt::multi_head_attention"), layers);
  const std::string once = graph->toString();
  EXPECT_FALSE(passes::decomposeEncoderLayers(graph));
  EXPECT_EQ(graph->toString(), once);
}

TEST(EncoderLayerDecomposition, LeavesLayersWithWeightsThatAreNotConstants) {
  auto graph = preparedZooGraph("transformer_encoder_layer", {"linear1.weight"});
  EXPECT_FALSE(passes::decomposeEncoderLayers(graph));
  EXPECT_EQ(countKind(*graph, "srt::multi_head_attention"), 0u);
}

TEST(EncoderLayerDecomposition, ZooEncoderLayersMatchJitDecomposedAndNot) {
  for (const char* name : {"transformer_encoder_layer", "encoder_layer_norm_first_gelu",
                           "encoder_layer_key_padding_mask", "encoder_padding_mask"}) {
    SCOPED_TRACE(name);
    const torch::jit::Module module = loadZooModel(name);
    const std::vector<InputSet> inputs = loadZooInputs(name);
    expectMatchesJit(module, inputs);
    StaticModuleOptions aten_op;
    aten_op.disabled_passes = {"encoder_layer_decomposition"};
    expectMatchesJit(module, inputs, aten_op);
  }
}

} // namespace
} // namespace srt::testing
