// What a node runs: a kernel function and the kind of kernel it is.
#pragma once

#include <functional>
#include <string>

namespace srt::ops {

class ProcessedNode;

// In order of preference (ARCHITECTURE.md, "Kernels").
enum class KernelKind {
  // Writes into the node's existing output tensor, resizing only when the shape changed.
  kOutVariant,
  // Views, list/tuple plumbing, control flow: no allocation, no dispatcher.
  kNative,
  // The JIT operator, called through a stack. Counted and reported.
  kFallback,
};

const char* toString(KernelKind kind);

// A kernel is created once per node when the StaticModule is built and shared by every runtime,
// so it must not keep per-run state: everything mutable lives in the ProcessedNode.
using KernelFunction = std::function<void(ProcessedNode&)>;

struct Kernel {
  KernelKind kind;
  KernelFunction run;
};

} // namespace srt::ops
