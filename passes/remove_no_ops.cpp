// remove_no_ops: nodes whose result is provably their input, replaced by the input.
//
//   aten::detach(x)                        inference only: no autograd graph to cut
//   aten::contiguous(x)                    x known contiguous: its type says so, or it comes from
//                                          an op whose result always is (srt::*_copy, contiguous)
//   aten::to(x, dtype, copy=False)         x's dtype known to be dtype already
//   aten::reshape / view(x, x.size())      the same shape: a view with x's own sizes and strides
//   aten::reshape_as / view_as(x, x)
//   aten::flatten(x, d, d)                 x's rank known (flatten of a 0-dim tensor is 1-dim)
//
// The JIT returns x itself, or a view equal to it, for each; our aten::to and contiguous kernels
// copy, so removing those also saves a copy. Two things could still tell the difference, and rule
// a removal out: the result reaching the caller (who would get x itself, possibly their own
// input or one of the module's weights), and, for the view-returning ops, an in-place write to
// the result (a metadata change such as t_() or resize_() would now change x). Nodes in sub-blocks
// are left alone. Eval-mode dropout is already gone (passes/prepare.cpp).
#include <algorithm>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/dtype_inference.h"
#include "passes/graph_passes.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

c10::TensorTypePtr tensorType(const Value* value) {
  return value->type()->cast<c10::TensorType>();
}

bool isConstant(const Value* value, const c10::IValue& expected) {
  auto constant = torch::jit::toIValue(value);
  return constant.has_value() && *constant == expected;
}

bool isContiguousFormat(const Value* memory_format) {
  auto constant = torch::jit::toIValue(memory_format);
  return constant.has_value() && constant->isInt() &&
         constant->toInt() == static_cast<int64_t>(at::MemoryFormat::Contiguous);
}

bool knownContiguous(const Value* value) {
  static const std::vector<c10::Symbol> contiguous_producers = {
      symbol("srt::permute_copy"), symbol("srt::reshape_copy"), symbol("srt::flatten_copy")};
  const Node* producer = value->node();
  if (std::find(contiguous_producers.begin(), contiguous_producers.end(), producer->kind()) !=
      contiguous_producers.end()) {
    return true;
  }
  if (producer->kind() == c10::aten::contiguous && isContiguousFormat(producer->input(1))) {
    return true;
  }
  auto type = tensorType(value);
  if (!type) {
    return false;
  }
  auto sizes = type->sizes().concrete_sizes();
  auto strides = type->strides().concrete_sizes();
  return sizes && strides && *strides == c10::TensorType::contiguousStridesOf(*sizes);
}

// The constant dtype an aten::to.dtype / to.prim_dtype node converts to.
std::optional<at::ScalarType> constantToDtype(const Node* node) {
  if (node->kind() != c10::aten::to || node->inputs().size() < 2) {
    return std::nullopt;
  }
  auto dtype = torch::jit::toIValue(node->input(1));
  if (!dtype.has_value() || !dtype->isInt()) {
    return std::nullopt;
  }
  return static_cast<at::ScalarType>(dtype->toInt());
}

bool isToDtype(const Node* node) {
  return node->matches("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
                       "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)") &&
         preservesMemoryFormat(node->input(4));
}

bool isToPrimDtype(const Node* node) {
  return node->matches("aten::to.prim_dtype(Tensor(a) self, int? dtype=None, bool "
                       "non_blocking=False, bool copy=False) -> Tensor(b|a)");
}

bool toKeepsDtype(const Node* node) {
  if ((!isToDtype(node) && !isToPrimDtype(node)) || !isConstant(node->input(3), false)) {
    return false;
  }
  if (isConstant(node->input(1), c10::IValue())) {
    return true; // to(None): nothing to convert
  }
  auto target = constantToDtype(node);
  auto current = knownDtype(node->input(0));
  return target && current && *target == *current;
}

// reshape/view whose shape is `x.size()` of their own input.
bool reshapesToOwnSize(const Node* node) {
  const Node* shape = node->input(1)->node();
  return shape->matches("aten::size(Tensor self) -> int[]") && shape->input(0) == node->input(0);
}

bool flattensNothing(const Node* node) {
  auto type = tensorType(node->input(0));
  auto start = torch::jit::constant_as<int64_t>(node->input(1));
  auto end = torch::jit::constant_as<int64_t>(node->input(2));
  if (!type || !type->dim() || *type->dim() == 0 || !start || !end) {
    return false;
  }
  const auto rank = static_cast<int64_t>(*type->dim());
  if (*start < -rank || *start >= rank || *end < -rank || *end >= rank) {
    return false; // flatten raises; keep it
  }
  return (*start + rank) % rank == (*end + rank) % rank;
}

enum class NoOp { kNone, kReturnsSelf, kReturnsView };

NoOp classify(const Node* node) {
  if (node->matches("aten::detach(Tensor(a) self) -> Tensor(a)")) {
    return NoOp::kReturnsView;
  }
  if (node->matches("aten::contiguous(Tensor(a) self, *, MemoryFormat "
                    "memory_format=contiguous_format) -> Tensor(a)")) {
    return isContiguousFormat(node->input(1)) && knownContiguous(node->input(0))
               ? NoOp::kReturnsSelf
               : NoOp::kNone;
  }
  if (node->kind() == c10::aten::to) {
    return toKeepsDtype(node) ? NoOp::kReturnsSelf : NoOp::kNone;
  }
  if (node->matches("aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)") ||
      node->matches("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)")) {
    return reshapesToOwnSize(node) ? NoOp::kReturnsView : NoOp::kNone;
  }
  if (node->matches("aten::reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)") ||
      node->matches("aten::view_as(Tensor(a) self, Tensor other) -> Tensor(a)")) {
    return node->input(0) == node->input(1) ? NoOp::kReturnsView : NoOp::kNone;
  }
  if (node->matches("aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) "
                    "-> Tensor(a)")) {
    return flattensNothing(node) ? NoOp::kReturnsView : NoOp::kNone;
  }
  return NoOp::kNone;
}

} // namespace

bool removeNoOps(GraphPtr& graph) {
  bool changed = false;
  // One removal can make the next provable (contiguous(contiguous(x))); AliasDb is rebuilt after
  // each round because removals change what aliases what.
  for (bool removed = true; removed;) {
    removed = false;
    const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
    std::vector<Node*> no_ops;
    for (Node* node : graph->nodes()) {
      // A proof may rest on the input's producer (contiguous after contiguous): if that one goes
      // this round, decide again in the next.
      const NoOp kind = classify(node);
      if (kind == NoOp::kNone ||
          std::find(no_ops.begin(), no_ops.end(), node->input(0)->node()) != no_ops.end() ||
          mayReachGraphOutput(alias_db, *graph, node->output())) {
        continue;
      }
      if (kind == NoOp::kReturnsView && alias_db.hasWriters(node->output())) {
        continue;
      }
      no_ops.push_back(node);
    }
    for (Node* node : no_ops) {
      node->output()->replaceAllUsesWith(node->input(0));
      node->destroy();
      removed = true;
    }
    changed = changed || removed;
  }
  return changed;
}

} // namespace srt::passes
