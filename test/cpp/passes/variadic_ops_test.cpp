// passes/variadic_ops.cpp: cat/stack of a list built only for them take the tensors directly.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

std::shared_ptr<torch::jit::Graph>
expectRewrite(const char* source, const std::vector<GraphInputs>& inputs, bool expect_changed) {
  return expectPassPreservesResults(passes::useVariadicCatStack, preparedGraph(source), inputs,
                                    expect_changed);
}

const char* kCatAndStack = R"JIT(
def forward(self, a, b, c, dim: int):
    x = torch.cat([a, b, c], dim)
    y = torch.stack([a, b * 2.0], 1)
    z = torch.cat([a], 0)
    return x + 1.0, y, z
)JIT";

TEST(VariadicCatStack, ListsBuiltOnlyForCatOrStackDisappear) {
  const std::vector<GraphInputs> inputs = {
      {torch::randn({2, 3}), torch::randn({2, 3}), torch::randn({2, 3}), int64_t{0}},
      {torch::randn({4, 1}), torch::randn({4, 1}), torch::randn({4, 1}), int64_t{-1}}};
  auto rewritten = expectRewrite(kCatAndStack, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::variadic_cat"), 2u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::variadic_stack"), 1u);
  EXPECT_EQ(countKind(*rewritten, "prim::ListConstruct"), 0u);
  EXPECT_EQ(countKind(*rewritten, "aten::cat"), 0u);
  std::vector<InputSet> sets;
  for (const GraphInputs& args : inputs) {
    sets.push_back({args, {}});
  }
  expectMatchesJit(kCatAndStack, sets);
}

// Common-subexpression elimination merges equal lists: one list, several cats.
TEST(VariadicCatStack, ListSharedByCatsAndStacks) {
  const char* source = R"JIT(
def forward(self, a, b):
    l = [a, b]
    return torch.cat(l, 0), torch.cat(l, -1), torch.stack(l, 0)
)JIT";
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3}), torch::randn({2, 3})},
                                           {torch::randn({1, 2}), torch::randn({1, 2})}};
  auto rewritten = expectRewrite(source, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::variadic_cat"), 2u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "srt::variadic_stack"), 1u);
  EXPECT_EQ(countKind(*rewritten, "prim::ListConstruct"), 0u);
  expectMatchesJit(source, {{{torch::randn({2, 3}), torch::randn({2, 3})}},
                            {{torch::randn({1, 2}), torch::randn({1, 2})}}});
}

TEST(VariadicCatStack, ListsUsedElsewhereStay) {
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3}), torch::randn({2, 3})},
                                           {torch::randn({1, 2}), torch::randn({1, 2})}};
  // Also returned.
  expectRewrite(R"JIT(
def forward(self, a, b):
    l = [a, b]
    return torch.cat(l, 0), l
)JIT",
                inputs, false);
  // Read by something else too.
  expectRewrite(R"JIT(
def forward(self, a, b):
    l = [a, b]
    return torch.cat(l, 0), len(l)
)JIT",
                inputs, false);
  // Appended to before the cat.
  expectRewrite(R"JIT(
def forward(self, a, b):
    l = [a]
    l.append(b)
    return torch.cat(l, 1)
)JIT",
                inputs, false);
  // Not built here.
  expectRewrite(R"JIT(
def forward(self, l: List[Tensor]):
    return torch.cat(l, 1)
)JIT",
                {{c10::List<at::Tensor>({torch::randn({2, 1}), torch::randn({2, 2})})}}, false);
}

TEST(VariadicCatStack, InsideLoopBodies) {
  const char* source = R"JIT(
def forward(self, a, n: int):
    y = a
    for _ in range(n):
        y = torch.cat([y, a], 0)[: a.size(0)] * 0.5
    return y
)JIT";
  const std::vector<GraphInputs> inputs = {{torch::randn({2, 3}), int64_t{3}},
                                           {torch::randn({1, 4}), int64_t{0}}};
  auto rewritten = expectRewrite(source, inputs, true);
  EXPECT_EQ(countKind(*rewritten, "srt::variadic_cat"), 1u) << *rewritten;
  expectMatchesJit(source,
                   {{{torch::randn({2, 3}), int64_t{3}}}, {{torch::randn({1, 4}), int64_t{0}}}});
}

} // namespace
} // namespace srt::testing
