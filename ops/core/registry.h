// Maps an operator to the factories that can build a kernel for one of its nodes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/interned_strings.h>

#include "ops/core/kernel.h"
#include "ops/core/kernel_options.h"

namespace torch::jit {
class Node;
} // namespace torch::jit

namespace srt::ops {

// Returns a kernel function for this node, or std::nullopt to decline it (schema not matched,
// unsupported dtype, ...), in which case the next candidate is tried. Runs once per node when the
// module is built: the place for work like pre-packing a constant weight.
using KernelFactory =
    std::function<std::optional<KernelFunction>(const torch::jit::Node*, const KernelOptions&)>;

// The input a node's kernel may write its output over (Kernel::writes_over_input), if any.
using WritesOverInput = std::function<std::optional<size_t>(const torch::jit::Node*)>;

class Registry {
public:
  static Registry& global();

  void add(const char* qualified_op_name, KernelKind kind, KernelFactory factory,
           WritesOverInput writes_over_input = nullptr);

  // Best kernel for the node: out-variant, then native, then the JIT-operator fallback.
  // std::nullopt when nothing can run it.
  std::optional<Kernel> select(const torch::jit::Node* node, const KernelOptions& options) const;

  // True when some factory or the fallback could run this node kind.
  bool knows(const torch::jit::Node* node) const;

private:
  struct Entry {
    KernelKind kind;
    KernelFactory factory;
    WritesOverInput writes_over_input;
  };
  std::unordered_map<c10::Symbol, std::vector<Entry>> entries_;
};

// The JIT-operator kernel for a node, when the node has an operator. Defined in fallback.cpp.
std::optional<KernelFunction> makeFallbackKernel(const torch::jit::Node* node);

namespace detail {
struct Registrar {
  Registrar(const char* op, KernelKind kind, KernelFactory factory,
            WritesOverInput writes_over_input = nullptr) {
    Registry::global().add(op, kind, std::move(factory), std::move(writes_over_input));
  }
};
} // namespace detail

} // namespace srt::ops

#define SRT_CONCAT_IMPL(a, b) a##b
#define SRT_CONCAT(a, b) SRT_CONCAT_IMPL(a, b)

// Registers a kernel factory for an operator, in the file that implements the kernel:
//   SRT_REGISTER_KERNEL("aten::relu", kOutVariant,
//                       [](const Node* n, const KernelOptions&) -> std::optional<...> {...});
#define SRT_REGISTER_KERNEL(op_name, kind, factory)                                                \
  static const ::srt::ops::detail::Registrar SRT_CONCAT(srt_kernel_registrar_, __COUNTER__)(       \
      op_name, ::srt::ops::KernelKind::kind, factory)

// The same, for a kernel that may write its output over an input (Kernel::writes_over_input):
// writes_over_input(node) names that input for a node, or std::nullopt.
#define SRT_REGISTER_KERNEL_WRITING_OVER(op_name, kind, factory, writes_over_input)                \
  static const ::srt::ops::detail::Registrar SRT_CONCAT(srt_kernel_registrar_, __COUNTER__)(       \
      op_name, ::srt::ops::KernelKind::kind, factory, writes_over_input)
