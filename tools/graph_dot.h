// The optimized graph as a Graphviz DOT picture (`srt inspect --dot FILE`).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/ivalue.h>

namespace torch::jit {
struct Graph;
struct Value;
} // namespace torch::jit

namespace srt::cli {

// What each tensor value of a graph held in one run: "1x16x64" (dtype appended unless float32),
// keyed by the graph's own values. Values the run did not reach (an untaken branch) are absent.
using ValueShapes = std::unordered_map<const torch::jit::Value*, std::string>;

// Runs `graph` once in the TorchScript interpreter on `inputs` (fused srt:: ops run their
// reference implementations) and records the shape of every tensor that flows along it: the
// graph is instrumented on a copy, so `graph` is unchanged. Throws c10::Error when the run fails.
ValueShapes recordShapes(const torch::jit::Graph& graph, std::vector<c10::IValue> inputs);

// One box per node (prim::Constant left out; weights would bury the picture), an ellipse per
// graph input and output, an edge per data dependency labelled with its shape where `shapes`
// knows it. Fused srt:: nodes are filled orange with a double border; If / Loop bodies are
// clusters. `title` becomes the graph's label.
std::string graphToDot(const torch::jit::Graph& graph, const ValueShapes& shapes,
                       const std::string& title);

} // namespace srt::cli
