// Factories that accept a node by its operator's schema, for kernels that need nothing else
// from the node at build time.
#pragma once

#include <optional>
#include <utility>

#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/registry.h"

namespace srt::ops {

// Takes the node when it matches `schema`, a registered schema spelled exactly as registered
// (an unknown spelling throws when the module is built, so a typo cannot silently fall back).
inline KernelFactory whenMatches(const char* schema, KernelFunction fn) {
  return [schema, fn = std::move(fn)](const torch::jit::Node* node,
                                      const KernelOptions&) -> std::optional<KernelFunction> {
    if (!node->matches(schema)) {
      return std::nullopt;
    }
    return fn;
  };
}

// Takes every node of its operator: for operators without a schema (prim::ListConstruct ...) or
// whose overloads all share one kernel.
inline KernelFactory always(KernelFunction fn) {
  return [fn = std::move(fn)](const torch::jit::Node*,
                              const KernelOptions&) -> std::optional<KernelFunction> { return fn; };
}

} // namespace srt::ops
