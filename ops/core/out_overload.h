// The out-overload kernel: the tier between the registered kernels and the JIT-operator fallback
// (out_overload.cpp says when it applies).
#pragma once

#include <optional>

#include "ops/core/kernel.h"

namespace torch::jit {
class Node;
} // namespace torch::jit

namespace srt::ops {

// An out-variant kernel running the node's ATen operator through its `out=` overload, or
// std::nullopt when the operator has none (or is not a functional tensor op).
std::optional<KernelFunction> makeOutOverloadKernel(const torch::jit::Node* node);

} // namespace srt::ops
