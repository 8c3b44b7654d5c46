// The operators of ops/shapes/list_unpack.cpp, named for passes/list_unpack_fusion.cpp.
#pragma once

#include <cstddef>
#include <string>

namespace srt::ops {

// Fused nodes exist for lists of 1 to kMaxUnpackPieces pieces; longer ones stay unfused.
constexpr size_t kMaxUnpackPieces = 16;

// "srt::<op>_unpack_<pieces>" for op "chunk", "split", "split_with_sizes" or "unbind".
std::string unpackOpName(const std::string& op, size_t pieces);

} // namespace srt::ops
