// In-place add_/sub_/mul_/div_/copy_/zero_/fill_/index_add_ native kernels
// (ops/elementwise/in_place.cpp) and index_put_ / index_put (ops/indexing/index_put.cpp) against
// the JIT: the writes the mutation removal keeps in place, into views and into tensors of another
// dtype.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// A float mask added in place to scores whose dtype the graph does not know stays in place
// (wav2vec2's `weights += attention_mask`); slices written with copy_ (Swin's attention mask).
TEST(InPlace, WritesIntoViewsAndUnknownDtypesMatchTheJit) {
  const char* source = R"JIT(
def forward(self, x, mask, y):
    scores = x * 2.0
    scores += mask
    scores -= 0.5
    scores *= y
    scores /= 4
    grid = x.new_zeros((x.size(0) + 1, 3))
    grid[1:, 0:2] = 1.5
    grid[0, :] = y[0]
    row = grid[0]
    row.copy_(x[0, :3])
    return scores, grid
)JIT";
  expectKinds(source, {{"aten::add_", KernelKind::kNative}, {"aten::copy_", KernelKind::kNative}});
  expectMatchesJit(
      source, {{{torch::randn({3, 4}), torch::randn({3, 4}), torch::randn({4})}},
               {{torch::randn({2, 5}), torch::randn({1, 5}), torch::randn({5})}},
               {{torch::randn({4, 3}), torch::randn({4, 3}, torch::kDouble), torch::randn({3})}}});
}

// zero_ and fill_ (a number or a 0-dim tensor) on views of a clone: Swin V2 zeroes the key part
// of its qkv bias this way.
TEST(InPlace, ZeroAndFillOfViewsMatchTheJit) {
  const char* source = R"JIT(
def forward(self, x, v):
    b = x.clone()
    n = x.size(-1) // 3
    b[..., n:2 * n].zero_()
    b[0].fill_(2.5)
    b[-1, :1].fill_(v)
    return b * 2.0
)JIT";
  expectKinds(source, {{"aten::zero_", KernelKind::kNative}, {"aten::fill_", KernelKind::kNative}});
  expectMatchesJit(source, {{{torch::randn({3, 6}), torch::tensor(-1.0)}},
                            {{torch::randn({2, 9}), torch::tensor(4.0)}},
                            {{torch::randn({4, 3}), torch::tensor(0.5, torch::kDouble)}}});
}

// index_add_ into a zero tensor, as a mixture of experts gathers its experts' rows back, with and
// without alpha; an index out of range is ATen's error.
TEST(InPlace, IndexAddMatchesTheJit) {
  const char* source = R"JIT(
def forward(self, x, rows, updates):
    out = torch.zeros_like(x)
    out.index_add_(0, rows, updates)
    out.index_add_(0, rows, updates * 2.0, alpha=0.5)
    return out + 1.0
)JIT";
  expectKinds(source, {{"aten::index_add_", KernelKind::kNative}});
  expectMatchesJit(source,
                   {{{torch::randn({5, 3}), torch::tensor({0, 2, 2}), torch::randn({3, 3})}},
                    {{torch::randn({4, 2}), torch::tensor({3}), torch::randn({1, 2})}},
                    {{torch::randn({6, 3}), torch::tensor({5, 0, 1, 5}), torch::randn({4, 3})}}});
}

// scatter_ of a tensor and of a value into a fresh tensor: nn.utils.rnn's invert_permutation
// (empty_like in the legacy contiguous format, then arange scattered by the permutation).
TEST(InPlace, ScatterMatchesTheJit) {
  const char* source = R"JIT(
def forward(self, permutation, x, idx):
    inverse = torch.empty_like(permutation, memory_format=0)
    inverse.scatter_(0, permutation, torch.arange(0, permutation.numel()))
    y = x * 1.0
    y.scatter_(1, idx, 7.0)
    return inverse, y
)JIT";
  expectKinds(source, {{"aten::scatter_", KernelKind::kNative},
                       {"aten::empty_like", KernelKind::kOutVariant}});
  expectMatchesJit(
      source, {{{torch::tensor({2, 0, 1}), torch::randn({2, 4}), torch::tensor({{0, 3}, {1, 1}})}},
               {{torch::randperm(6), torch::randn({3, 2}), torch::tensor({{1}, {0}, {1}})}}});
}

TEST(InPlace, IndexPutMatchesTheJit) {
  const char* source = R"JIT(
def forward(self, x, mask, idx, v):
    y = x * 1.0
    y[mask] = 0.0
    y.index_put_([idx], v, accumulate=True)
    z = torch.index_put(x, [idx], v)
    return y, z
)JIT";
  expectKinds(source, {{"aten::index_put_", KernelKind::kNative}});
  expectMatchesJit(source, {{{torch::randn({4, 3}), torch::rand({4, 3}) > 0.5,
                              torch::tensor({0, 2, 0}), torch::randn({3, 3})}},
                            {{torch::randn({2, 2}), torch::rand({2, 2}) > 0.5, torch::tensor({1}),
                              torch::randn({1, 2})}}});
}

TEST(InPlace, ABadIndexIsAClearErrorAndTheRuntimeRecovers) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x, idx):
    y = x * 1.0
    y[idx] = 0.0
    return y
)JIT"));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({torch::ones({2, 2}), torch::tensor({5})})), c10::Error);
  EXPECT_TRUE(torch::equal(runtime({torch::ones({2, 2}), torch::tensor({1})}).toTensor(),
                           torch::tensor({{1.f, 1.f}, {0.f, 0.f}})));
}

} // namespace
} // namespace srt::testing
