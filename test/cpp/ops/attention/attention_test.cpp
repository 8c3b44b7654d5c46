// Kernels of srt::attention and srt::multi_head_attention (ops/attention/attention.cpp) against
// their reference implementation, which the JIT runs: strided operands, broadcast masks, degenerate
// sizes, and the dtypes the fast path leaves to the reference.
#include <limits>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"

namespace srt::testing {
namespace {

const char* kAttentionIr = R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor, %mask : Tensor?):
  %scale : float = prim::Constant[value=0.25]()
  %adds : bool = prim::Constant[value=0]()
  %out : Tensor = srt::attention(%q, %k, %v, %mask, %scale, %adds, %adds)
  return (%out)
)IR";

// The mask as masked_fill(mask, -inf) applies it.
const char* kAttentionFillIr = R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor, %mask : Tensor?):
  %scale : float = prim::Constant[value=0.25]()
  %fills : bool = prim::Constant[value=1]()
  %not_causal : bool = prim::Constant[value=0]()
  %out : Tensor = srt::attention(%q, %k, %v, %mask, %scale, %fills, %not_causal)
  return (%out)
)IR";

const char* kMultiHeadIr = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor?, %mask : Tensor?):
  %heads : int = prim::Constant[value=4]()
  %scale : float = prim::Constant[value=0.35]()
  %adds : bool = prim::Constant[value=0]()
  %out : Tensor = srt::multi_head_attention(%x, %w, %b, %heads, %mask, %scale, %adds, %adds)
  return (%out)
)IR";

const char* kMultiHeadFillIr = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor?, %mask : Tensor?):
  %heads : int = prim::Constant[value=4]()
  %scale : float = prim::Constant[value=0.35]()
  %fills : bool = prim::Constant[value=1]()
  %not_causal : bool = prim::Constant[value=0]()
  %out : Tensor = srt::multi_head_attention(%x, %w, %b, %heads, %mask, %scale, %fills, %not_causal)
  return (%out)
)IR";

// Causal, with and without a filling mask on top.
const char* kCausalIr = R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor, %mask : Tensor?):
  %scale : float = prim::Constant[value=0.25]()
  %fills : bool = prim::Constant[value=1]()
  %causal : bool = prim::Constant[value=1]()
  %out : Tensor = srt::attention(%q, %k, %v, %mask, %scale, %fills, %causal)
  return (%out)
)IR";

const char* kMultiHeadCausalIr = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor?, %mask : Tensor?):
  %heads : int = prim::Constant[value=4]()
  %scale : float = prim::Constant[value=0.35]()
  %fills : bool = prim::Constant[value=1]()
  %causal : bool = prim::Constant[value=1]()
  %out : Tensor = srt::multi_head_attention(%x, %w, %b, %heads, %mask, %scale, %fills, %causal)
  return (%out)
)IR";

// Each set runs twice through one StaticModule, and all sets a second time after the others
// (shape changes both ways), against the JIT running the reference.
void expectKernelMatchesJit(const char* ir, const std::vector<GraphInputs>& sets,
                            const std::string& op) {
  auto graph = parsedGraph(ir);
  StaticModule module(graph->copy());
  EXPECT_EQ(kernelKinds(module)[op], std::set<ops::KernelKind>{ops::KernelKind::kOutVariant});
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < sets.size(); ++i) {
      const std::vector<c10::IValue> expected = runWithJit(graph, sets[i]);
      for (int run = 0; run < 2; ++run) {
        EXPECT_EQ(compareIValues(expected[0], module(sets[i])), "") << "input set " << i;
      }
    }
  }
}

at::Tensor randn(at::IntArrayRef shape) {
  return torch::randn(shape);
}

TEST(FusedAttentionKernel, AttentionOnContiguousHeadsWithEveryMaskShape) {
  const at::Tensor q = randn({2, 3, 5, 8});
  const at::Tensor k = randn({2, 3, 6, 8});
  const at::Tensor v = randn({2, 3, 6, 4});
  expectKernelMatchesJit(kAttentionIr,
                         {{q, k, v, c10::IValue()},
                          {q, k, v, randn({2, 3, 5, 6})},
                          {q, k, v, randn({5, 6})},
                          {q, k, v, randn({2, 1, 5, 6})},
                          {q, k, v, randn({6})},    // one bias per key
                          {q, k, v, randn({5, 1})}, // one per query row: key stride 0
                          {q, k, v, torch::triu(torch::full({5, 6}, -1e9), 1)}},
                         "srt::attention");
}

TEST(FusedAttentionKernel, AttentionOnStridedOperands) {
  // q: heads split from [B, S, H, D] (row stride H * D); k: column-major; v: a column slice.
  const at::Tensor q = randn({2, 5, 3, 8}).permute({0, 2, 1, 3});
  const at::Tensor k = randn({2, 3, 8, 6}).transpose(-2, -1);
  const at::Tensor v = randn({2, 3, 6, 10}).narrow(-1, 2, 4);
  const at::Tensor mask = randn({2, 3, 6, 5}).transpose(-2, -1); // column-major mask rows
  expectKernelMatchesJit(kAttentionIr, {{q, k, v, c10::IValue()}, {q, k, v, mask}},
                         "srt::attention");
}

TEST(FusedAttentionKernel, AttentionOnThreeAndTwoDimensionalOperands) {
  expectKernelMatchesJit(kAttentionIr,
                         {{randn({4, 7, 16}), randn({4, 9, 16}), randn({4, 9, 16}), randn({7, 9})},
                          {randn({7, 16}), randn({9, 16}), randn({9, 3}), c10::IValue()}},
                         "srt::attention");
}

TEST(FusedAttentionKernel, AttentionDegenerateSizesAndOtherDtypes) {
  const auto dbl = [](at::IntArrayRef shape) { return torch::randn(shape, torch::kDouble); };
  expectKernelMatchesJit(
      kAttentionIr,
      {{randn({0, 2, 4, 8}), randn({0, 2, 4, 8}), randn({0, 2, 4, 8}), c10::IValue()},
       {randn({2, 0, 8}), randn({2, 5, 8}), randn({2, 5, 3}), c10::IValue()},
       {randn({2, 3, 8}), randn({2, 0, 8}), randn({2, 0, 3}), c10::IValue()},
       {dbl({2, 3, 8}), dbl({2, 4, 8}), dbl({2, 4, 3}), dbl({3, 4})},
       // A bool mask adds as 0/1; a mask with more dims grows the result: both the reference's.
       {randn({2, 3, 8}), randn({2, 4, 8}), randn({2, 4, 3}), torch::rand({3, 4}) > 0.5},
       {randn({3, 8}), randn({4, 8}), randn({4, 3}), randn({2, 3, 4})}},
      "srt::attention");
}

TEST(FusedAttentionKernel, AttentionRowsOfMinusInfinityAreNan) {
  const float inf = std::numeric_limits<float>::infinity();
  at::Tensor mask = torch::zeros({3, 4});
  mask[1].fill_(-inf); // softmax of an all -inf row: NaN, as in ATen
  expectKernelMatchesJit(kAttentionIr, {{randn({3, 8}), randn({4, 8}), randn({4, 2}), mask}},
                         "srt::attention");
}

// Boolean masks in every broadcast shape, strided, with fully masked rows (NaN, as in ATen), and
// the non-bool masks masked_fill also takes (uint8: the reference's business).
TEST(FusedAttentionKernel, AttentionWithFillingMasks) {
  const at::Tensor q = randn({2, 3, 5, 8});
  const at::Tensor k = randn({2, 3, 6, 8});
  const at::Tensor v = randn({2, 3, 6, 4});
  at::Tensor full_row = torch::rand({5, 6}) > 0.5;
  full_row[2].fill_(true);
  expectKernelMatchesJit(kAttentionFillIr,
                         {{q, k, v, c10::IValue()},
                          {q, k, v, torch::rand({2, 3, 5, 6}) > 0.5},
                          {q, k, v, torch::ones({5, 6}, torch::kBool).triu(1)},
                          {q, k, v, torch::rand({2, 1, 1, 6}) > 0.3},
                          {q, k, v, (torch::rand({2, 3, 6, 5}) > 0.5).transpose(-2, -1)},
                          {q, k, v, full_row},
                          {q, k, v, (torch::rand({5, 6}) > 0.5).to(torch::kUInt8)}},
                         "srt::attention");
}

TEST(FusedAttentionKernel, CausalAttentionWithAndWithoutMask) {
  const at::Tensor q = randn({2, 3, 5, 8});
  const at::Tensor k = randn({2, 3, 5, 8});
  const at::Tensor v = randn({2, 3, 5, 4});
  expectKernelMatchesJit(kCausalIr,
                         {{q, k, v, c10::IValue()},
                          {q, k, v, torch::rand({2, 1, 1, 5}) > 0.7},
                          // more keys than queries, and more queries than keys
                          {randn({2, 7, 8}), randn({2, 9, 8}), randn({2, 9, 3}), c10::IValue()},
                          {randn({2, 9, 8}), randn({2, 7, 8}), randn({2, 7, 3}), c10::IValue()}},
                         "srt::attention");
}

constexpr int64_t kModel = 16;

std::vector<GraphInputs> multiHeadSets(const at::Tensor& x, int64_t d_in = kModel) {
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  const at::Tensor w = randn({3 * kModel, d_in}) * 0.3;
  const at::Tensor b = randn({3 * kModel});
  return {
      {x, w, b, c10::IValue()},
      {x, w, c10::IValue(), randn({seq, seq})},
      {x, w, b, randn({batch, 4, seq, seq})},
      {x, w, b, randn({batch, 1, seq, seq})},
      {x, w, b, torch::triu(torch::full({seq, seq}, -std::numeric_limits<float>::infinity()), 1)}};
}

TEST(FusedAttentionKernel, MultiHeadAttentionContiguous) {
  auto sets = multiHeadSets(randn({3, 7, kModel}));
  auto single = multiHeadSets(randn({1, 5, kModel}));
  sets.insert(sets.end(), single.begin(), single.end());
  auto wider_input = multiHeadSets(randn({2, 6, 24}), 24); // d_in != d_model
  sets.insert(sets.end(), wider_input.begin(), wider_input.end());
  expectKernelMatchesJit(kMultiHeadIr, sets, "srt::multi_head_attention");
}

TEST(FusedAttentionKernel, MultiHeadAttentionWithFillingMasks) {
  const at::Tensor x = randn({3, 7, kModel});
  const at::Tensor w = randn({3 * kModel, kModel}) * 0.3;
  const at::Tensor b = randn({3 * kModel});
  expectKernelMatchesJit(kMultiHeadFillIr,
                         {{x, w, b, torch::ones({7, 7}, torch::kBool).triu(1)},
                          {x, w, b, torch::rand({3, 1, 1, 7}) > 0.5},
                          {x, w, b, torch::rand({3, 4, 7, 7}) > 0.5}},
                         "srt::multi_head_attention");
}

TEST(FusedAttentionKernel, MultiHeadAttentionCausal) {
  const at::Tensor w = randn({3 * kModel, kModel}) * 0.3;
  const at::Tensor b = randn({3 * kModel});
  expectKernelMatchesJit(kMultiHeadCausalIr,
                         {{randn({3, 7, kModel}), w, b, c10::IValue()},
                          {randn({1, 12, kModel}), w, b, c10::IValue()},
                          {randn({2, 6, kModel}), w, b, torch::rand({2, 1, 1, 6}) > 0.7}},
                         "srt::multi_head_attention");
}

TEST(FusedAttentionKernel, MultiHeadAttentionStridedInput) {
  // Rows of x with a stride > d_in (one GEMM), and batch/seq swapped (one GEMM per batch).
  auto sets = multiHeadSets(randn({3, 7, 2 * kModel}).narrow(-1, 0, kModel));
  auto swapped = multiHeadSets(randn({7, 3, kModel}).transpose(0, 1));
  sets.insert(sets.end(), swapped.begin(), swapped.end());
  expectKernelMatchesJit(kMultiHeadIr, sets, "srt::multi_head_attention");
}

// With the QKV weight and bias constants (as after freezing), oneDNN runs the projection on the
// weight packed at build time when the rows of x are dense, and OpenBLAS when they are not.
TEST(FusedAttentionKernel, MultiHeadAttentionWithConstantWeightOnEveryBackend) {
  const at::Tensor w = randn({3 * kModel, kModel}) * 0.3;
  const at::Tensor b = randn({3 * kModel});
  auto graph = parsedGraph(kMultiHeadIr);
  {
    torch::jit::WithInsertPoint at_start(graph->nodes().front());
    graph->inputs()[1]->replaceAllUsesWith(graph->insertConstant(w));
    graph->inputs()[2]->replaceAllUsesWith(graph->insertConstant(b));
  }
  graph->eraseInput(2);
  graph->eraseInput(1);
  const std::vector<GraphInputs> sets = {
      {randn({3, 7, kModel}), c10::IValue()},
      {randn({1, 16, kModel}), randn({16, 16})},
      {randn({3, 7, 2 * kModel}).narrow(-1, 0, kModel), c10::IValue()}, // rows not dense
      {randn({7, 3, kModel}).transpose(0, 1), randn({3, 1, 7, 7})},     // batches not dense
      {randn({2, 0, kModel}), c10::IValue()}};
  for (const GemmBackend backend :
       {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten}) {
    SCOPED_TRACE(toString(backend));
    StaticModuleOptions options;
    options.gemm_backend = backend;
    StaticModule module(graph->copy(), options);
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < sets.size(); ++i) {
        const std::vector<c10::IValue> expected = runWithJit(graph, sets[i]);
        for (int run = 0; run < 2; ++run) {
          EXPECT_EQ(compareIValues(expected[0], module(sets[i])), "") << "input set " << i;
        }
      }
    }
  }
}

TEST(FusedAttentionKernel, MultiHeadAttentionZeroSizesAndDouble) {
  auto sets = multiHeadSets(randn({0, 5, kModel}));
  auto no_seq = multiHeadSets(randn({2, 0, kModel}));
  sets.insert(sets.end(), no_seq.begin(), no_seq.end());
  const at::Tensor x = torch::randn({2, 3, kModel}, torch::kDouble);
  sets.push_back(
      {x, torch::randn({3 * kModel, kModel}, torch::kDouble), c10::IValue(), c10::IValue()});
  expectKernelMatchesJit(kMultiHeadIr, sets, "srt::multi_head_attention");
}

// Heads of long sequences, where the products run on the blocked GEMM (AVX-512): keys over two
// whole column blocks and a partial one (130), value features over two (80), each head's kᵀ and
// v packed from contiguous rows and from transposed storage; a causal 150-token head; on one
// thread and with the heads over two.
TEST(FusedAttentionKernel, LongSequencesAndWideHeads) {
  const at::Tensor q = randn({1, 3, 197, 72});
  const at::Tensor k = randn({1, 3, 130, 72});
  const at::Tensor v = randn({1, 3, 130, 80});
  const at::Tensor stored_kt = randn({1, 3, 72, 130}).transpose(-2, -1);
  const at::Tensor stored_vt = randn({1, 3, 80, 130}).transpose(-2, -1);
  const int saved = at::get_num_threads();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    at::set_num_threads(threads);
    expectKernelMatchesJit(kAttentionIr,
                           {{q, k, v, randn({197, 130})}, {q, stored_kt, stored_vt, c10::IValue()}},
                           "srt::attention");
    expectKernelMatchesJit(
        kCausalIr, {{randn({2, 150, 64}), randn({2, 150, 64}), randn({2, 150, 64}), c10::IValue()}},
        "srt::attention");
  }
  at::set_num_threads(saved);
}

TEST(FusedAttentionKernel, SerialAndThreadedHeadLoopsAgree) {
  // One thread: one loop, OpenBLAS at the caller's count. Several: heads over the threads, each
  // with its own score matrix; 3 threads for 2 x 4 heads leaves one thread a different share.
  const int saved = at::get_num_threads();
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    at::set_num_threads(threads);
    expectKernelMatchesJit(kMultiHeadIr, multiHeadSets(randn({2, 9, kModel})),
                           "srt::multi_head_attention");
    expectKernelMatchesJit(
        kAttentionIr,
        {{randn({2, 4, 9, 8}), randn({2, 4, 9, 8}), randn({2, 4, 9, 8}), randn({9, 9})}},
        "srt::attention");
  }
  at::set_num_threads(saved);
}

} // namespace
} // namespace srt::testing
