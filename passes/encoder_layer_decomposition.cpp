// nn.TransformerEncoderLayer's inference fast path, aten::_transformer_encoder_layer_fwd, as this
// project's kernels: layer_norm, srt::multi_head_attention, and three srt::fused_linear (the out
// projection and the second FFN GEMM each with its residual add, the first FFN GEMM with its
// activation), every weight pre-packed once. ATen's op re-reads unpacked weights through
// at::linear-style GEMMs and allocates every intermediate on each call.
//
// Only a layer whose weights are constants (frozen) and whose configuration is constant is
// rewritten. A mask that may be given at run time keeps ATen's op for that case, behind an If on
// `mask is None`: its boolean key-padding semantics (fully masked rows) are ATen's business. So
// does a nested tensor: nn.TransformerEncoder turns a padded batch into one in inference
// (_nested_tensor_from_mask) and runs its layers on it; in a graph that can make one, the If
// also asks `not src.is_nested`.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::NamedValue;
using torch::jit::Node;
using torch::jit::Value;

constexpr const char* kEncoderLayerSchema =
    "aten::_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, Tensor "
    "qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu, bool "
    "norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2, "
    "Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, Tensor ffn_weight_2, Tensor "
    "ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor";

enum EncoderLayerInput {
  kSrc = 0,
  kEmbedDim,
  kNumHeads,
  kQkvWeight,
  kQkvBias,
  kProjWeight,
  kProjBias,
  kUseGelu,
  kNormFirst,
  kEps,
  kNorm1Weight,
  kNorm1Bias,
  kNorm2Weight,
  kNorm2Bias,
  kFfn1Weight,
  kFfn1Bias,
  kFfn2Weight,
  kFfn2Bias,
  kMask,
};

struct LayerConfig {
  int64_t embed_dim = 0;
  int64_t num_heads = 0;
  bool use_gelu = false;
  bool norm_first = false;
  double eps = 0.0;
};

std::optional<at::Tensor> constantFloatTensor(const Value* value, at::IntArrayRef sizes) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isTensor()) {
    return std::nullopt;
  }
  const at::Tensor& t = constant->toTensor();
  if (t.scalar_type() != at::kFloat || !t.is_cpu() || t.sizes() != sizes) {
    return std::nullopt;
  }
  return t;
}

// The layer's configuration when it and every weight are constants of consistent shapes.
std::optional<LayerConfig> constantConfig(const Node* layer) {
  const auto embed_dim = torch::jit::toIValue(layer->input(kEmbedDim));
  const auto num_heads = torch::jit::toIValue(layer->input(kNumHeads));
  const auto use_gelu = torch::jit::toIValue(layer->input(kUseGelu));
  const auto norm_first = torch::jit::toIValue(layer->input(kNormFirst));
  const auto eps = torch::jit::toIValue(layer->input(kEps));
  if (!embed_dim || !embed_dim->isInt() || !num_heads || !num_heads->isInt() || !use_gelu ||
      !use_gelu->isBool() || !norm_first || !norm_first->isBool() || !eps || !eps->isDouble()) {
    return std::nullopt;
  }
  LayerConfig config{embed_dim->toInt(), num_heads->toInt(), use_gelu->toBool(),
                     norm_first->toBool(), eps->toDouble()};
  const int64_t e = config.embed_dim;
  if (e <= 0 || config.num_heads <= 0 || e % config.num_heads != 0) {
    return std::nullopt;
  }
  const auto ffn_weight = torch::jit::toIValue(layer->input(kFfn1Weight));
  if (!ffn_weight || !ffn_weight->isTensor() || ffn_weight->toTensor().dim() != 2) {
    return std::nullopt;
  }
  const int64_t f = ffn_weight->toTensor().size(0);
  const std::vector<std::pair<EncoderLayerInput, std::vector<int64_t>>> shapes = {
      {kQkvWeight, {3 * e, e}}, {kQkvBias, {3 * e}}, {kProjWeight, {e, e}}, {kProjBias, {e}},
      {kNorm1Weight, {e}},      {kNorm1Bias, {e}},   {kNorm2Weight, {e}},   {kNorm2Bias, {e}},
      {kFfn1Weight, {f, e}},    {kFfn1Bias, {f}},    {kFfn2Weight, {e, f}}, {kFfn2Bias, {e}}};
  for (const auto& [input, sizes] : shapes) {
    if (!constantFloatTensor(layer->input(input), sizes)) {
      return std::nullopt;
    }
  }
  return config;
}

// ATen's transformer_encoder_layer_forward (aten/src/ATen/native/transformers/transformer.cpp),
// op for op, at the graph's insertion point:
//   norm_first:  x = src + proj(mha(ln1(src)));  y = x + ffn(ln2(x))
//   otherwise:   x = ln1(src + proj(mha(src)));  y = ln2(x + ffn(x))
Value* emitDecomposed(Graph& graph, const Node* layer, const LayerConfig& c) {
  const torch::jit::SourceRange& range = layer->sourceRange();
  auto in = [&](EncoderLayerInput i) { return NamedValue(layer->input(i)); };
  auto insert = [&](const char* op, std::vector<NamedValue> args) {
    return graph.insert(symbol(op), args, {}, range);
  };
  const c10::IValue none;
  auto layerNorm = [&](Value* x, EncoderLayerInput weight, EncoderLayerInput bias) {
    return insert("aten::layer_norm", {x, c10::IValue(std::vector<int64_t>{c.embed_dim}),
                                       in(weight), in(bias), c.eps, false});
  };
  // srt::fused_linear(input, weight, bias, activation, residual, alpha, residual_first):
  // act(input @ weightᵀ + bias) [+ residual].
  auto fusedLinear = [&](Value* x, EncoderLayerInput weight, EncoderLayerInput bias,
                         const char* activation, const NamedValue& residual) {
    return insert("srt::fused_linear",
                  {x, in(weight), in(bias), std::string(activation), residual, int64_t{1}, false});
  };
  Value* src = layer->input(kSrc);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.embed_dim / c.num_heads));

  Value* attention_input = c.norm_first ? layerNorm(src, kNorm1Weight, kNorm1Bias) : src;
  Value* context =
      insert("srt::multi_head_attention", {attention_input, in(kQkvWeight), in(kQkvBias),
                                           c.num_heads, none, scale, false, false});
  Value* x = fusedLinear(context, kProjWeight, kProjBias, "none", src);
  if (!c.norm_first) {
    x = layerNorm(x, kNorm1Weight, kNorm1Bias);
  }
  Value* ffn_input = c.norm_first ? layerNorm(x, kNorm2Weight, kNorm2Bias) : x;
  Value* hidden =
      fusedLinear(ffn_input, kFfn1Weight, kFfn1Bias, c.use_gelu ? "gelu" : "relu", none);
  Value* y = fusedLinear(hidden, kFfn2Weight, kFfn2Bias, "none", x);
  return c.norm_first ? y : layerNorm(y, kNorm2Weight, kNorm2Bias);
}

// Marks the ATen op a decomposed layer keeps for masked or nested inputs: this pass leaves it.
const c10::Symbol kKeptForAten = c10::Symbol::attr("srt_kept_for_aten");

void decompose(Graph& graph, Node* layer, const LayerConfig& config, bool may_be_nested) {
  torch::jit::WithInsertPoint before_layer(layer);
  const torch::jit::SourceRange& range = layer->sourceRange();
  Value* mask = layer->input(kMask);
  const bool may_have_mask = mask->type()->kind() != c10::TypeKind::NoneType;
  if (!may_have_mask && !may_be_nested) {
    layer->output()->replaceAllUsesWith(emitDecomposed(graph, layer, config));
    layer->destroy();
    return;
  }
  // if (mask is None) and not src.is_nested: the decomposition, else: ATen's op as it was.
  Value* decomposable = nullptr;
  if (may_have_mask) {
    decomposable = graph.insert(c10::aten::__is__, {mask, c10::IValue()}, {}, range);
  }
  if (may_be_nested) {
    Value* nested = graph.insert(symbol("prim::is_nested"), {layer->input(kSrc)}, {}, range);
    Value* dense = graph.insert(c10::aten::__not__, {nested}, {}, range);
    decomposable = decomposable == nullptr
                       ? dense
                       : graph.insert(c10::aten::__and__, {decomposable, dense}, {}, range);
  }
  Node* branch = graph.insertNode(graph.create(c10::prim::If, {decomposable}, 1));
  branch->output()->setType(layer->output()->type());
  Block* decomposed = branch->addBlock();
  Block* kept = branch->addBlock();
  {
    torch::jit::WithInsertPoint in_block(decomposed);
    decomposed->registerOutput(emitDecomposed(graph, layer, config));
  }
  layer->output()->replaceAllUsesWith(branch->output());
  layer->moveBefore(kept->return_node());
  kept->registerOutput(layer->output());
  layer->i_(kKeptForAten, 1);
}

// The layers whose mask is None or may be: a layer always given a mask stays ATen's, and so does
// the op a decomposition kept.
bool isDecomposable(Node* node) {
  return node->kind() == symbol("aten::_transformer_encoder_layer_fwd") &&
         node->matches(kEncoderLayerSchema) && !node->hasAttribute(kKeptForAten) &&
         !node->input(kMask)->type()->isSubtypeOf(*c10::TensorType::get());
}

} // namespace

bool decomposeEncoderLayers(GraphPtr& graph) {
  const std::vector<Node*> layers = nodesWhere(graph->block(), isDecomposable);
  const bool may_be_nested = mayCreateNestedTensors(graph->block());
  bool changed = false;
  for (Node* layer : layers) {
    if (const std::optional<LayerConfig> config = constantConfig(layer)) {
      decompose(*graph, layer, *config, may_be_nested);
      changed = true;
    }
  }
  return changed;
}

} // namespace srt::passes
