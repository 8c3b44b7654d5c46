// The time loop of a recurrent network on packed weights (ops/recurrent/recurrent_weights.h):
// per layer one GEMM projects every step's input for both directions, then per direction and
// step a product of the previous hidden state with the hidden weight and the fused gate loop.
// Everything is written into memory the caller provides: the outputs and one scratch block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "ops/core/worker_pool.h"
#include "ops/recurrent/recurrent_weights.h"

namespace srt::ops::recurrent {

// One call's operands, all contiguous float32. Rows of input and output are ordered as the
// tensors are: [steps, batch] or, batch_first, [batch, steps]; or, for a packed sequence
// (batch_sizes given), step after step, each step's batch_sizes[t] rows (a non-increasing count,
// batch_sizes[0] == batch: the sequences sorted longest first).
struct RecurrentCall {
  const float* input = nullptr; // rows of the first layer's input_size
  int64_t steps = 0;
  int64_t batch = 0;
  bool batch_first = false;
  const int64_t* batch_sizes = nullptr; // [steps] for a packed sequence
  // [layers * directions, batch, stateSize()] (hidden, or an LSTM's proj_size), nullptr: zeros
  const float* h0 = nullptr;
  const float* c0 = nullptr; // LSTM only, [layers * directions, batch, hidden], likewise
  float* output = nullptr;   // rows of directions * stateSize(): the last layer's hidden states
  // [layers * directions, batch, stateSize()], or nullptr: not wanted. A packed sequence's h_n
  // (and c_n) holds each sequence's state after its own last step.
  float* h_n = nullptr;
  float* c_n = nullptr; // LSTM: [layers * directions, batch, hidden], required
  // The runtime's own workers to split the directions over (ProcessedNode::workers), or nullptr:
  // OpenMP's threads.
  WorkerPool* workers = nullptr;
};

// Scratch bytes runRecurrent needs for `steps` x `batch` (an upper bound for a packed sequence).
size_t recurrentScratchBytes(const RecurrentWeights& weights, int64_t steps, int64_t batch);

// Computes layer `layer`'s input projections, out[rows, directions * gates * hidden] =
// x[rows, input_size] @ w_ih^T, and returns true; or returns false to leave them to OpenBLAS.
using InputProjection =
    std::function<bool(int64_t layer, const float* x, int64_t rows, float* out)>;

// Runs the network. `scratch`: recurrentScratchBytes(...) bytes, 64-byte aligned. Input
// projections go to `project` first, then OpenBLAS with the caller's ATen thread count.
void runRecurrent(const RecurrentWeights& weights, const RecurrentCall& call, void* scratch,
                  const InputProjection& project = nullptr);

} // namespace srt::ops::recurrent
