// The process's oneDNN CPU engine, shared by every oneDNN kernel (GEMMs, convolutions).
#pragma once

#include <cstddef>

#include <oneapi/dnnl/dnnl.hpp>

namespace srt::ops {

// Engines are thread-safe (any thread may create primitives and memory on it); streams are not,
// so each node state has its own.
const dnnl::engine& oneDnnEngine();

// `bytes` rounded up to a 64-byte multiple: kernels that place several oneDNN buffers (a
// reordered activation, a scratchpad) in their node's scratch block start each at such an offset.
inline size_t alignScratchOffset(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

} // namespace srt::ops
