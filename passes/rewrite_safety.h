// Questions the structural passes (copy_variants, maybe_copy_variants, remove_no_ops) ask before
// they change what aliases what: may a value reach the caller, may anyone see its strides.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/interned_strings.h>

namespace torch::jit {
class AliasDb;
struct Block;
struct Graph;
struct Node;
struct Value;
} // namespace torch::jit

namespace srt::passes {

// True when `value`, or anything that may share its memory, may be returned to the caller.
bool mayReachGraphOutput(const torch::jit::AliasDb& alias_db, torch::jit::Graph& graph,
                         torch::jit::Value* value);

// True when some reader may depend on `value`'s strides rather than only its elements: stride /
// is_contiguous queries, as_strided, view (which fails on strides it cannot view), followed
// through every view of `value` (anything passed to an If/Loop or returned counts as observed). A
// copy with other strides is then not interchangeable with it.
bool layoutMayBeObserved(const torch::jit::AliasDb& alias_db, torch::jit::Value* value);

// True for nodes of the graph's own block (not inside an If or Loop): the memory planner owns
// only those, and AliasDb does not relate a sub-block's results to what the If/Loop returns.
bool isTopLevel(const torch::jit::Node* node);

// True when a `memory_format` argument is a constant None or torch.preserve_format: the op then
// keeps its input's layout (what a rewrite into a same-layout copy or a no-op relies on).
bool preservesMemoryFormat(const torch::jit::Value* memory_format);

// Whether some node of `block` (sub-blocks included) may produce a nested tensor
// (_nested_tensor_from_mask, nested_tensor, _nested_from_padded, ...). Callers' nested tensors are
// refused at the inputs, so without such a node every tensor of the graph is dense.
bool mayCreateNestedTensors(const torch::jit::Block* block);

// The value of a constant int list (prim::Constant or a ListConstruct of constant ints).
std::optional<std::vector<int64_t>> constantIntList(const torch::jit::Value* value);

// The interned symbol of a qualified operator name ("aten::reshape").
inline c10::Symbol symbol(const char* name) {
  return c10::Symbol::fromQualString(name);
}

} // namespace srt::passes
