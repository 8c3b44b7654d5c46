#include "passes/pipeline.h"

#include <algorithm>

#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"

namespace srt::passes {

const std::vector<PassEntry>& optimizationPipeline() {
  static const std::vector<PassEntry> pipeline = {
      // First, so every later pattern sees one node per distinct computation.
      {"common_subexpression", eliminateCommonSubexpressions},
      // Before the fusions: their patterns and kernels see weights as constants (pre-packable).
      {"constant_folding", foldConstants},
      // After constant_folding (the weight's kernel size must be known); before every pass that
      // reads convolutions, whose patterns take numeric padding only.
      {"conv_padding_modes", spellOutConvPaddingModes},
      // After constant_folding: it needs the conv weight and the BatchNorm statistics as constants.
      {"conv_bn_folding", foldConvBatchNorm},
      // After constant_folding (its weights must be constants); emits the fused ops directly.
      {"encoder_layer_decomposition", decomposeEncoderLayers},
      // Before the attention and GEMM fusions, which then see einsum's products as matmuls.
      {"einsum_lowering", lowerEinsums},
      // Before conv_fusion and channels_last, which then see the 1-D convolutions as 2-D ones.
      {"conv1d_lowering", lowerConv1d},
      // After conv1d_lowering (1-D convolutions are 2-D ones by then) and conv_bn_folding (which
      // matches the convolution's own input); before channels_last, which then keeps the pad's
      // output channels last.
      {"depthwise_explicit_padding", padDepthwiseExplicitly},
      // Before channels_last and element-wise fusion, which then see 2-D pooling and elu.
      {"aten_decompositions", decomposeAtenOps},
      // After aten_decompositions (relu6 is hardtanh by then); before the fusions, which then
      // take hand-written SiLU, hardswish, hardsigmoid and clamp(min=0) as the ops.
      {"activation_idioms", rewriteActivationIdioms},
      // After activation_idioms, which reads a hand-written hardsigmoid's `conv(x) + 3` as written
      // (folded into the bias first, it would no longer see one); before conv_fusion and the
      // layouts, which then see the convolutions with nothing between them. resnet50 built with
      // FrozenBatchNorm2d: 34.2 -> 31.9 ms (1 thread, batch 1, AMD EPYC), 112 -> 72 nodes.
      {"conv_affine_folding", foldConvAffines},
      // Early: replaces nn.MultiheadAttention's whole inlined forward (hundreds of nodes of checks
      // and a slow path other passes would otherwise work through) by the fused kernel and a
      // linear, which gemm_residual_add then joins with the residual.
      {"multihead_attention_module", fuseMultiheadAttentionModules},
      // After multihead_attention_module, whose fused op fixes the rank of what follows it (and
      // which needs the asserts this folds): drops `x.dim() == 3` checks the graph already proves.
      {"rank_folding", foldKnownRanks},
      // After rank_folding, whose ranks some size facts need; before the fusions and weight
      // packing, which then see the constant weights sizes select (cross-attention's split).
      {"size_folding", foldKnownSizes},
      // Before element-wise fusion, which would otherwise take the normalization's tail, and
      // before attention fusion, whose input is often this layer norm's output.
      {"layer_norm_fusion", fuseLayerNorm},
      // Before the GEMM fusions and copy variants: matches the plain aten ops of attention
      // written out by hand (its out_proj and q @ k^T would otherwise be taken by them).
      {"attention_fusion", fuseAttention},
      // After attention_fusion: grows its srt::attention nodes into whole MHA blocks.
      {"multi_head_attention_fusion", fuseMultiHeadAttention},
      // After attention fusion (which owns matmul-softmax-matmul and its projections).
      {"linear_activation", fuseLinearActivation},
      // After linear_activation, so linear + activation + residual ends as one node.
      {"gemm_residual_add", fuseGemmResidualAdd},
      // Before element-wise fusion, which would otherwise take the activation.
      {"norm_activation", fuseNormActivation},
      // After conv_bn_folding (the pattern is the folded conv2d) and before element-wise fusion,
      // which would otherwise take the residual add and the activation.
      {"conv_fusion", fuseConvEpilogues},
      // After constant_folding (a constant w.t() is better folded than absorbed) and after
      // attention fusion, which matches q @ k.transpose(-2, -1) * scale itself.
      {"transpose_absorption", absorbTransposes},
      // After the fusions, whose patterns may contain chunk + ListUnpack or cat of a list.
      {"list_unpack_fusion", fuseListUnpack},
      // Before copy_variants and channels_last, which would otherwise see ShuffleNet's
      // view-transpose-view as copies and as readers of strides.
      {"channel_shuffle_fusion", fuseChannelShuffles},
      {"variadic_cat_stack", useVariadicCatStack},
      // After the fusions, so their patterns still see the original view ops.
      {"copy_variants", useCopyVariants},
      // After copy_variants: contiguous() of a fresh permute_copy is then provably a no-op.
      {"remove_no_ops", removeNoOps},
      // After remove_no_ops, so same-dtype to() is gone rather than split into two nodes.
      {"maybe_copy_variants", useMaybeCopyVariants},
      // After the GEMM/attention fusions, so their epilogues (bias, activation) are theirs;
      // what element-wise work is left becomes one loop per chain.
      {"elementwise_fusion", fuseElementwiseChains},
      // After every fusion, so that it sees the final convolutions and what reads them.
      {"channels_last", useChannelsLast},
      // After channels_last and every pass that reads convolutions (they see plain weights);
      // before dead_code, which drops the plain weight constants it leaves unused.
      {"conv_weight_packing", packConvWeights},
      // After every pass that makes or reads linear layers (fusions see plain weights); before
      // dead_code, which drops the plain weight constants it leaves unused.
      {"linear_weight_packing", packLinearWeights},
      // After both weight packings (repacks their constants), before conv_winograd, which then
      // leaves bfloat16 weights direct (Winograd has no bfloat16 kernels), and dead_code.
      // Off unless StaticModuleOptions::fp32_precision is "bf16".
      {"bf16_weights", useBFloat16Weights},
      // After conv_weight_packing (repacks its constants); before dead_code, which drops the
      // direct-packed constants it leaves unused.
      {"conv_winograd", useWinogradConvolutions},
      // After every pass that makes or repacks convolutions (it packs their weights again for
      // the blocked kernels, Winograd's as they are); before dead_code, which drops the
      // channels-last weight constants and conversions it leaves unused.
      {"blocked_layout", useBlockedLayout},
      // After blocked_layout and the weight packings, whose convolutions it takes as they end
      // up (packed or blocked, Winograd or bfloat16: the kernel decides what it can scale).
      {"conv_channel_scale", fuseConvChannelScales},
      // After blocked_layout (it fuses blocked convolutions) and conv_channel_scale (a scaled
      // convolution is not one it fuses).
      {"pointwise_depthwise_fusion", fusePointwiseDepthwise},
      // Last: rewrites above leave the nodes they replaced unused.
      {"dead_code", eliminateDeadCode},
  };
  return pipeline;
}

std::vector<std::string> passNames() {
  std::vector<std::string> names;
  for (const PassEntry& entry : optimizationPipeline()) {
    names.emplace_back(entry.name);
  }
  return names;
}

void checkPassNames(const std::set<std::string>& names) {
  const std::vector<std::string> known = passNames();
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      continue;
    }
    std::string valid;
    for (const std::string& candidate : known) {
      valid += (valid.empty() ? "" : ", ") + candidate;
    }
    TORCH_CHECK(false, "static_runtime: unknown pass '", name,
                "' in disabled_passes; passes are: ", valid);
  }
}

std::vector<PassReport> optimize(std::shared_ptr<torch::jit::Graph>& graph,
                                 const std::set<std::string>& disabled) {
  std::vector<PassReport> reports;
  for (const PassEntry& entry : optimizationPipeline()) {
    PassReport report;
    report.name = entry.name;
    report.nodes_before = countNodes(*graph->block());
    report.ran = disabled.count(entry.name) == 0;
    if (report.ran) {
      report.changed = entry.run(graph);
      try {
        graph->lint();
      } catch (const std::exception& e) {
        TORCH_CHECK(false, "static_runtime: internal error: pass '", entry.name,
                    "' left an invalid graph: ", e.what());
      }
    }
    report.nodes_after = countNodes(*graph->block());
    reports.push_back(std::move(report));
  }
  return reports;
}

size_t countNodes(const torch::jit::Block& block) {
  size_t count = 0;
  for (const torch::jit::Node* node : block.nodes()) {
    if (node->kind() == c10::prim::Constant) {
      continue;
    }
    ++count;
    for (const torch::jit::Block* sub_block : node->blocks()) {
      count += countNodes(*sub_block);
    }
  }
  return count;
}

} // namespace srt::passes
