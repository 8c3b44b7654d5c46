// How errors name a node: its kind, its outputs, and the line of model source it came from.
#pragma once

#include <string>

namespace torch::jit {
class Node;
} // namespace torch::jit

namespace srt::passes {

// e.g. "aten::mm (%y = aten::mm(%x, %w), model.py:12: `return torch.mm(x, w)`)".
std::string describeNode(const torch::jit::Node* node);

// The node's source location as "file:line: `code`", or "no source location" when the graph
// carries none (graphs built by hand).
std::string describeSource(const torch::jit::Node* node);

} // namespace srt::passes
