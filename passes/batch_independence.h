// Whether a prepared graph computes every item of its batch on its own: what lets a runtime with
// several intra-op threads run slices of a batch on one thread each (static_runtime/batch_split.h)
// instead of splitting every node over all of them, which for small nodes costs more in
// synchronization than it gains (a batch-8 small CNN on 2 cores: 499 us as one 2-thread run,
// ~400 us as two concurrent 1-thread runs of 4 images).
//
// "On its own" is proven node by node, never guessed from a trial run: a value either does not
// depend on the batch at all (constants, weights, numbers computed from them), or is a tensor whose
// dim 0 is the batch and whose item i depends only on item i of the inputs (convolutions, pooling,
// normalization in eval mode, element-wise ops, reductions and reshapes that keep dim 0, ...), or
// is the batch size itself (x.size(0), the first element of x.size()) on its way into a reshape
// that keeps it first. Anything else that reads the batch (an unknown op, a reduction over dim 0,
// x * x.size(0), training-mode batch_norm, a loop) makes the graph not independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace srt::passes {

struct BatchIndependence {
  // True when the graph run on dim-0 slices of its batched inputs returns the same slices of what
  // it returns on the whole batch (every output a batched tensor, or a tuple of them and None).
  bool independent = false;
  // Graph inputs that carry the batch along dim 0: every tensor argument.
  std::vector<size_t> batched_inputs;
  // The rank each of batched_inputs must have for `independent` to hold (-1: any): conv2d reads
  // a rank-3 tensor as one unbatched image, whose dim 0 is its channels.
  std::vector<int64_t> required_ranks;
  // When not independent: the node or input that is not, and why.
  std::string reason;
};

// `num_arguments`: the graph inputs that are forward's arguments; those after them (unbound
// constants) are read as batch-independent.
BatchIndependence analyzeBatchIndependence(const torch::jit::Graph& graph, size_t num_arguments);

} // namespace srt::passes
