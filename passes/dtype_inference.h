// The dtype a tensor value has on every run, when the graph alone decides it. Rewrites that would
// change a result's dtype if it were other than expected ask this first (an in-place op made
// functional, a to() removed as a no-op).
#pragma once

#include <optional>

#include <c10/core/ScalarType.h>

namespace torch::jit {
struct Value;
} // namespace torch::jit

namespace srt::passes {

// Known from: constants; graph inputs that declare a dtype (the runtime checks it on every call);
// to(dtype) and type_as; ops whose weight fixes the dtype (conv, linear, embedding: ATen refuses
// an input of another dtype); and ops that keep their floating-point inputs' common dtype
// (element-wise arithmetic and activations, normalization, pooling, views, cat, in-place ops, an
// If whose branches agree). std::nullopt when it depends on what the caller passes.
std::optional<c10::ScalarType> knownDtype(const torch::jit::Value* value);

} // namespace srt::passes
