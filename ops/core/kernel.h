// What a node runs: a kernel function and the kind of kernel it is.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
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
  // An input whose storage the output may be given when nothing reads that input after the node
  // (the memory plan then puts both in one slot): the kernel reads each element of it before it
  // writes the output's same element, as an epilogue adding a residual does, and takes it as it
  // comes, in place or not. std::nullopt: none.
  std::optional<size_t> writes_over_input = std::nullopt;
};

} // namespace srt::ops
