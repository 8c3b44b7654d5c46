// The optimization passes, one file each; passes/pipeline.cpp decides their order.
// Each rewrites `graph` in place and returns whether it changed anything; each leaves a graph
// that lints and computes the same results.
#pragma once

#include <memory>

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace srt::passes {

using GraphPtr = std::shared_ptr<torch::jit::Graph>;

// LibTorch's common-subexpression elimination: one node per distinct pure computation.
bool eliminateCommonSubexpressions(GraphPtr& graph);

// LibTorch's dead-code elimination: drops nodes whose results nobody uses.
bool eliminateDeadCode(GraphPtr& graph);

// Element-wise fusion: chains of element-wise ops whose intermediates nothing else uses become
// one srt::fused_elementwise node (passes/elementwise_fusion.cpp).
bool fuseElementwiseChains(GraphPtr& graph);

} // namespace srt::passes
