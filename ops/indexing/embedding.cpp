// embedding and embedding_bag, writing into last run's output.
//
// LibTorch 1.13 does not export ATen's embedding_bag out path
// (at::native::_embedding_bag_cpu_impl_out is declared in ATen/native/EmbeddingBag.h but hidden),
// and at::cpu::_embedding_bag_forward_only allocates its four results every call. So the common
// case (float/double weights, int32/int64 indices and offsets of one dtype, no per-sample weights,
// only the first result used) is a loop here that reduces rows in ATen's order (sequential, then
// divide for mean), giving ATen's values. Anything else runs at::cpu::_embedding_bag_forward_only
// and copies its result: so do per-sample weights, which nn.EmbeddingBag takes as an optional
// argument and so reach the graph as a `Tensor?` decided only at run time.
#include <ATen/CPUFunctions.h>
#include <ATen/NativeFunctions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

enum Mode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

struct BagArguments {
  const at::Tensor& weight;
  const at::Tensor& indices;
  const at::Tensor& offsets;
  int64_t mode;
  bool include_last_offset;
  int64_t padding_idx; // -1: none
};

template <typename scalar_t, typename index_t>
void reduceBags(const BagArguments& args, at::Tensor& out) {
  const at::Tensor weight = args.weight.contiguous();
  const at::Tensor indices = args.indices.contiguous();
  const at::Tensor offsets = args.offsets.contiguous();
  const int64_t num_weights = weight.size(0);
  const int64_t dim = weight.size(1);
  const int64_t num_indices = indices.numel();
  const int64_t num_offsets = offsets.numel();
  const int64_t num_bags = args.include_last_offset ? num_offsets - 1 : num_offsets;
  const index_t* index_data = indices.data_ptr<index_t>();
  const index_t* offset_data = offsets.data_ptr<index_t>();
  const scalar_t* weight_data = weight.data_ptr<scalar_t>();
  TORCH_CHECK(num_offsets == 0 || offset_data[0] == 0,
              "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
              "has to start from position 0. However, got ",
              offset_data[0]);

  at::native::resize_(out, {num_bags, dim}, c10::nullopt);
  scalar_t* out_data = out.data_ptr<scalar_t>();
  for (int64_t bag = 0; bag < num_bags; ++bag) {
    const int64_t begin = offset_data[bag];
    const int64_t end =
        bag + 1 < num_offsets ? static_cast<int64_t>(offset_data[bag + 1]) : num_indices;
    TORCH_CHECK(begin <= end && end <= num_indices, "embedding_bag: offsets of bag ", bag, " ([",
                begin, ", ", end, ")) are not within the ", num_indices, " indices");
    scalar_t* row = out_data + bag * dim;
    std::fill(row, row + dim, scalar_t(0));
    int64_t count = 0;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t index = index_data[i];
      TORCH_CHECK(index >= 0 && index < num_weights, "embedding_bag: index ", index,
                  " is out of range for a weight of ", num_weights, " rows");
      if (index == args.padding_idx) {
        continue;
      }
      const scalar_t* source = weight_data + index * dim;
      if (args.mode == kMax) {
        for (int64_t d = 0; d < dim; ++d) {
          if (count == 0 || source[d] > row[d]) {
            row[d] = source[d];
          }
        }
      } else {
        for (int64_t d = 0; d < dim; ++d) {
          row[d] += source[d];
        }
      }
      ++count;
    }
    if (args.mode == kMean && count > 0) {
      for (int64_t d = 0; d < dim; ++d) {
        row[d] /= static_cast<scalar_t>(count);
      }
    }
  }
}

void embeddingBag(ProcessedNode& p, int64_t padding_idx) {
  BagArguments args{p.input(0).toTensor(), p.input(1).toTensor(), p.input(2).toTensor(),
                    p.input(4).toInt(),    p.input(7).toBool(),   padding_idx};
  const c10::optional<at::Tensor> per_sample_weights = p.input(6).toOptional<at::Tensor>();
  at::Tensor& out = outputTensorLike(p, 0, args.weight);
  const at::ScalarType index_type = args.indices.scalar_type();
  const bool simple =
      args.weight.dim() == 2 && args.indices.dim() == 1 && args.offsets.dim() == 1 &&
      args.offsets.scalar_type() == index_type &&
      (index_type == at::kLong || index_type == at::kInt) &&
      (args.weight.scalar_type() == at::kFloat || args.weight.scalar_type() == at::kDouble) &&
      args.mode >= kSum && args.mode <= kMax && !per_sample_weights &&
      (!args.include_last_offset || args.offsets.numel() >= 1);
  if (!simple) {
    const InferenceDispatch below_autograd;
    auto result = at::cpu::_embedding_bag_forward_only(
        args.weight, args.indices, args.offsets, p.input(3).toBool(), args.mode,
        p.input(5).toBool(), per_sample_weights, args.include_last_offset, padding_idx);
    at::native::resize_(out, std::get<0>(result).sizes(), c10::nullopt);
    at::native::copy_(out, std::get<0>(result), false);
    return;
  }
  AT_DISPATCH_FLOATING_TYPES(args.weight.scalar_type(), "embedding_bag", [&] {
    if (index_type == at::kLong) {
      reduceBags<scalar_t, int64_t>(args, out);
    } else {
      reduceBags<scalar_t, int32_t>(args, out);
    }
  });
}

// Only the bag sums are produced: offset2bag, bag_size and max_indices must be unused.
bool onlyFirstResultUsed(const Node* node) {
  for (size_t i = 1; i < node->outputs().size(); ++i) {
    if (node->output(i)->hasUses()) {
      return false;
    }
  }
  return true;
}

std::optional<KernelFunction> embeddingBagFactory(const Node* node, const KernelOptions&) {
  if (!onlyFirstResultUsed(node)) {
    return std::nullopt;
  }
  if (node->matches("aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool "
                    "scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? "
                    "per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, "
                    "Tensor, Tensor)")) {
    return KernelFunction([](ProcessedNode& p) { embeddingBag(p, -1); });
  }
  if (node->matches(
          "aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, "
          "bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, "
          "bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)")) {
    return KernelFunction([](ProcessedNode& p) {
      const c10::IValue& padding = p.input(8);
      int64_t padding_idx = padding.isNone() ? -1 : padding.toInt();
      // An explicit index wraps like a dimension (-1 is the last row); None pads nothing.
      if (padding_idx < 0 && !padding.isNone()) {
        padding_idx += p.input(0).toTensor().size(0);
      }
      embeddingBag(p, padding_idx);
    });
  }
  return std::nullopt;
}

// embedding(weight, indices, ...) is weight.index_select(0, indices.flatten()) shaped as
// indices.shape + [embedding_dim]; the padding and gradient arguments only matter for backward.
void embedding(ProcessedNode& p) {
  const at::Tensor& weight = p.input(0).toTensor();
  const at::Tensor& indices = p.input(1).toTensor();
  TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  at::Tensor& out = outputTensorLike(p, 0, weight);
  at::cpu::index_select_outf(weight, 0, indices.reshape(-1), out);
  at::DimVector shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(weight.size(1));
  out.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
}

} // namespace

SRT_REGISTER_KERNEL("aten::embedding_bag", kOutVariant, embeddingBagFactory);
SRT_REGISTER_KERNEL(
    "aten::embedding", kOutVariant,
    whenMatches("aten::embedding(Tensor weight, Tensor indices, int padding_idx=-1, "
                "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
                embedding));

} // namespace srt::ops
