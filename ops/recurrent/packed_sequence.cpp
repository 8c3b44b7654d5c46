// aten::_pad_packed_sequence (nn.utils.rnn.pad_packed_sequence, after an nn.LSTM/GRU/RNN ran on a
// packed sequence) as an out-variant kernel: the padded output and the lengths written into the
// node's reused tensors, as ATen computes them (native/PackedSequence.cpp): the output
// [T, B, *] filled with the padding value, then each run of steps with the same batch size
// copied in as one block; batch_first hands out the [B, T, *] transpose of that buffer, the
// layout ATen's result has too.
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>

#include "ops/core/out_variant.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

void padPackedSequence(ProcessedNode& p) {
  const at::Tensor& data = p.input(0).toTensor();
  const at::Tensor& batch_sizes_input = p.input(1).toTensor();
  const bool batch_first = p.input(2).toBool();
  const c10::Scalar padding_value = p.input(3).toScalar();
  const int64_t total_length = p.input(4).toInt();
  TORCH_CHECK(batch_sizes_input.scalar_type() == at::kLong && batch_sizes_input.dim() == 1 &&
                  batch_sizes_input.numel() > 0 && batch_sizes_input.is_cpu(),
              "_pad_packed_sequence: batch_sizes must be a non-empty 1-D int64 CPU tensor, got ",
              batch_sizes_input.scalar_type(), " of sizes ", batch_sizes_input.sizes());
  TORCH_CHECK(data.dim() >= 1, "_pad_packed_sequence: data must have a dimension of steps");
  const at::Tensor batch_sizes_tensor = batch_sizes_input.contiguous();
  const int64_t* batch_sizes = batch_sizes_tensor.data_ptr<int64_t>();
  const int64_t max_batch_size = batch_sizes[0];
  const int64_t real_steps = batch_sizes_tensor.size(0);
  int64_t steps = real_steps;
  if (total_length > 0) {
    TORCH_CHECK(total_length >= real_steps,
                "_pad_packed_sequence: expected total_length to be at least the length of the "
                "longest sequence (",
                real_steps, "), but got total_length=", total_length);
    steps = total_length;
  }
  std::vector<int64_t> sizes = {steps, max_batch_size};
  sizes.insert(sizes.end(), data.sizes().begin() + 1, data.sizes().end());

  at::Tensor& out = outputTensorLike(p, 0, data);
  at::native::resize_(out, sizes);
  out.fill_(padding_value);
  at::Tensor& lengths_out = outputTensorLike(p, 1, batch_sizes_tensor);
  at::native::resize_(lengths_out, {max_batch_size});
  int64_t* lengths = lengths_out.data_ptr<int64_t>() + max_batch_size - 1;

  std::vector<int64_t> block_sizes = sizes; // [steps in the run, its batch size, *]
  int64_t data_offset = 0;
  int64_t previous_batch = max_batch_size;
  int64_t run_start = 0;
  for (int64_t step = 0; step <= real_steps; ++step) {
    const int64_t batch = step != real_steps ? batch_sizes[step] : 0;
    TORCH_CHECK(batch >= 0 && batch <= previous_batch,
                "_pad_packed_sequence: batch_sizes must not increase, got ", batch, " after ",
                previous_batch);
    if (batch != previous_batch) {
      const int64_t rows = previous_batch * (step - run_start);
      TORCH_CHECK(data_offset + rows <= data.size(0), "_pad_packed_sequence: data has ",
                  data.size(0), " rows, fewer than batch_sizes add up to");
      block_sizes[0] = step - run_start;
      block_sizes[1] = previous_batch;
      out.slice(0, run_start, step)
          .slice(1, 0, previous_batch)
          .copy_(data.slice(0, data_offset, data_offset + rows).view(block_sizes));
      data_offset += rows;
      run_start = step;
    }
    for (int64_t ended = previous_batch - batch; ended > 0; --ended) {
      *lengths-- = step;
    }
    previous_batch = batch;
  }
  if (batch_first) {
    std::vector<int64_t> strides(out.strides().begin(), out.strides().end());
    std::swap(sizes[0], sizes[1]);
    std::swap(strides[0], strides[1]);
    out.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::_pad_packed_sequence", kOutVariant,
                    whenMatches("aten::_pad_packed_sequence(Tensor data, Tensor batch_sizes, bool "
                                "batch_first, Scalar padding_value, int total_length) -> (Tensor, "
                                "Tensor)",
                                padPackedSequence));

} // namespace srt::ops
