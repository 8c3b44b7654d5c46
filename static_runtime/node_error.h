// The error a failing node raises: the kernel's own message, prefixed with the node and its source.
#pragma once

#include <string>

#include <c10/util/Exception.h>

namespace torch::jit {
class Node;
} // namespace torch::jit

namespace srt {

class NodeError : public c10::Error {
public:
  NodeError(const torch::jit::Node* node, const std::string& kernel_message);
};

// Rethrows the exception in flight as a NodeError naming `node`; a NodeError raised by a nested
// block already names its node and passes through unchanged. Call only from a catch block.
[[noreturn]] void rethrowWithNode(const torch::jit::Node* node);

} // namespace srt
