// The process's oneDNN CPU engine, shared by every oneDNN kernel (GEMMs, convolutions).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace srt::ops {

// Engines are thread-safe (any thread may create primitives and memory on it); streams are not,
// so each node state has its own.
const dnnl::engine& oneDnnEngine();

} // namespace srt::ops
