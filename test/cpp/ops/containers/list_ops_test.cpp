// Native list kernels (ops/containers/list_ops.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

TEST(ScalarsLists, IndexLengthMembershipEquality) {
  const char* source = R"JIT(
def forward(self, x):
    s = x.size()
    grown = s + [7, 8]
    copied = list(s)
    copied.append(9)
    flags = [x.dim() > 1, x.numel() > 0]
    return (s[0], s[-1], len(s), 3 in s, s == [2, 3], s != [2, 3], grown, copied, all(flags),
            any(flags), all(s), any([0, x.dim() - 1]), grown[len(s)])
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3})}}, {{torch::randn({4})}}, {{torch::zeros({0, 3, 1})}}});
  expectKinds(source, {{"aten::__getitem__", KernelKind::kNative},
                       {"aten::len", KernelKind::kNative},
                       {"aten::__contains__", KernelKind::kNative},
                       {"aten::eq", KernelKind::kNative},
                       {"aten::ne", KernelKind::kNative},
                       {"aten::add", KernelKind::kNative},
                       {"aten::list", KernelKind::kNative},
                       {"aten::append", KernelKind::kNative},
                       {"aten::all", KernelKind::kNative},
                       {"aten::any", KernelKind::kNative}});
}

TEST(ScalarsLists, Slicing) {
  const char* source = R"JIT(
def forward(self, x, start: int, end: int):
    s = x.size()
    return s[1:], s[:-1], s[::2], s[::-1], s[start:end], s[end:start:-1], s[-10:10], s[start:end:2]
)JIT";
  expectMatchesJit(source, {{{torch::zeros({2, 3, 4, 5}), int64_t{1}, int64_t{3}}},
                            {{torch::zeros({7}), int64_t{-1}, int64_t{5}}},
                            {{torch::zeros({}), int64_t{0}, int64_t{-1}}},
                            {{torch::zeros({1, 2, 3}), int64_t{3}, int64_t{0}}}});
  expectKinds(source, {{"aten::slice", KernelKind::kNative}});
}

TEST(ScalarsLists, LoopsRepetitionMinMax) {
  const char* source = R"JIT(
def forward(self, x, n: int):
    padded = [0] * n
    ones = n * [1]
    for i in range(1, n, 2):
        x = x + i
    for j in range(n, 0, -3):
        x = x * j
    for s in x.size():
        x = x - s
    return x, padded, ones, min(x.size()), max(x.size())
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3}), int64_t{5}}},
                            {{torch::randn({4}), int64_t{0}}},
                            {{torch::randn({1, 2, 3}), int64_t{1}}}});
  expectKinds(source, {{"aten::__range_length", KernelKind::kNative},
                       {"aten::__derive_index", KernelKind::kNative},
                       {"prim::min", KernelKind::kNative},
                       {"prim::max", KernelKind::kNative}});
  // List repetition (mul.left_t / mul.int) is native; the tensor multiply is an out-variant.
  StaticModule module(scriptModule(source));
  EXPECT_EQ(kernelKinds(module).at("aten::mul"),
            (std::set<KernelKind>{KernelKind::kOutVariant, KernelKind::kNative}));
}

TEST(ScalarsLists, IndexOutOfRangeIsAnError) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x, i: int):
    return x.size()[i]
)JIT"));
  EXPECT_EQ(module({torch::zeros({2, 5}), int64_t{-1}}).toInt(), 5);
  EXPECT_THROW(module({torch::zeros({2, 5}), int64_t{2}}), c10::Error);
  EXPECT_THROW(module({torch::zeros({2, 5}), int64_t{-3}}), c10::Error);
  EXPECT_EQ(module({torch::zeros({2, 5}), int64_t{0}}).toInt(), 2);
}

TEST(ScalarsLists, TensorListsAndStringLists) {
  const char* source = R"JIT(
def forward(self, x, names: List[str]):
    parts = [x, x * 2]
    both = parts + [x + 1]
    return both[-1], len(both), "b" in names, names == ["a", "b"], names + ["z"]
)JIT";
  std::vector<std::string> ab{"a", "b"};
  std::vector<std::string> c{"c"};
  expectMatchesJit(source, {{{torch::randn({2}), c10::List<std::string>(ab)}},
                            {{torch::randn({3, 1}), c10::List<std::string>(c)}}});
}

// sum() of number lists, list.copy() and `+=` on a list (Swin's shift sizes, Tacotron2's outputs).
TEST(ScalarsLists, SumCopyAndInPlaceConcatenation) {
  const char* source = R"JIT(
def forward(self, x, sizes: List[int], scales: List[float]):
    shift = sizes.copy()
    shift[0] = x.size(0)
    grown = [x.size(-1)]
    grown += sizes
    outputs: List[Tensor] = []
    for i in range(x.size(0)):
        outputs += [x[i] * 2.0]
    flags = [x.dim() > 1, x.numel() > 0, True]
    return sum(shift), sum(sizes), sum(scales), sum(flags), grown, shift, outputs
)JIT";
  expectMatchesJit(
      source, {{{torch::randn({2, 3}), c10::List<int64_t>({4, 5}), c10::List<double>({0.5, 1.25})}},
               {{torch::randn({7}), c10::List<int64_t>({-1}), c10::List<double>()}}});
  expectKinds(source, {{"aten::sum", KernelKind::kNative},
                       {"aten::copy", KernelKind::kNative},
                       {"aten::add_", KernelKind::kNative}});
}

} // namespace
} // namespace srt::testing
