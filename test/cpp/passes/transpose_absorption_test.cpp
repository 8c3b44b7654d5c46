// passes/transpose_absorption.cpp: transposes and output scales folded into srt::gemm.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

constexpr const char* kAbsorbable = R"JIT(
def forward(self, a, b, c, d):
    s = torch.matmul(a, b.transpose(-2, -1)) * 0.125
    t = torch.bmm(c.transpose(1, 2), d) / 4
    u = torch.mm(a[0].t(), b[1])
    v = torch.bmm(c, d.permute(0, 2, 1)) * 3
    w = torch.matmul(a.transpose(-1, -2), b)
    return s, t, u, v, w
)JIT";

// a, b: [B, S, D]; c, d: [B, S, D] too (bmm takes them as [B, S, D] x [B, D, S]).
std::vector<GraphInputs> inputSets() {
  return {{torch::randn({2, 5, 5}), torch::randn({2, 5, 5}), torch::randn({3, 4, 6}),
           torch::randn({3, 4, 6})},
          {torch::randn({3, 7, 7}), torch::randn({3, 7, 7}), torch::randn({1, 2, 8}),
           torch::randn({1, 2, 8})}};
}

TEST(TransposeAbsorption, FoldsTransposesAndScales) {
  auto graph = preparedGraph(kAbsorbable);
  auto rewritten = expectPassPreservesResults(passes::absorbTransposes, graph, inputSets(), true);
  EXPECT_EQ(countKind(*rewritten, "srt::gemm"), 5u) << *rewritten;
  for (const char* gone : {"aten::transpose", "aten::t", "aten::permute", "aten::mul", "aten::div",
                           "aten::matmul", "aten::bmm", "aten::mm"}) {
    EXPECT_EQ(countKind(*rewritten, gone), 0u) << gone << "\n" << *rewritten;
  }
}

TEST(TransposeAbsorption, LeavesNearMissesAlone) {
  // Transpose used twice; not the last two dims; t() before matmul of unknown rank; permute of
  // other dims; a scale that is an input; a GEMM result used twice before its scale.
  auto graph = preparedGraph(R"JIT(
def forward(self, a, b, k: float):
    bt = b.transpose(-2, -1)
    s = torch.matmul(a, bt)
    t = torch.matmul(a.transpose(0, 1), b)
    u = torch.matmul(a[0], b[0].t())
    v = torch.matmul(a, b.permute(2, 1, 0))
    w = torch.matmul(a, b) * k
    y = torch.matmul(b, a)
    return s, bt, t, u, v, w, y * 2.0, y
)JIT");
  std::vector<GraphInputs> inputs = {{torch::randn({4, 4, 4}), torch::randn({4, 4, 4}), 0.5},
                                     {torch::randn({3, 3, 3}), torch::randn({3, 3, 3}), 2.0}};
  auto rewritten = expectPassPreservesResults(passes::absorbTransposes, graph, inputs, false);
  EXPECT_EQ(countKind(*rewritten, "srt::gemm"), 0u) << *rewritten;
}

TEST(TransposeAbsorption, MatchesJitOnEveryBackend) {
  std::vector<InputSet> inputs;
  for (GraphInputs& set : inputSets()) {
    inputs.push_back({std::move(set), {}});
  }
  for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten}) {
    SCOPED_TRACE(toString(backend));
    StaticModuleOptions options;
    options.gemm_backend = backend;
    const torch::jit::Module module = scriptModule(kAbsorbable);
    EXPECT_EQ(StaticModule(module, options).stats().fallback_ops.count("srt::gemm"), 0u);
    expectMatchesJit(module, inputs, options);
  }
}

} // namespace
} // namespace srt::testing
