// aten::lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell (ops/recurrent/cells.cpp) against the
// JIT: with and without biases, batch 1 (single-row products) and batch 3, each run twice; a
// cell stepped in a loop of the graph; weights known only at run time run ATen's op.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

constexpr int64_t kInputSize = 10;
constexpr int64_t kHidden = 36;

int64_t gates(const std::string& op) {
  return op == "lstm" ? 4 : op == "gru" ? 3 : 1;
}

torch::jit::Module cellModule(const std::string& op, bool bias, const std::string& body) {
  torch::jit::Module module("CellModule");
  const int64_t rows = gates(op) * kHidden;
  module.register_parameter("w_ih", torch::randn({rows, kInputSize}) * 0.3, false);
  module.register_parameter("w_hh", torch::randn({rows, kHidden}) * 0.2, false);
  if (bias) {
    module.register_parameter("b_ih", torch::randn({rows}) * 0.1, false);
    module.register_parameter("b_hh", torch::randn({rows}) * 0.1, false);
  }
  module.define(body);
  module.eval();
  return module;
}

std::string cellCall(const std::string& op, bool bias) {
  const std::string hx = op == "lstm" ? "[h, c]" : "h";
  const std::string biases = bias ? "self.b_ih, self.b_hh" : "None, None";
  return "torch." + op + "_cell(x, " + hx + ", self.w_ih, self.w_hh, " + biases + ")";
}

InputSet cellInputs(int64_t batch) {
  return {{torch::randn({batch, kInputSize}), torch::randn({batch, kHidden}),
           torch::randn({batch, kHidden})},
          {}};
}

class RecurrentCells : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(RecurrentCells, MatchesJit) {
  const auto& [op, bias] = GetParam();
  SCOPED_TRACE(op + (bias ? " with bias" : " without bias"));
  const torch::jit::Module module =
      cellModule(op, bias, "def forward(self, x, h, c):\n    return " + cellCall(op, bias) + "\n");
  expectMatchesJit(module, {cellInputs(1), cellInputs(3)}, {}, 1e-5);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.at("aten::" + op + "_cell"), std::set<KernelKind>{KernelKind::kOutVariant});
}

// A cell stepped over a sequence in the graph, as hand-written decoders do: each step's state is
// the last one's output.
TEST_P(RecurrentCells, SteppedInALoop) {
  const auto& [op, bias] = GetParam();
  const std::string step = op == "lstm" ? "        h, c = " + cellCall(op, bias) + "\n"
                                        : "        h = " + cellCall(op, bias) + "\n";
  const torch::jit::Module module = cellModule(op, bias, R"JIT(
def forward(self, xs, h, c):
    for i in range(xs.size(0)):
        x = xs[i]
)JIT" + step + "    return h, c\n");
  expectMatchesJit(
      module,
      {{{torch::randn({5, 1, kInputSize}), torch::randn({1, kHidden}), torch::randn({1, kHidden})},
        {}},
       {{torch::randn({3, 2, kInputSize}), torch::randn({2, kHidden}), torch::randn({2, kHidden})},
        {}}},
      {}, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(EveryCell, RecurrentCells,
                         ::testing::Combine(::testing::Values("lstm", "gru", "rnn_tanh",
                                                              "rnn_relu"),
                                            ::testing::Bool()));

// fp32_precision = bf16: a cell's input and hidden weights multiply in bfloat16. An input of 2101
// values: the bfloat16 product rounds x a chunk of pairs at a time (kPairChunk), the last pair
// padded; batch 1, 2, 4 and 7 (every row grouping of the product).
TEST(RecurrentCellsBf16, WithinRoundingOfFloat32) {
  StaticModuleOptions bf16;
  bf16.fp32_precision = Fp32Precision::kBf16;
  constexpr int64_t kWideInput = 2101;
  for (const std::string op : {"lstm", "gru"}) {
    SCOPED_TRACE(op);
    torch::jit::Module module("WideCell");
    const int64_t rows = gates(op) * kHidden;
    module.register_parameter("w_ih", torch::randn({rows, kWideInput}) * 0.02, false);
    module.register_parameter("w_hh", torch::randn({rows, kHidden}) * 0.2, false);
    module.register_parameter("b_ih", torch::randn({rows}) * 0.1, false);
    module.register_parameter("b_hh", torch::randn({rows}) * 0.1, false);
    module.define("def forward(self, x, h, c):\n    return " + cellCall(op, true) + "\n");
    module.eval();
    std::vector<InputSet> inputs;
    for (const int64_t batch : {1, 2, 4, 7}) {
      inputs.push_back({{torch::randn({batch, kWideInput}), torch::randn({batch, kHidden}),
                         torch::randn({batch, kHidden})},
                        {}});
    }
    expectMatchesJit(module, inputs, bf16, 3e-2);
    EXPECT_EQ(kernelKinds(StaticModule(module, bf16)).at("aten::" + op + "_cell"),
              std::set<KernelKind>{KernelKind::kOutVariant});
  }
}

TEST(RecurrentCellsDecline, WeightsAsArguments) {
  const std::string source = R"JIT(
def forward(self, x, h, w_ih, w_hh):
    return torch.gru_cell(x, h, w_ih, w_hh)
)JIT";
  expectMatchesJit(
      scriptModule(source),
      {{{torch::randn({2, 4}), torch::randn({2, 3}), torch::randn({9, 4}), torch::randn({9, 3})},
        {}}},
      {}, 1e-5);
  const auto kinds = kernelKinds(StaticModule(scriptModule(source)));
  EXPECT_EQ(kinds.at("aten::gru_cell"), std::set<KernelKind>{KernelKind::kFallback});
}

} // namespace
} // namespace srt::testing
