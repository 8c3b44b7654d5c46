// multi_head_attention_fusion (passes/multi_head_attention_fusion.cpp): whole attention blocks
// (QKV linears, head split, attention, head merge) become srt::multi_head_attention; near-misses
// keep their srt::attention core; results do not change, through the JIT and StaticModule.
#include <limits>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "harness/zoo.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

// What the pipeline runs for these tests: the core first, then the block around it.
bool fuseAttentionBlocks(std::shared_ptr<torch::jit::Graph>& graph) {
  const bool core = passes::fuseAttention(graph);
  return passes::fuseMultiHeadAttention(graph) || core;
}

// The zoo block as IR (d_model 16, 2 heads of 8), the weights graph inputs 2..7 that
// withConstantWeights freezes. The batch and seq sizes of the head splits (@QBS@ for q, @BS@ for
// k and v) and @EXTRA_OUT@ let tests make near-misses.
const char* kBlockIr = R"IR(
graph(%x : Tensor, %mask : Tensor?, %wq : Tensor, %bq : Tensor, %wk : Tensor, %bk : Tensor, %wv : Tensor, %bv : Tensor):
  %none : NoneType = prim::Constant()
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %H : int = prim::Constant[value=2]()
  %Dh : int = prim::Constant[value=8]()
  %perm : int[] = prim::Constant[value=[0, 2, 1, 3]]()
  %scale : float = prim::Constant[value=0.35355339059327379]()
  %b : int = aten::size(%x, %0)
  %s : int = aten::size(%x, %1)
  %d : int = aten::size(%x, %2)
  %ql : Tensor = aten::linear(%x, %wq, %bq)
  %qb : int = aten::size(%ql, %0)
  %qs : int = aten::size(%ql, %1)
  %qsz : int[] = prim::ListConstruct(@QBS@, %H, %Dh)
  %qv : Tensor = aten::view(%ql, %qsz)
  %q : Tensor = aten::permute(%qv, %perm)
  %kl : Tensor = aten::linear(%x, %wk, %bk)
  %ksz : int[] = prim::ListConstruct(@BS@, %H, %Dh)
  %kv : Tensor = aten::view(%kl, %ksz)
  %k : Tensor = aten::permute(%kv, %perm)
  %vl : Tensor = aten::linear(%x, %wv, %bv)
  %vsz : int[] = prim::ListConstruct(@BS@, %H, %m1)
  %vv : Tensor = aten::view(%vl, %vsz)
  %v : Tensor = aten::transpose(%vv, %1, %2)
  %kt : Tensor = aten::transpose(%k, %m2, %m1)
  %sc : Tensor = aten::matmul(%q, %kt)
  %ss : Tensor = aten::mul(%sc, %scale)
  %cond : bool = aten::__isnot__(%mask, %none)
  %sm : Tensor = prim::If(%cond)
    block0():
      %mk : Tensor = prim::unchecked_cast(%mask)
      %sa : Tensor = aten::add(%ss, %mk, %1)
      -> (%sa)
    block1():
      -> (%ss)
  %p : Tensor = aten::softmax(%sm, %m1, %none)
  %c : Tensor = aten::matmul(%p, %v)
  %cp : Tensor = aten::permute(%c, %perm)
  %msz : int[] = prim::ListConstruct(%b, %s, %d)
  %out : Tensor = aten::reshape(%cp, %msz)
  return (%out@EXTRA_OUT@)
)IR";

constexpr int64_t kModel = 16;

std::string blockIr(const std::string& q_batch_seq = "%qb, %qs",
                    const std::string& batch_seq = "%b, %s", const std::string& extra_out = "") {
  std::string ir = kBlockIr;
  auto substitute = [&ir](const std::string& key, const std::string& value) {
    for (size_t at = ir.find(key); at != std::string::npos; at = ir.find(key)) {
      ir.replace(at, key.size(), value);
    }
  };
  substitute("@QBS@", q_batch_seq);
  substitute("@BS@", batch_seq);
  substitute("@EXTRA_OUT@", extra_out);
  return ir;
}

// Graph inputs [first, last) become prim::Constant tensors, as freezing makes module weights.
std::shared_ptr<torch::jit::Graph> withConstantWeights(std::shared_ptr<torch::jit::Graph> graph,
                                                       size_t first = 2, size_t last = 8) {
  torch::manual_seed(7);
  torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
  for (size_t i = first; i < last; ++i) {
    const bool is_weight = i % 2 == 0;
    at::Tensor value = is_weight ? torch::randn({kModel, kModel}) * 0.3 : torch::randn({kModel});
    graph->inputs()[first]->replaceAllUsesWith(graph->insertConstant(value));
    graph->eraseInput(first);
  }
  return graph;
}

std::vector<GraphInputs> blockInputs(bool with_mask) {
  std::vector<GraphInputs> sets;
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 5}, {3, 7}}) {
    const at::Tensor x = torch::randn({batch, seq, kModel});
    sets.push_back({x, c10::IValue()});
    if (with_mask) {
      sets.push_back({x, torch::randn({seq, seq})});
      sets.push_back({x, torch::randn({batch, 2, seq, seq})});
      sets.push_back(
          {x, torch::triu(torch::full({seq, seq}, -std::numeric_limits<float>::infinity()), 1)});
    }
  }
  return sets;
}

TEST(MultiHeadAttentionFusion, FusesTheWholeBlock) {
  auto fused =
      expectPassPreservesResults(fuseAttentionBlocks, withConstantWeights(parsedGraph(blockIr())),
                                 blockInputs(/*with_mask=*/true), true);
  EXPECT_EQ(countKind(*fused, "srt::multi_head_attention"), 1u) << *fused;
  for (const char* gone : {"srt::attention", "aten::linear", "aten::view", "aten::permute",
                           "aten::reshape", "aten::size", "prim::ListConstruct", "prim::If"}) {
    EXPECT_EQ(countKind(*fused, gone), 0u) << gone << " left in\n" << *fused;
  }
  // Only the fused node is left.
  EXPECT_EQ(passes::countNodes(*fused->block()), 1u) << *fused;
}

TEST(MultiHeadAttentionFusion, FusedGraphMatchesThroughStaticModule) {
  auto graph = withConstantWeights(parsedGraph(blockIr()));
  StaticModule module(graph->copy()); // runs the pipeline, so the fused kernel
  ASSERT_EQ(countKind(module.graph(), "srt::multi_head_attention"), 1u) << module.graph();
  for (const GraphInputs& set : blockInputs(true)) {
    const std::vector<c10::IValue> expected = runWithJit(graph, set);
    for (int run = 0; run < 2; ++run) {
      EXPECT_EQ(compareIValues(expected[0], module(set)), "");
    }
  }
}

// The block without a mask: no prim::If between the scaled scores and the softmax.
std::string unmaskedBlockIr() {
  std::string ir = blockIr();
  const size_t begin = ir.find("  %cond : bool");
  const size_t end = ir.find("  %p : Tensor");
  ir.erase(begin, end - begin);
  ir.replace(ir.find("aten::softmax(%sm"), 17, "aten::softmax(%ss");
  return ir;
}

TEST(MultiHeadAttentionFusion, FusesTheBlockWithoutMask) {
  auto graph = withConstantWeights(parsedGraph(unmaskedBlockIr()));
  ASSERT_EQ(countKind(*graph, "prim::If"), 0u) << *graph;
  auto fused = expectPassPreservesResults(fuseAttentionBlocks, graph, blockInputs(false), true);
  EXPECT_EQ(countKind(*fused, "srt::multi_head_attention"), 1u) << *fused;
  EXPECT_EQ(passes::countNodes(*fused->block()), 1u) << *fused;
}

struct NearMiss {
  const char* why;
  std::shared_ptr<torch::jit::Graph> graph;
  bool masks = true; // the [seq, seq] masks fit its scores
};

TEST(MultiHeadAttentionFusion, NearMissesKeepTheirAttentionCore) {
  const NearMiss misses[] = {
      // Attention over the batch dim instead of the sequence: a different computation.
      {"view sizes (seq, batch)", withConstantWeights(parsedGraph(blockIr("%s, %b", "%s, %b"))),
       false},
      {"a projection used elsewhere",
       withConstantWeights(parsedGraph(blockIr("%qb, %qs", "%b, %s", ", %ql")))},
      {"weights not constants", withConstantWeights(parsedGraph(blockIr()), 4, 8)},
  };
  for (const NearMiss& miss : misses) {
    SCOPED_TRACE(miss.why);
    std::vector<GraphInputs> sets = blockInputs(miss.masks);
    if (miss.graph->inputs().size() > 2) {
      for (GraphInputs& set : sets) {
        set.push_back(torch::randn({kModel, kModel}));
        set.push_back(torch::randn({kModel}));
      }
    }
    auto fused = expectPassPreservesResults(fuseAttentionBlocks, miss.graph, sets, true);
    EXPECT_EQ(countKind(*fused, "srt::multi_head_attention"), 0u) << *fused;
    EXPECT_EQ(countKind(*fused, "srt::attention"), 1u) << *fused;
  }
}

// Nodes of the zoo model's graph after preparation and after the whole pipeline.
std::pair<size_t, std::shared_ptr<torch::jit::Graph>> optimizedZooGraph(const std::string& name) {
  auto graph = passes::prepareModule(loadZooModel(name)).graph;
  const size_t before = passes::countNodes(*graph->block());
  passes::optimize(graph, {});
  return {before, graph};
}

TEST(MultiHeadAttentionFusion, FusesEveryBlockOfTheZooTransformers) {
  for (const auto& [name, blocks] :
       std::map<std::string, size_t>{{"transformer_block", 1}, {"transformer_2block", 2}}) {
    SCOPED_TRACE(name);
    auto [before, graph] = optimizedZooGraph(name);
    EXPECT_EQ(countKind(*graph, "srt::multi_head_attention"), blocks) << *graph;
    EXPECT_EQ(countKind(*graph, "srt::attention"), 0u) << *graph;
    EXPECT_EQ(countKind(*graph, "aten::softmax"), 0u) << *graph;
    // Left per block: 2 layer_norm, the fused attention, out_proj + residual, ffn_in + gelu,
    // ffn_out + residual (the GEMM fusions take the linears, activations and residual adds).
    EXPECT_EQ(passes::countNodes(*graph->block()), 6 * blocks) << *graph;
    EXPECT_LE(2 * passes::countNodes(*graph->block()), before);
  }
}

TEST(MultiHeadAttentionFusion, ZooTransformersMatchJitFusedAndUnfused) {
  for (const char* name : {"transformer_block", "transformer_2block"}) {
    SCOPED_TRACE(name);
    const torch::jit::Module module = loadZooModel(name);
    const std::vector<InputSet> inputs = loadZooInputs(name); // without and with mask
    expectMatchesJit(module, inputs);
    StaticModuleOptions core_only;
    core_only.disabled_passes = {"multi_head_attention_fusion"};
    expectMatchesJit(module, inputs, core_only);
  }
}

} // namespace
} // namespace srt::testing
