// Module attributes a forward writes before it reads them become values of the run
// (attribute_writes.cpp says when that holds).
#pragma once

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace srt::passes {

// On a frozen, flattened forward whose input 0 is still `self`: replaces every read of an
// attribute written earlier in the same run by the written value and drops the writes. Returns
// whether anything changed.
bool forwardAttributeWrites(torch::jit::Graph& graph);

} // namespace srt::passes
