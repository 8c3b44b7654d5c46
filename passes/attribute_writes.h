// Module attributes a forward writes before it reads them become values of the run
// (attribute_writes.cpp says when that holds).
#pragma once

#include <optional>
#include <string>

namespace torch::jit {
struct Graph;
struct Value;
} // namespace torch::jit

namespace srt::passes {

// On a frozen, flattened forward whose input 0 is still `self`: replaces every read of an
// attribute written earlier in the same run by the written value and drops the writes. Returns
// whether anything changed.
bool forwardAttributeWrites(torch::jit::Graph& graph);

// The attribute path a prim::GetAttr chain from `self` reads ("fc1.weight", "" for `self`
// itself), if `value` is one.
std::optional<std::string> attributePath(const torch::jit::Value* value,
                                         const torch::jit::Value* self);

} // namespace srt::passes
