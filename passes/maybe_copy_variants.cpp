// maybe_copy_variants: ops that return their input (or a view of it) when they can and a copy
// when they must, split into "copy into planned memory if needed" + "pick the result".
//
//   y = aten::to(x, dtype, ...)        ->  c, copied = srt::to_maybe_copy(x, dtype, other, copy)
//                                          y = srt::select_tensor(x, c, copied)
//   y = aten::reshape(x, shape)        ->  c, copied = srt::reshape_maybe_copy(x, shape)
//                                          y = srt::select_reshape(x, shape, c, copied)
//
// Each pair computes exactly what the op did (the same tensor or view when it aliased, equal
// values when it copied), so writes through `y` behave as before; what changes is where the copy
// lives: `c` is an out-variant output the memory planner owns, where the replaced kernels copied
// every time (aten::to, ops/shapes/conversions.cpp) or into a fresh allocation (aten::reshape,
// ops/shapes/views.cpp). The rewrite only pays off when `c` can be planned, so results that may
// reach the caller are left alone (their copy must be the caller's anyway), as are nodes inside
// sub-blocks. A reshape is only split when its input may be non-contiguous (it comes from a
// strided view): a reshape of a freshly computed tensor is a view, and one native node is cheaper
// than two.
#include <algorithm>
#include <string>

#include <c10/core/MemoryFormat.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// memory_format None or torch.preserve_format: aten::to then aliases whenever nothing changes.
// The (dtype, other) inputs of srt::to_maybe_copy for an aten::to node (nullptr: None), or nullopt
// for overloads it does not cover (device moves, other memory formats).
std::optional<std::pair<Value*, Value*>> toTarget(Node* node) {
  Value* none = nullptr;
  if (node->matches("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
                    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")) {
    if (!preservesMemoryFormat(node->input(4))) {
      return std::nullopt;
    }
    return std::make_pair(node->input(1), none);
  }
  if (node->matches("aten::to.prim_dtype(Tensor(a) self, int? dtype=None, bool non_blocking=False, "
                    "bool copy=False) -> Tensor(b|a)")) {
    return std::make_pair(node->input(1), none);
  }
  if (node->matches("aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, "
                    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")) {
    if (!preservesMemoryFormat(node->input(4))) {
      return std::nullopt;
    }
    return std::make_pair(none, node->input(1));
  }
  return std::nullopt;
}

// Views whose result may be non-contiguous, so a reshape of it may have to copy.
bool mayBeStrided(const Value* value) {
  static const std::vector<c10::Symbol> strided_views = {
      symbol("aten::transpose"), symbol("aten::t"),         symbol("aten::permute"),
      symbol("aten::slice"),     symbol("aten::select"),    symbol("aten::narrow"),
      symbol("aten::expand"),    symbol("aten::expand_as"), symbol("prim::ListUnpack"),
      symbol("aten::diagonal"),  symbol("aten::unfold")};
  const c10::Symbol producer = value->node()->kind();
  if (std::find(strided_views.begin(), strided_views.end(), producer) != strided_views.end()) {
    return true;
  }
  // The fused chunk/split/unbind nodes of list_unpack_fusion (srt::chunk_unpack_3, ...).
  const std::string name = producer.toQualString();
  return name.rfind("srt::", 0) == 0 && name.find("_unpack_") != std::string::npos;
}

// Replaces `node`'s result with select(inputs..., copy, copied), where copy and copied come from a
// new `maybe_copy_kind` node on `maybe_copy_inputs`.
void split(Node* node, c10::Symbol maybe_copy_kind, at::ArrayRef<Value*> maybe_copy_inputs,
           c10::Symbol select_kind, std::vector<Value*> select_inputs) {
  torch::jit::Graph& graph = *node->owningGraph();
  Node* maybe_copy = graph.create(maybe_copy_kind, maybe_copy_inputs, 2);
  maybe_copy->insertBefore(node);
  maybe_copy->output(0)->setType(node->output()->type());
  maybe_copy->output(1)->setType(c10::BoolType::get());
  select_inputs.push_back(maybe_copy->output(0));
  select_inputs.push_back(maybe_copy->output(1));
  Node* select = graph.create(select_kind, select_inputs, 1);
  select->insertBefore(node);
  select->output()->copyMetadata(node->output());
  node->output()->replaceAllUsesWith(select->output());
  node->destroy();
}

} // namespace

bool useMaybeCopyVariants(GraphPtr& graph) {
  const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
  std::vector<std::pair<Node*, std::pair<Value*, Value*>>> tos;
  std::vector<Node*> reshapes;
  for (Node* node : graph->nodes()) {
    if (node->outputs().size() != 1 || mayReachGraphOutput(alias_db, *graph, node->output())) {
      continue;
    }
    if (node->kind() == c10::aten::to) {
      auto target = toTarget(node);
      // The copy is laid out in the input's suggested memory format, where aten::to keeps the
      // input's exact strides: only readers of values may take it.
      if (target && !layoutMayBeObserved(alias_db, node->output())) {
        tos.emplace_back(node, *target);
      }
    } else if (node->matches("aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)") &&
               mayBeStrided(node->input(0))) {
      reshapes.push_back(node);
    }
  }
  bool changed = false;
  for (auto& [node, target] : tos) {
    torch::jit::WithInsertPoint insert_before(node);
    Value* none = nullptr;
    if (target.first == nullptr || target.second == nullptr) {
      none = graph->insertConstant(c10::IValue());
    }
    split(node, symbol("srt::to_maybe_copy"),
          {node->input(0), target.first ? target.first : none, target.second ? target.second : none,
           node->input(3)},
          symbol("srt::select_tensor"), {node->input(0)});
    changed = true;
  }
  for (Node* node : reshapes) {
    split(node, symbol("srt::reshape_maybe_copy"), {node->input(0), node->input(1)},
          symbol("srt::select_reshape"), {node->input(0), node->input(1)});
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
