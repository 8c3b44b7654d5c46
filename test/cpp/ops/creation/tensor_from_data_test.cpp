// Out-variant aten::tensor (ops/creation/tensor_from_data.cpp) against the JIT: numbers and flat
// lists of them, with and without a dtype (floats go through the default dtype first).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

const char* const kTensors = R"JIT(
def forward(self, x, a: float, n: int, flag: bool):
    m = x.size(0)
    return (torch.tensor(a), torch.tensor(n), torch.tensor(flag), torch.tensor(a, dtype=7),
            torch.tensor(n, dtype=6), torch.tensor([m, n]), torch.tensor([a, 2.5 * a]),
            torch.tensor([m, n], dtype=7), torch.tensor([a, a], dtype=4), torch.tensor([flag]),
            torch.tensor([a], device=x.device))
)JIT";

TEST(TensorFromData, NumbersAndListsMatchTheJit) {
  expectKinds(kTensors, {{"aten::tensor", KernelKind::kOutVariant}});
  expectMatchesJit(kTensors, {{{torch::randn({4}), 0.1, 3, true}},
                              {{torch::randn({1}), -2.75, -7, false}},
                              {{torch::randn({0}), 1e10, 0, true}}});
}

// `t[mask] = 0` makes a tensor of the 0 each run, then writes it in place.
TEST(TensorFromData, MaskedAssignmentMatchesTheJit) {
  const char* source = R"JIT(
def forward(self, x, mask):
    y = x * 2.0
    y[mask] = 0.0
    return y
)JIT";
  expectKinds(source, {{"aten::tensor", KernelKind::kOutVariant},
                       {"aten::index_put_", KernelKind::kNative}});
  expectMatchesJit(source, {{{torch::randn({3, 4}), torch::rand({3, 4}) > 0.5}},
                            {{torch::randn({5}), torch::rand({5}) > 0.5}}});
}

// A list of lists stays the JIT operator's: its shape is not one dimension.
TEST(TensorFromData, NestedListsAreLeftToTheJit) {
  const char* source = R"JIT(
def forward(self, n: int):
    return torch.tensor([[n, 1], [2, n]])
)JIT";
  expectKinds(source, {{"aten::tensor", KernelKind::kFallback}});
  expectMatchesJit(source, {{{3}}, {{-1}}});
}

} // namespace
} // namespace srt::testing
