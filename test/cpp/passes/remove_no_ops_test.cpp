// passes/remove_no_ops.cpp: provable no-ops go, unless removing them could be told.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_differential.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

std::shared_ptr<torch::jit::Graph> expectRemoval(const std::shared_ptr<torch::jit::Graph>& graph,
                                                 const std::vector<GraphInputs>& inputs,
                                                 bool expect_changed) {
  return expectPassPreservesResults(passes::removeNoOps, graph, inputs, expect_changed);
}

const char* kNoOps = R"JIT(
def forward(self, x):
    a = x.detach() * 2.0
    f = a.to(dtype=7)
    b = f.to(dtype=7) + 1.0
    c = a.reshape(a.size()) - 1.0
    d = a.view(a.size()).view_as(a).reshape_as(a) * 3.0
    e = a.contiguous().contiguous() / 2.0
    return b, c, d, e
)JIT";

TEST(RemoveNoOps, ProvableNoOpsGo) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3})}, {torch::randn({4})}};
  auto rewritten = expectRemoval(preparedGraph(kNoOps), inputs, true);
  EXPECT_EQ(countKind(*rewritten, "aten::detach"), 0u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::to"), 1u); // the first converts
  EXPECT_EQ(countKind(*rewritten, "aten::reshape"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::view"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::view_as"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::reshape_as"), 0u);
  // The inner contiguous of a tensor of unknown layout stays; the outer one goes.
  EXPECT_EQ(countKind(*rewritten, "aten::contiguous"), 1u);
  expectMatchesJit(kNoOps, {{{torch::randn({2, 3})}}, {{torch::randn({4})}}});
}

// Types the JIT cannot infer from TorchScript source: a complete, contiguous tensor type, and a
// known rank for flatten.
TEST(RemoveNoOps, TypesProveContiguityAndRank) {
  auto graph = parsedGraph(R"IR(
graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu), %y : Float(*, *)):
  %fmt : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %minus_one : int = prim::Constant[value=-1]()
  %float : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::contiguous(%x, %fmt)
  %b : Tensor = aten::flatten(%y, %one, %minus_one)
  %c : Tensor = aten::to(%x, %float, %false, %false, %none)
  %d : Tensor = aten::mul(%a, %c)
  %e : Tensor = aten::add(%d, %b, %one)
  return (%e)
)IR");
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3}), torch::randn({2, 3})}};
  auto rewritten = expectRemoval(graph, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "aten::contiguous"), 0u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::flatten"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::to"), 0u);
  expectGraphMatchesJit(graph, inputs);
}

TEST(RemoveNoOps, StaysWhenItCouldBeTold) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3})}, {torch::randn({3, 1})}};
  // The caller would get their own tensor back instead of a new one.
  expectRemoval(preparedGraph(R"JIT(
def forward(self, x):
    return x.detach(), x.contiguous(), x.reshape(x.size())
)JIT"),
                inputs, false);
  // Asked to copy; dtype unknown; layout unknown; flatten of an unknown rank.
  expectRemoval(preparedGraph(R"JIT(
def forward(self, x):
    return x.to(6, False, True) * 1.0, x.to(dtype=6) * 1.0, x.contiguous() * 1.0, x.flatten(1, 1) * 1.0
)JIT"),
                inputs, false);
  // Shape from another tensor.
  expectRemoval(preparedGraph(R"JIT(
def forward(self, x, y):
    return x.reshape(y.size()) * 1.0
)JIT"),
                {{torch::randn({2, 3}), torch::randn({3, 2})}}, false);
}

TEST(RemoveNoOps, ViewsWrittenInPlaceStay) {
  // t_() on the detached view would transpose x itself if the detach were gone.
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %two : float = prim::Constant[value=2.]()
  %a : Tensor = aten::mul(%x, %two)
  %b : Tensor = aten::detach(%a)
  %c : Tensor = aten::t_(%b)
  %d : Tensor = aten::mul(%a, %two)
  return (%d)
)IR");
  expectRemoval(graph, {{torch::randn({2, 3})}}, false);
}

} // namespace
} // namespace srt::testing
