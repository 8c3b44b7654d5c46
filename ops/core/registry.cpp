#include "ops/core/registry.h"

#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_overload.h"

namespace srt::ops {

const char* toString(KernelKind kind) {
  switch (kind) {
  case KernelKind::kOutVariant:
    return "out_variant";
  case KernelKind::kNative:
    return "native";
  case KernelKind::kFallback:
    return "fallback";
  }
  return "unknown";
}

Registry& Registry::global() {
  static Registry registry;
  return registry;
}

void Registry::add(const char* qualified_op_name, KernelKind kind, KernelFactory factory,
                   WritesOverInput writes_over_input) {
  TORCH_CHECK(kind != KernelKind::kFallback,
              "the JIT-operator fallback is implicit; do not register it for ", qualified_op_name);
  entries_[c10::Symbol::fromQualString(qualified_op_name)].push_back(
      {kind, std::move(factory), std::move(writes_over_input)});
}

const char* toString(GemmBackend backend) {
  switch (backend) {
  case GemmBackend::kOneDnn:
    return "onednn";
  case GemmBackend::kOpenBlas:
    return "openblas";
  case GemmBackend::kAten:
    return "aten";
  }
  return "unknown";
}

std::optional<Kernel> Registry::select(const torch::jit::Node* node,
                                       const KernelOptions& options) const {
  auto it = entries_.find(node->kind());
  if (it != entries_.end()) {
    for (KernelKind wanted : {KernelKind::kOutVariant, KernelKind::kNative}) {
      if (wanted == KernelKind::kOutVariant && !options.enable_out_variant) {
        continue;
      }
      for (const Entry& entry : it->second) {
        if (entry.kind != wanted) {
          continue;
        }
        if (auto fn = entry.factory(node, options)) {
          return Kernel{entry.kind, std::move(*fn),
                        entry.writes_over_input ? entry.writes_over_input(node) : std::nullopt};
        }
      }
    }
  }
  if (options.enable_out_variant) {
    if (auto fn = makeOutOverloadKernel(node)) {
      return Kernel{KernelKind::kOutVariant, std::move(*fn)};
    }
  }
  if (auto fn = makeFallbackKernel(node)) {
    return Kernel{KernelKind::kFallback, std::move(*fn)};
  }
  return std::nullopt;
}

bool Registry::knows(const torch::jit::Node* node) const {
  return entries_.count(node->kind()) > 0 || node->maybeOperator() != nullptr;
}

} // namespace srt::ops
