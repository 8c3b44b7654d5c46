// Native view kernels (ops/shapes/views.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

TEST(Views, ViewReshapeFlatten) {
  const char* source = R"JIT(
def forward(self, x):
    n = x.size(0)
    a = x.view(n, x.size(1) * x.size(2))
    b = x.reshape(-1)
    c = torch.flatten(x, 1)
    d = x.flatten()
    e = x.flatten(1, 1)
    f = x.view_as(x).reshape_as(b)
    return a, b * 2, c, d, e, f
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3, 4})}},
                            {{torch::randn({5, 1, 2}, torch::kFloat64)}},
                            {{torch::zeros({0, 3, 2})}},
                            {{torch::arange(24).view({2, 3, 4})}}});
  expectKinds(source, {{"aten::view", KernelKind::kNative},
                       {"aten::reshape", KernelKind::kNative},
                       {"aten::flatten", KernelKind::kNative},
                       {"aten::view_as", KernelKind::kNative},
                       {"aten::reshape_as", KernelKind::kNative}});
}

// reshape of a transposed tensor cannot be a view: it copies, and the copy must not be reused
// across runs (the caller gets it).
TEST(Views, ReshapeAndFlattenCopyWhenNotViewable) {
  expectMatchesJit(
      R"JIT(
def forward(self, x):
    return x.reshape(-1), torch.flatten(x), x.reshape(x.size(1), -1), torch.flatten(x.unsqueeze(0), 0, 1)
)JIT",
      {{{torch::randn({4, 3}).t()}}, {{torch::randn({3, 2})}}, {{torch::randn({5, 2}).t()}}});
}

TEST(Views, FlattenOfZeroDimTensor) {
  expectMatchesJit(R"JIT(
def forward(self, x):
    return torch.flatten(x), x.reshape([1, 1])
)JIT",
                   {{{torch::tensor(3.5)}}, {{torch::tensor(-1.0)}}});
}

// nn.Unflatten's op: one dimension split in two or more, -1 inferred, counted from either end.
TEST(Views, Unflatten) {
  const char* source = R"JIT(
def forward(self, x):
    return x.unflatten(1, [2, -1]), x.unflatten(-1, [1, x.size(-1)]), torch.unflatten(x, 0, (1, -1, 1))
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 6, 4})}},
                            {{torch::randn({3, 4, 2}, torch::kFloat64)}},
                            {{torch::randn({4, 8, 3}).transpose(0, 2)}}});
  expectKinds(source, {{"aten::unflatten", KernelKind::kNative}});
}

// x.T, movedim, diagonal and meshgrid: views of their inputs, as the JIT makes them.
TEST(Views, ReversedMovedDiagonalAndGrids) {
  const char* source = R"JIT(
def forward(self, x, a, b):
    g, h = torch.meshgrid(a, b, indexing="xy")
    return (x.T, x.movedim(0, -1), torch.movedim(x, [0, 1], [2, 0]), x.diagonal(), x.diagonal(1, -2, -1),
            torch.meshgrid([a, b]), g + h)
)JIT";
  expectMatchesJit(
      source, {{{torch::randn({2, 3, 4}), torch::randn({3}), torch::randn({5})}},
               {{torch::randn({4, 2, 3}).transpose(0, 2), torch::randn({1}), torch::arange(4.0)}}});
  expectKinds(source, {{"aten::numpy_T", KernelKind::kNative},
                       {"aten::movedim", KernelKind::kNative},
                       {"aten::diagonal", KernelKind::kNative},
                       {"aten::meshgrid", KernelKind::kNative}});
}

TEST(Views, PermuteTransposeT) {
  const char* source = R"JIT(
def forward(self, x, y):
    return x.permute(2, 0, 1), x.transpose(0, -1), y.t(), y.transpose(1, 0) + 1, x.permute([1, 2, 0]).contiguous()
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3, 4}), torch::randn({4, 3}).t()}},
                            {{torch::randn({1, 5, 2}).transpose(1, 2), torch::randn({2, 2})}},
                            {{torch::zeros({0, 2, 1}), torch::zeros({3, 0})}},
                            {{torch::arange(6).view({1, 2, 3}), torch::arange(4).view({2, 2})}}});
  expectKinds(source, {{"aten::permute", KernelKind::kNative},
                       {"aten::transpose", KernelKind::kNative},
                       {"aten::t", KernelKind::kNative}});
}

TEST(Views, SqueezeUnsqueeze) {
  const char* source = R"JIT(
def forward(self, x):
    return x.squeeze(), x.squeeze(1), x.squeeze(-1), x.unsqueeze(0), x.unsqueeze(-1), torch.unsqueeze(x, 2)
)JIT";
  expectMatchesJit(source, {{{torch::randn({3, 1, 2})}},
                            {{torch::randn({1, 1, 1}, torch::kFloat64)}},
                            {{torch::randn({4, 2, 1}).transpose(0, 1)}},
                            {{torch::zeros({0, 1, 1})}}});
  expectKinds(source,
              {{"aten::squeeze", KernelKind::kNative}, {"aten::unsqueeze", KernelKind::kNative}});
}

TEST(Views, ExpandAndExpandAs) {
  const char* source = R"JIT(
def forward(self, x, y):
    a = x.expand(y.size(0), -1, x.size(2))
    b = x.expand_as(y)
    return a + 0, b, a * y
)JIT";
  expectMatchesJit(source, {{{torch::randn({1, 3, 1}), torch::randn({2, 3, 1})}},
                            {{torch::randn({1, 1, 4}), torch::randn({5, 1, 4})}},
                            {{torch::randn({1, 2, 1}), torch::zeros({0, 2, 1})}}});
  expectKinds(source,
              {{"aten::expand", KernelKind::kNative}, {"aten::expand_as", KernelKind::kNative}});
}

TEST(Views, NarrowSliceSelect) {
  const char* source = R"JIT(
def forward(self, x):
    return x[1:3], x[:, ::2], x.narrow(0, 1, 2), x.select(1, 0), x[-1], x[0:0], x[:, -2:]
)JIT";
  expectMatchesJit(source, {{{torch::randn({4, 3})}},
                            {{torch::randn({3, 5}).t()}},
                            {{torch::arange(12).view({3, 4})}},
                            {{torch::randn({6, 2}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::slice", KernelKind::kNative},
                       {"aten::narrow", KernelKind::kNative},
                       {"aten::select", KernelKind::kNative}});
}

// Tensor.unfold (sliding windows, e.g. framing audio): overlapping, strided and transposed
// inputs, the last dimension, a window as large as the dimension, a 0-dim tensor.
TEST(Views, Unfold) {
  const char* source = R"JIT(
def forward(self, x, s):
    return x.unfold(-1, 3, 2), x.unfold(0, 2, 1) * 2.0, x.unfold(1, x.size(1), 1), s.unfold(0, 1, 1)
)JIT";
  expectMatchesJit(source, {{{torch::randn({4, 7}), torch::tensor(3.0)}},
                            {{torch::randn({9, 5}).t(), torch::tensor(1.0)}},
                            {{torch::arange(24).view({3, 8}), torch::tensor(2)}}});
  expectKinds(source, {{"aten::unfold", KernelKind::kNative}});
  for (const char* body : {"x.unfold(1, 4, 1)", "x.unfold(0, 2, 0)", "x.unfold(2, 1, 1)"}) {
    StaticModule module(
        scriptModule(std::string("\ndef forward(self, x):\n    return ") + body + "\n"));
    EXPECT_THROW(module({torch::randn({4, 3})}), c10::Error) << body;
  }
}

TEST(Views, ChunkSplitUnbind) {
  const char* source = R"JIT(
def forward(self, x):
    parts = x.chunk(3, 1)
    halves = x.split(2, 0)
    pieces = torch.split(x, [1, x.size(1) - 1], 1)
    rows = x.unbind(0)
    first, second = x.split_with_sizes([1, x.size(0) - 1])
    sections = x.tensor_split(3, 1)
    between = torch.tensor_split(x, [1, -1, 10], 0)
    return (parts, halves[0] + 1, pieces[1], rows, first, second, len(parts), sections, between)
)JIT";
  expectMatchesJit(source, {{{torch::randn({4, 6})}},
                            {{torch::randn({5, 3}, torch::kFloat64)}},
                            {{torch::randn({7, 3}).t()}},
                            {{torch::arange(8).view({2, 4})}}});
  expectKinds(source,
              {{"aten::chunk", KernelKind::kNative},
               {"aten::split", KernelKind::kNative},
               {"aten::unbind", KernelKind::kNative},
               {"aten::split_with_sizes", KernelKind::kNative},
               {"aten::tensor_split", KernelKind::kNative}},
              withoutPass("list_unpack_fusion"));
}

// Corner cases of ATen's view rules, which ops/shapes/strided_views.cpp re-implements.
TEST(Views, EdgeCases) {
  expectMatchesJit(R"JIT(
def forward(self, x, v, s):
    return (x[-100:100], x[5:2], x[1:-1:3], x.narrow(0, -2, 2), x.narrow(1, x.size(1), 0),
            x.select(0, -1), x.expand(2, -1, -1), v.t(), s.t(), s.unsqueeze(0), s.unsqueeze(-1),
            s.squeeze(), s.squeeze(0), x.transpose(1, 1), v.expand(3, v.size(0)), s.expand(2, 2),
            x.chunk(4, 1), x.split(5, 0), x.unsqueeze(2).squeeze(2), x.permute(-1, 0))
)JIT",
                   {{{torch::randn({4, 3}), torch::randn({5}), torch::tensor(2.0)}},
                    {{torch::randn({3, 7}).t(), torch::randn({1}), torch::tensor(-1.0)}},
                    {{torch::zeros({2, 0}), torch::zeros({0}), torch::tensor(0.0)}}});
}

TEST(Views, InvalidArgumentsAreErrors) {
  for (const char* body :
       {"x.permute(0, 0)", "x.permute(0)", "x.select(0, 4)", "x.narrow(0, 3, 2)",
        "x.split_with_sizes([1, 1])", "x.chunk(0)", "x.expand(4)", "x[::-1]", "x.unsqueeze(3)",
        "x.unbind(2)", "x.tensor_split(0)", "x.tensor_split(2, 2)"}) {
    StaticModule module(
        scriptModule(std::string("\ndef forward(self, x):\n    return ") + body + "\n"));
    EXPECT_THROW(module({torch::randn({4, 3})}), c10::Error) << body;
  }
}

// Eval-mode dropout is removed while preparing (LibTorch's removeDropout), not run: an identity
// kernel would return its input where the schema promises a fresh tensor, and the planner, told
// by AliasDb that the two do not alias, would hand the caller arena memory.
TEST(Views, DetachAndDropoutInEval) {
  const char* source = R"JIT(
def forward(self, x):
    y = torch.dropout(x, 0.5, False)
    z = torch.dropout(x * 3, 0.0, False)
    return x.detach(), y * 2, z
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3})}}, {{torch::randn({4}).expand({3, 4})}}});
  expectKinds(source, {{"aten::detach", KernelKind::kNative}});
  StaticModule module(scriptModule(source));
  EXPECT_EQ(module.graph().toString().find("aten::dropout"), std::string::npos) << module.graph();
}

// dropout whose `train` is only known at run time stays in the graph and runs as an out-variant
// (ops/elementwise/dropout.cpp): a copy, not the input itself, when train is False.
TEST(Views, DropoutWithRuntimeTrainFlagIsAnOutVariant) {
  const char* source = R"JIT(
def forward(self, x, train: bool):
    return torch.dropout(x, 0.5, train)
)JIT";
  expectKinds(source, {{"aten::dropout", KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({2, 3}), false}}, {{torch::randn({5}), false}}});
}

// view.dtype is another overload of aten::view: declined, so it runs through the JIT. (The C++
// TorchScript frontend cannot name a dtype, so the IR is written out.)
TEST(Views, ViewDtypeOverloadFallsBack) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %int32 : int = prim::Constant[value=3]()
  %bits : Tensor = aten::view(%x, %int32)
  %minus_one : int = prim::Constant[value=-1]()
  %shape : int[] = prim::ListConstruct(%minus_one)
  %flat : Tensor = aten::view(%x, %shape)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%bits, %flat)
  return (%r))IR",
                      graph.get());
  StaticModule module(graph);
  EXPECT_EQ(kernelKinds(module).at("aten::view"),
            (std::set<KernelKind>{KernelKind::kNative, KernelKind::kFallback}));
  for (auto x : {torch::randn({2, 3}), torch::randn({4})}) {
    auto result = module({x}).toTupleRef().elements();
    EXPECT_TRUE(torch::equal(result[0].toTensor(), x.view(torch::kInt)));
    EXPECT_TRUE(torch::equal(result[1].toTensor(), x.view(-1)));
  }
}

// A view of an input returned to the caller, then the next run with another shape: the view
// from the first run must stay valid (it is the caller's), and nothing is reused by mistake.
TEST(Views, ReturnedViewsSurviveTheNextRun) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return x.t()
)JIT"));
  auto a = torch::randn({2, 3});
  auto first = module({a}).toTensor();
  auto second = module({torch::randn({4, 5})}).toTensor();
  EXPECT_TRUE(torch::equal(first, a.t()));
  EXPECT_EQ(second.sizes(), (std::vector<int64_t>{5, 4}));
}

} // namespace
} // namespace srt::testing
