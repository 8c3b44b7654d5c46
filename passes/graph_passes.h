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

// chunk/split/unbind whose list is only unpacked -> one node with one output per piece.
bool fuseListUnpack(GraphPtr& graph);

// cat/stack of a list built only for them -> srt::variadic_cat/stack on the tensors themselves.
bool useVariadicCatStack(GraphPtr& graph);

// Views a reader would copy anyway (permute before reshape/matmul, reshape of a transpose)
// -> srt::permute_copy / reshape_copy / flatten_copy into planned memory.
bool useCopyVariants(GraphPtr& graph);

// detach, contiguous of a contiguous tensor, to() of the same dtype, identity reshapes -> input.
bool removeNoOps(GraphPtr& graph);

// aten::to and strided reshapes -> copy into planned memory only when they must copy.
bool useMaybeCopyVariants(GraphPtr& graph);

} // namespace srt::passes
