// Module attributes a forward writes before it reads them become values of the run
// (attribute_writes.cpp says when that holds).
#pragma once

#include <optional>
#include <string>

#include <ATen/core/ivalue.h>

namespace torch::jit {
struct Graph;
struct Module;
struct Value;
} // namespace torch::jit

namespace srt::passes {

// On a frozen, flattened forward whose input 0 is still `self`: replaces every read of an
// attribute (of `self`, or of an object the forward creates) written earlier in the same run by
// the written value and drops the writes, and the created objects nothing reads any more.
// Returns whether anything changed.
bool forwardAttributeWrites(torch::jit::Graph& graph);

// Then, on the same graph: attributes of `self` the forward still writes (state across runs:
// numbers, strings, tensors, lists of them) read and written through a cell per attribute,
// holding a copy of `module`'s value to begin with.
// Returns whether anything changed.
bool attributesAsCells(torch::jit::Graph& graph, const torch::jit::Module& module);

// The attribute path a prim::GetAttr chain from `self` reads ("fc1.weight", "" for `self`
// itself), if `value` is one.
std::optional<std::string> attributePath(const torch::jit::Value* value,
                                         const torch::jit::Value* self);

// Where a walk along an attribute path ("block0.fc1.weight") from a module ended: the value of
// its last step, or the step it stopped at (absent, or not a submodule with steps after it).
struct AttributeLookup {
  std::optional<c10::IValue> value;
  std::string stopped_at;
  bool stopped_at_missing_step = false;
};
AttributeLookup lookUpAttribute(const torch::jit::Module& module, const std::string& path);

} // namespace srt::passes
