// When each intermediate tensor is live, in steps of the top-level node list.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace torch::jit {
class AliasDb;
struct Graph;
struct Value;
} // namespace torch::jit

namespace srt::memory {

struct ValueLifetime {
  const torch::jit::Value* value;
  // Steps are positions in the graph's top-level node list, prim::Constant nodes excluded; a use
  // inside a sub-block counts at the step of the prim::If / prim::Loop that holds it.
  size_t first;
  size_t last;
};

// Lifetimes of `values` (each produced by a top-level node): from the producing step to the last
// step that uses the value or anything that may hold it (a view keeps its base alive; a list,
// tuple or dict keeps what was stored into it alive, however it was stored, and so does every
// container derived from it and every element read back out).
std::vector<ValueLifetime> computeLifetimes(const torch::jit::Graph& graph,
                                            const std::vector<const torch::jit::Value*>& values,
                                            const torch::jit::AliasDb& alias_db);

} // namespace srt::memory
