// multihead_attention_module: nn.MultiheadAttention(x, x, x) with constant weights and its
// attention weights unused, as torch.jit.script inlines it (torchvision's ViT encoder blocks,
// self-attention written with the module), becomes
//   linear(srt::multi_head_attention(x, in_proj_weight, in_proj_bias, H, None, 1/sqrt(E/H)),
//          out_proj.weight, out_proj.bias)
// which the GEMM passes then fuse with the residual add.
//
// Scripted, the module's forward is a tree of run-time checks choosing between ATen's fast path
// (aten::_native_multi_head_attention) and the slow path (F.multi_head_attention_forward written
// out in ~150 ops), 185-300 nodes per module. Both compute the same attention (the fast path is
// PyTorch's optimisation of the slow one), and so does the replacement, for every input the
// checks let through, except two cases the replacement does not cover: an unbatched (2-D) input
// and a nested tensor. So the rewrite needs a graph that cannot make nested tensors, and x's rank
// proven 3 (passes/shape_facts.h: e.g. the `input.dim() == 3` assert of torchvision's
// EncoderBlock) or else a guard: `if x.dim() == 3: <replacement> else: <the module's code>`. The
// fast path must be reachable at all: a module whose constants rule it out (batch_first=False)
// has a fast-path op in its graph that never runs, and would read its [T, B, E] input as
// [B, T, E]. The other checks (dtype, device, autocast, grad mode: this runtime runs with grad
// off) only choose between the two equal paths. Errors the slow path raises for a wrong embedding
// size come from the projection instead.
//
// Matched from the fast-path op: query, key and value the same x, no mask, every weight a float32
// constant of the shapes E and H imply. Its result is followed out of the If blocks and tuples to
// the one top-level value the module returns (unpacked, or indexed with [0]); the If producing it
// must hold the slow path of the same module (a linear on the same out_proj weight) in its other
// branch, and the attention weights must be unused.
#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_set>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/rewrite_safety.h"
#include "passes/shape_facts.h"

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

constexpr const char* kNativeMhaSchema =
    "aten::_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, "
    "int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, "
    "Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True, int? "
    "mask_type=None) -> (Tensor, Tensor)";

enum NativeMhaInput {
  kQuery = 0,
  kKey,
  kValue,
  kEmbedDim,
  kNumHeads,
  kQkvWeight,
  kQkvBias,
  kProjWeight,
  kProjBias,
  kMask,
  kNeedWeights,
};

bool isFloatConstant(const Value* value, at::IntArrayRef sizes) {
  const auto constant = torch::jit::toIValue(value);
  return constant && constant->isTensor() && constant->toTensor().scalar_type() == at::kFloat &&
         constant->toTensor().sizes() == sizes;
}

std::optional<int64_t> constantInt(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  return constant && constant->isInt() ? std::optional<int64_t>(constant->toInt()) : std::nullopt;
}

struct ModuleMatch {
  Node* native = nullptr;
  Node* reader = nullptr;    // the top-level TupleUnpack of the module's (output, weights), or
                             // TupleIndex of its output (`attention(x, x, x)[0]`)
  Node* branches = nullptr;  // the top-level If choosing fast or slow path
  Node* fast_path = nullptr; // the top-level If holding the fast-path op (its checks inside)
  Value* x = nullptr;
  int64_t embed_dim = 0;
  int64_t heads = 0;
  bool rank_guard = false; // x's rank unknown: the fused form runs when x.dim() == 3
};

// Where `value` (element `index` of it, when it is in a tuple) ends up: through TupleConstruct,
// block returns (to the owning If's output) and a top-level TupleUnpack or TupleIndex of that
// element. Sets the If whose output the top-level value is.
Value* followOut(Value* value, ModuleMatch& match) {
  std::optional<size_t> element; // set once `value` is a tuple holding the result at `element`
  Block* top = value->owningGraph()->block();
  for (int step = 0; step < 32; ++step) {
    if (value->uses().size() != 1) {
      return nullptr;
    }
    const torch::jit::Use use = value->uses()[0];
    Node* user = use.user;
    if (user->kind() == c10::prim::TupleConstruct && !element) {
      element = use.offset;
      value = user->output();
    } else if (user->kind() == c10::prim::Return && user->owningBlock() != top) {
      Node* owner = user->owningBlock()->owningNode();
      if (owner->kind() != c10::prim::If) {
        return nullptr;
      }
      value = owner->output(use.offset);
      if (owner->owningBlock() == top) {
        match.fast_path = match.fast_path == nullptr ? owner : match.fast_path;
        match.branches = owner;
      }
    } else if (user->kind() == c10::prim::TupleUnpack && element && user->owningBlock() == top &&
               value->node() == match.branches) {
      match.reader = user;
      return user->output(*element);
    } else if (user->kind() == c10::prim::TupleIndex && element && user->owningBlock() == top &&
               value->node() == match.branches && use.offset == 0 &&
               constantInt(user->input(1)) == static_cast<int64_t>(*element)) {
      match.reader = user;
      return user->output();
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// Whether `block` (or a block inside it) computes a linear on `weight`: the slow path's
// out-projection.
bool projectsWith(const Block* block, const Value* weight) {
  for (const Node* node : block->nodes()) {
    if (node->kind() == c10::aten::linear && node->input(1) == weight) {
      return true;
    }
    for (const Block* sub_block : node->blocks()) {
      if (projectsWith(sub_block, weight)) {
        return true;
      }
    }
  }
  return false;
}

// Whether a string may be empty at run time: not when every value it can take (through If
// outputs) is a non-empty constant or an aten::format of one.
bool mayBeEmptyString(const Value* text, int depth = 0) {
  if (depth > 64) {
    return true;
  }
  if (const auto constant = torch::jit::toIValue(text)) {
    return !constant->isString() || constant->toStringRef().empty();
  }
  const Node* node = text->node();
  if (node->kind() == c10::aten::format) {
    return mayBeEmptyString(node->input(0), depth + 1);
  }
  if (node->kind() == c10::prim::If) {
    for (const Block* block : node->blocks()) {
      if (mayBeEmptyString(block->outputs()[text->offset()], depth + 1)) {
        return true;
      }
    }
    return false;
  }
  return true;
}

// Whether the fast path can run: its If's condition is `not len(why_not_fast_path) > 0`, and the
// reason may be empty. A module whose constants rule the fast path out (batch_first=False, whose
// [T, B, E] input the fast-path op would read as [B, T, E]) leaves every reason non-empty.
bool fastPathReachable(const Node* fast_path) {
  const Node* negation = fast_path->input(0)->node();
  if (negation->kind() != c10::aten::__not__) {
    return false;
  }
  const Node* greater = negation->input(0)->node();
  if (greater->kind() != c10::aten::gt || constantInt(greater->input(1)) != 0) {
    return false;
  }
  const Node* length = greater->input(0)->node();
  return length->kind() == c10::aten::len && mayBeEmptyString(length->input(0));
}

// Whether the top-level nodes from `first` to `last` are read after `last` only through `result`.
bool onlyResultLeaves(Node* first, Node* last, const Value* result) {
  std::unordered_set<const Node*> range;
  for (Node* node = first;; node = node->next()) {
    if (node->kind() == c10::prim::Return) {
      return false;
    }
    range.insert(node);
    if (node == last) {
      break;
    }
  }
  auto in_range = [&](const Node* user) {
    for (const Node* node = user; node != nullptr; node = node->owningBlock()->owningNode()) {
      if (range.count(node) != 0) {
        return true;
      }
    }
    return false;
  };
  for (const Node* node : range) {
    for (const Value* output : node->outputs()) {
      for (const torch::jit::Use& use : output->uses()) {
        if (output != result && !in_range(use.user)) {
          return false;
        }
      }
    }
  }
  return true;
}

std::optional<ModuleMatch> matchModule(Node* native, bool may_be_nested) {
  if (!native->matches(kNativeMhaSchema) || may_be_nested) {
    return std::nullopt;
  }
  ModuleMatch match;
  match.native = native;
  match.x = native->input(kQuery);
  const std::optional<int64_t> e = constantInt(native->input(kEmbedDim));
  const std::optional<int64_t> h = constantInt(native->input(kNumHeads));
  if (native->input(kKey) != match.x || native->input(kValue) != match.x || !e || !h || *e <= 0 ||
      *h <= 0 || *e % *h != 0 || native->input(kMask)->type()->kind() != c10::TypeKind::NoneType ||
      !isFloatConstant(native->input(kQkvWeight), {3 * *e, *e}) ||
      !isFloatConstant(native->input(kQkvBias), {3 * *e}) ||
      !isFloatConstant(native->input(kProjWeight), {*e, *e}) ||
      !isFloatConstant(native->input(kProjBias), {*e})) {
    return std::nullopt;
  }
  const std::optional<int64_t> rank = knownRank(match.x);
  if (rank && *rank != 3) {
    return std::nullopt;
  }
  match.rank_guard = !rank;
  match.embed_dim = *e;
  match.heads = *h;
  // The attention weights (None when need_weights is False) must go unused; need_weights itself
  // then changes nothing the module returns (`attention(x, x, x)[0]`, need_weights defaulting to
  // True, computes weights nobody reads).
  if (native->output(0)->uses().size() != 1 || native->output(1)->uses().size() != 1 ||
      native->output(1)->uses()[0].user != native->output(0)->uses()[0].user) {
    return std::nullopt;
  }
  Value* result = followOut(native->output(0), match);
  if (result == nullptr || match.branches == nullptr) {
    return std::nullopt;
  }
  for (Value* output : match.reader->outputs()) {
    if (output != result && !output->uses().empty()) {
      return std::nullopt;
    }
  }
  if (!fastPathReachable(match.fast_path)) {
    return std::nullopt;
  }
  // x must be defined where the replacement goes (the module's top-level result).
  if (match.x->node()->owningBlock() != match.reader->owningBlock() ||
      !match.x->node()->isBefore(match.fast_path)) {
    return std::nullopt;
  }
  // Behind a rank guard the module's top-level nodes move into its other branch: nothing after
  // them may read what they make but the result.
  // (An unused result leaves nothing to guard: such a module stays as it is, and cannot match
  // again and again.)
  if (match.rank_guard &&
      (result->uses().empty() || !onlyResultLeaves(match.fast_path, match.reader, result))) {
    return std::nullopt;
  }
  // The other branch of the If is the same module's slow path.
  bool slow_path = false;
  for (const Block* block : match.branches->blocks()) {
    slow_path = slow_path || projectsWith(block, native->input(kProjWeight));
  }
  if (!slow_path) {
    return std::nullopt;
  }
  return match;
}

bool unused(const Node* node) {
  for (const Value* output : node->outputs()) {
    if (!output->uses().empty()) {
      return false;
    }
  }
  return true;
}

// `node` and what only it read, transitively, in its block: the fast-path checks
// (why_not_fast_path: reads of dtype, device, autocast and grad mode the dead-code elimination
// keeps).
void destroyUnusedProducers(Node* node) {
  std::vector<Node*> work{node};
  const Block* block = node->owningBlock();
  while (!work.empty()) {
    Node* next = work.back();
    work.pop_back();
    if (next->kind() == c10::prim::Param || next->owningBlock() != block || !unused(next) ||
        next->kind() == c10::prim::Constant) {
      continue;
    }
    std::vector<Node*> producers;
    for (Value* input : next->inputs()) {
      producers.push_back(input->node());
    }
    next->destroy();
    for (Node* producer : producers) {
      // Pushed once per read; a producer read twice is destroyed when its last reader is.
      if (std::find(work.begin(), work.end(), producer) == work.end()) {
        work.push_back(producer);
      }
    }
  }
}

// srt::multi_head_attention + the out-projection at the insertion point; returns the projection.
Value* insertFusedModule(const ModuleMatch& match, torch::jit::Graph& graph) {
  Node* native = match.native;
  const double scale = 1.0 / std::sqrt(static_cast<double>(match.embed_dim / match.heads));
  // The weights as constants here (freezing may have left them in a block).
  auto constant = [&](NativeMhaInput input) {
    return graph.insertConstant(*torch::jit::toIValue(native->input(input)));
  };
  Node* attention = graph.create(symbol("srt::multi_head_attention"),
                                 {match.x, constant(kQkvWeight), constant(kQkvBias),
                                  graph.insertConstant(match.heads),
                                  graph.insertConstant(c10::IValue()), graph.insertConstant(scale),
                                  graph.insertConstant(false), graph.insertConstant(false)},
                                 1);
  graph.insertNode(attention);
  attention->output()->setType(c10::TensorType::get());
  attention->copyMetadata(native);
  Node* projection = graph.create(
      c10::aten::linear, {attention->output(), constant(kProjWeight), constant(kProjBias)}, 1);
  graph.insertNode(projection);
  projection->output()->setType(c10::TensorType::get());
  projection->copyMetadata(native);
  return projection->output();
}

Value* usedOutput(Node* node) {
  for (Value* output : node->outputs()) {
    if (!output->uses().empty()) {
      return output;
    }
  }
  return nullptr;
}

// x's rank proven 3: the fused form replaces the module's checks and both paths.
void rewrite(const ModuleMatch& match, torch::jit::Graph& graph) {
  Value* result = usedOutput(match.reader);
  torch::jit::WithInsertPoint guard(match.branches);
  Value* projected = insertFusedModule(match, graph);
  if (result != nullptr) {
    result->replaceAllUsesWith(projected);
  }
  // The checks and both paths: their raises (and the lists the checks append to) keep them from
  // dead-code elimination.
  match.reader->destroy();
  match.branches->destroy();
  if (match.fast_path != match.branches && unused(match.fast_path)) {
    Node* checks = match.fast_path->input(0)->node();
    match.fast_path->destroy();
    destroyUnusedProducers(checks);
  }
}

// x's rank unknown (no assert on it): `if x.dim() == 3: <fused> else: <the module as it was>`.
// The unbatched (2-D) input keeps the module's own code; a batched one, the common call, skips
// its checks and both paths.
void rewriteGuarded(const ModuleMatch& match, torch::jit::Graph& graph) {
  Value* result = usedOutput(match.reader); // matchModule saw it read
  std::vector<Node*> module_nodes;
  for (Node* node = match.fast_path;; node = node->next()) {
    module_nodes.push_back(node);
    if (node == match.reader) {
      break;
    }
  }
  torch::jit::WithInsertPoint guard(match.fast_path);
  Value* rank = graph.insert(c10::aten::dim, {match.x});
  Value* batched = graph.insert(c10::aten::eq, {rank, graph.insertConstant(3)});
  Node* versions = graph.insertNode(graph.create(c10::prim::If, {batched}, 1));
  versions->output()->setType(result->type());
  versions->copyMetadata(match.native);
  Block* fused = versions->addBlock();
  Block* original = versions->addBlock();
  {
    torch::jit::WithInsertPoint inside(fused);
    fused->registerOutput(insertFusedModule(match, graph));
  }
  result->replaceAllUsesWith(versions->output());
  for (Node* node : module_nodes) {
    node->moveBefore(original->return_node());
  }
  original->registerOutput(result);
}

bool isNativeMultiHeadAttention(Node* node) {
  return node->kind() == symbol("aten::_native_multi_head_attention");
}

} // namespace

bool fuseMultiheadAttentionModules(GraphPtr& graph) {
  const bool may_be_nested = mayCreateNestedTensors(graph->block());
  bool changed = false;
  for (bool found = true; found;) {
    found = false;
    for (Node* candidate : nodesWhere(graph->block(), isNativeMultiHeadAttention)) {
      if (std::optional<ModuleMatch> match = matchModule(candidate, may_be_nested)) {
        // (A guarded module's nodes are no longer top-level: it does not match again.)
        match->rank_guard ? rewriteGuarded(*match, *graph) : rewrite(*match, *graph);
        torch::jit::EliminateDeadCode(graph);
        found = changed = true;
        break;
      }
    }
  }
  return changed;
}

} // namespace srt::passes
