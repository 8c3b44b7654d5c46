// One buffer of a runtime's memory plan, as data (StaticRuntime::memoryPlanEntries), for plots
// and tools; StaticRuntime::memoryPlan() prints the same plan as text.
#pragma once

#include <cstddef>
#include <string>

namespace srt {

struct MemoryPlanEntry {
  enum class Kind { kTensor, kScratch };

  // A tensor: its value's debug name ("x.3"); tensors that share a slot (an output written over
  // the residual it adds), theirs in the order they hold it ("x.3 > x.5"). Scratch: the node that
  // asks for it
  // ("aten::matmul -> %x.3", with " (in a sub-block)" for nodes in an If / Loop body).
  std::string name;
  Kind kind = Kind::kTensor;
  // Top-level node indices, inclusive: the buffer is live from the start of first_node to the end
  // of last_node (scratch: first_node == last_node, the node, or the If / Loop holding it).
  size_t first_node = 0;
  size_t last_node = 0;
  // Where it sits in the arena (64-byte aligned) and the largest size it was seen to need.
  size_t offset = 0;
  size_t bytes = 0;
};

inline const char* toString(MemoryPlanEntry::Kind kind) {
  return kind == MemoryPlanEntry::Kind::kTensor ? "tensor" : "scratch";
}

} // namespace srt
