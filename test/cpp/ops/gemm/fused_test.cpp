// ops/gemm/fused.cpp: srt::fused_linear on every GEMM backend against its reference (the unfused
// ATen ops the JIT runs): every activation, residuals in both operand orders, broadcasting and
// alpha, pre-packed and input weights, and what falls back to the reference (other dtypes, a
// residual that enlarges the output).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "ops/core/kernel_options.h"

namespace srt::testing {
namespace {

using srt::GemmBackend;

const std::vector<GemmBackend> kBackends{GemmBackend::kOneDnn, GemmBackend::kOpenBlas,
                                         GemmBackend::kAten};

// The IR's inputs %w ([outputs, features]) and %b ([outputs]), the last two, replaced by
// constants: the weight the oneDNN backend pre-packs.
std::shared_ptr<torch::jit::Graph> withConstantWeights(const std::string& ir, int64_t outputs = 24,
                                                       int64_t features = 16) {
  auto graph = parsedGraph(ir);
  const size_t n = graph->inputs().size();
  const at::Tensor tensors[] = {torch::randn({outputs, features}), torch::randn({outputs})};
  for (size_t i = 0; i < 2; ++i) {
    const torch::jit::WithInsertPoint start(graph->block()->nodes().front());
    torch::jit::Value* input = graph->inputs()[n - 2];
    input->replaceAllUsesWith(graph->insertConstant(tensors[i]));
    graph->eraseInput(n - 2);
  }
  return graph;
}

// StaticModule on every backend against the JIT on the same graph, each set run twice.
void expectEveryBackendMatchesJit(const std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<GraphInputs>& input_sets,
                                  double tolerance = 1e-5) {
  for (GemmBackend backend : kBackends) {
    SCOPED_TRACE(std::string("gemm_backend=") + toString(backend));
    StaticModuleOptions options;
    options.gemm_backend = backend;
    StaticModule module(graph, options);
    EXPECT_EQ(module.stats().fallback_ops.count("srt::fused_linear"), 0u);
    for (size_t set = 0; set < input_sets.size(); ++set) {
      const c10::IValue expected = runWithJit(graph, input_sets[set]).at(0);
      for (int run = 0; run < 2; ++run) {
        const c10::IValue actual = module(input_sets[set]);
        EXPECT_EQ(compareIValues(expected, actual, tolerance), "")
            << "input set " << set << ", run " << run;
      }
    }
  }
}

std::vector<GraphInputs> xOnly() {
  return {{torch::randn({5, 16})},
          {torch::randn({2, 3, 16})},
          {torch::randn({1, 16})},
          {torch::randn({0, 16})},
          {torch::randn({16})}};
}

class FusedLinearActivation : public ::testing::TestWithParam<std::string> {};

// One srt::fused_linear with the test's activation, no residual.
std::string activationGraph(const std::string& activation) {
  return R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %act : str = prim::Constant[value=")IR" +
         activation + R"IR("]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = srt::fused_linear(%x, %w, %b, %act, %none, %one, %false)
  return (%y))IR";
}

TEST_P(FusedLinearActivation, MatchesUnfusedOps) {
  expectEveryBackendMatchesJit(withConstantWeights(activationGraph(GetParam())), xOnly());
}

// Fewer than 8 outputs: each output of each row is one dot product (ops/gemm/onednn.cpp), up to
// 64k multiply-adds; above that (the 5000-row set) oneDNN again.
TEST_P(FusedLinearActivation, FewOutputsMatchUnfusedOps) {
  for (const int64_t outputs : {1, 3, 7}) {
    SCOPED_TRACE(outputs);
    std::vector<GraphInputs> inputs = xOnly();
    inputs.push_back({torch::randn({5000, 16})});
    expectEveryBackendMatchesJit(withConstantWeights(activationGraph(GetParam()), outputs), inputs);
  }
}

// A weight too large for the single-row copy (ops/gemm/onednn.cpp): single rows read oneDNN's
// packed blocks of columns in place; 1000 outputs end in a partial block, 40 features in a
// partial block of rows.
TEST_P(FusedLinearActivation, LargeWeightMatchesUnfusedOps) {
  expectEveryBackendMatchesJit(
      withConstantWeights(activationGraph(GetParam()), 1000, 40),
      {{torch::randn({1, 40})}, {torch::randn({40})}, {torch::randn({3, 40})}});
}

INSTANTIATE_TEST_SUITE_P(FusedGemm, FusedLinearActivation,
                         ::testing::Values("none", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh",
                                           "silu"));

constexpr const char* kResiduals = R"IR(
graph(%x : Tensor, %r : Tensor, %row : Tensor, %w : Tensor, %b : Tensor):
  %gelu : str = prim::Constant[value="gelu"]()
  %relu : str = prim::Constant[value="relu"]()
  %tanh : str = prim::Constant[value="tanh"]()
  %none_act : str = prim::Constant[value="none"]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %three : int = prim::Constant[value=3]()
  %half : float = prim::Constant[value=0.5]()
  %minus_two : float = prim::Constant[value=-2.]()
  %quarter : float = prim::Constant[value=0.25]()
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %a : Tensor = srt::fused_linear(%x, %w, %b, %gelu, %r, %one, %true)
  %c : Tensor = srt::fused_linear(%x, %w, %none, %none_act, %r, %half, %false)
  %d : Tensor = srt::fused_linear(%x, %w, %b, %relu, %r, %minus_two, %true)
  %e : Tensor = srt::fused_linear(%x, %w, %b, %none_act, %row, %three, %false)
  %f : Tensor = srt::fused_linear(%x, %w, %b, %tanh, %row, %quarter, %true)
  %out : (Tensor, Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %c, %d, %e, %f)
  return (%out))IR";

TEST(FusedGemm, ResidualInEitherOrderWithAlpha) {
  expectEveryBackendMatchesJit(
      withConstantWeights(kResiduals),
      {{torch::randn({5, 16}), torch::randn({5, 24}), torch::randn({24})},
       // One row: the single-row product, with the epilogue applied after it.
       {torch::randn({1, 16}), torch::randn({1, 24}), torch::randn({24})},
       {torch::randn({2, 3, 16}), torch::randn({2, 3, 24}), torch::randn({1, 24})},
       {torch::randn({2, 3, 16}), torch::randn({3, 24}), torch::randn({3, 1})},
       // A strided residual: the broadcasting path.
       {torch::randn({4, 16}), torch::randn({24, 4}).t(), torch::randn({24})}});
}

TEST(FusedGemm, LargeWeightWithResiduals) {
  expectEveryBackendMatchesJit(
      withConstantWeights(kResiduals, 1000, 40),
      {{torch::randn({1, 40}), torch::randn({1, 1000}), torch::randn({1000})},
       {torch::randn({1, 1, 40}), torch::randn({1, 1, 1000}), torch::randn({1, 1000})},
       {torch::randn({2, 40}), torch::randn({2, 1000}), torch::randn({1000})}});
}

// 2 to 128 rows on AVX-512 run ops/gemm/blocked_gemm.h on oneDNN's packed weight: 49 rows
// (tiles of 6 and 5), 122, 3 (one tile), 300 features (three depth blocks, the last not a
// multiple of 16), 1000 outputs (a partial last column block), and at 2 threads, split by column
// blocks (1000 outputs) or by rows (64 outputs: one block), on either kind of thread; 200 rows
// run oneDNN's kernel on the same weight.
// Sums of 300 products are summed in another order than ATen's: a wider tolerance.
TEST(FusedGemm, BlockedKernelTilesAndThreads) {
  constexpr double kTolerance = 1e-4;
  for (const auto& [outputs, features] : {std::pair<int64_t, int64_t>{1000, 300}, {64, 40}}) {
    SCOPED_TRACE(outputs);
    const auto graph = withConstantWeights(kResiduals, outputs, features);
    const std::vector<GraphInputs> inputs = {
        {torch::randn({49, features}), torch::randn({49, outputs}), torch::randn({outputs})},
        {torch::randn({2, 61, features}), torch::randn({2, 61, outputs}), torch::randn({outputs})},
        {torch::randn({200, features}), torch::randn({200, outputs}), torch::randn({outputs})},
        {torch::randn({3, features}), torch::randn({3, outputs}), torch::randn({1, outputs})}};
    expectEveryBackendMatchesJit(graph, inputs, kTolerance);
    StaticModule module(graph);
    for (const IntraOpWorkers workers : {IntraOpWorkers::kOwn, IntraOpWorkers::kOpenMp}) {
      RuntimeOptions options;
      options.intra_op_threads = 2;
      options.workers = workers;
      StaticRuntime runtime(module, options);
      for (size_t set = 0; set < inputs.size(); ++set) {
        const c10::IValue expected = runWithJit(graph, inputs[set]).at(0);
        for (int run = 0; run < 2; ++run) {
          EXPECT_EQ(compareIValues(expected, runtime(inputs[set]), kTolerance), "")
              << "input set " << set << ", run " << run << ", own workers "
              << (workers == IntraOpWorkers::kOwn);
        }
      }
    }
  }
}

TEST(FusedGemm, FewOutputsWithResiduals) {
  expectEveryBackendMatchesJit(
      withConstantWeights(kResiduals, 3),
      {{torch::randn({5, 16}), torch::randn({5, 3}), torch::randn({3})},
       {torch::randn({1, 16}), torch::randn({1, 3}), torch::randn({3})},
       {torch::randn({2, 3, 16}), torch::randn({2, 3, 3}), torch::randn({1, 3})}});
}

TEST(FusedGemm, FallsBackWhereTheFusedKernelCannotWriteInPlace) {
  // A residual larger than the linear's output, a double residual (promotes the result), a double
  // input, and a weight passed in (nothing to pre-pack).
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor, %r : Tensor, %rd : Tensor, %xd : Tensor, %wd : Tensor, %w : Tensor):
  %relu : str = prim::Constant[value="relu"]()
  %silu : str = prim::Constant[value="silu"]()
  %sigmoid : str = prim::Constant[value="sigmoid"]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %a : Tensor = srt::fused_linear(%x, %w, %none, %relu, %r, %one, %false)
  %c : Tensor = srt::fused_linear(%x, %w, %none, %silu, %rd, %one, %true)
  %d : Tensor = srt::fused_linear(%xd, %wd, %none, %sigmoid, %none, %one, %false)
  %out : (Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %c, %d)
  return (%out))IR");
  const auto dbl = torch::TensorOptions().dtype(torch::kFloat64);
  expectEveryBackendMatchesJit(
      graph, {{torch::randn({3, 16}), torch::randn({2, 3, 8}), torch::randn({3, 8}, dbl),
               torch::randn({3, 16}, dbl), torch::randn({8, 16}, dbl), torch::randn({8, 16})},
              {torch::randn({7, 16}), torch::randn({1, 7, 8}), torch::randn({8}, dbl),
               torch::randn({2, 16}, dbl), torch::randn({5, 16}, dbl), torch::randn({8, 16})}});
}

TEST(FusedGemm, UnknownActivationNamesTheChoices) {
  StaticModule module(withConstantWeights(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %act : str = prim::Constant[value="swish"]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = srt::fused_linear(%x, %w, %b, %act, %none, %one, %false)
  return (%y))IR"));
  EXPECT_THAT(
      [&] {
        (void)module({torch::randn({2, 16})});
      },
      ::testing::ThrowsMessage<c10::Error>(
          ::testing::HasSubstr("unknown activation 'swish'; expected none, relu")));
}

} // namespace
} // namespace srt::testing
