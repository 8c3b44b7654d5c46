// aten::lstm / gru / rnn_tanh / rnn_relu (ops/recurrent/layers.cpp) against the JIT: every mode,
// 1 and 2 layers, one and two directions, batch first or not, initial states given or zeros made
// in the graph, with and without biases, LSTMs with proj_size; batch 1 (the single-row product) and
// batch 3 (the GEMM), each input set run twice. Then what runs ATen's op instead.
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "memory/allocation_counter.h"
#include "ops/core/multiply_precision.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

constexpr int64_t kInputSize = 6;
// Not a multiple of a vector (the gate loops' tails) and more than one column block of gates.
constexpr int64_t kHidden = 20;

struct Config {
  std::string op; // lstm, gru, rnn_tanh, rnn_relu
  int64_t layers;
  bool bidirectional;
  bool batch_first;
  bool initial_state; // h0 (and c0) as inputs, else zeros made in the graph
  bool bias;
  int64_t hidden = kHidden;
  int64_t proj = 0; // an LSTM's proj_size, 0 for none

  int64_t stateSize() const { return proj > 0 ? proj : hidden; }
};

int64_t gates(const std::string& op) {
  return op == "lstm" ? 4 : op == "gru" ? 3 : 1;
}

// PyTorch's flat weight list: per layer and direction w_ih, w_hh[, b_ih, b_hh][, w_hr].
c10::List<at::Tensor> flatWeights(const Config& c, at::ScalarType dtype = at::kFloat) {
  c10::List<at::Tensor> params;
  const int64_t directions = c.bidirectional ? 2 : 1;
  const double bound = 1.0 / std::sqrt(static_cast<double>(c.hidden));
  const auto uniform = [&](at::IntArrayRef shape) {
    return (torch::rand(shape) * (2 * bound) - bound).to(dtype);
  };
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    const int64_t input = layer == 0 ? kInputSize : directions * c.stateSize();
    for (int64_t d = 0; d < directions; ++d) {
      params.push_back(uniform({gates(c.op) * c.hidden, input}));
      params.push_back(uniform({gates(c.op) * c.hidden, c.stateSize()}));
      if (c.bias) {
        params.push_back(uniform({gates(c.op) * c.hidden}));
        params.push_back(uniform({gates(c.op) * c.hidden}));
      }
      if (c.proj > 0) {
        params.push_back(uniform({c.proj, c.hidden}));
      }
    }
  }
  return params;
}

std::string pyBool(bool b) {
  return b ? "True" : "False";
}

torch::jit::Module recurrentModule(const Config& c, bool train = false, double dropout = 0.0,
                                   at::ScalarType dtype = at::kFloat) {
  torch::jit::Module module("RecurrentModule");
  module.register_attribute("params", c10::ListType::ofTensors(), flatWeights(c, dtype));
  const int64_t states = c.layers * (c.bidirectional ? 2 : 1);
  std::ostringstream src;
  const std::string hx = c.op == "lstm" ? "[h0, c0]" : "h0";
  const std::string tail = ", self.params, " + pyBool(c.bias) + ", " + std::to_string(c.layers) +
                           ", " + std::to_string(dropout) + ", " + pyBool(train) + ", " +
                           pyBool(c.bidirectional) + ", " + pyBool(c.batch_first) + ")";
  if (c.initial_state) {
    src << "def forward(self, x, h0, c0):\n";
  } else {
    src << "def forward(self, x):\n"
        << "    h0 = torch.zeros([" << states << ", x.size(" << (c.batch_first ? 0 : 1) << "), "
        << c.stateSize() << "])\n"
        << "    c0 = torch.zeros([" << states << ", x.size(" << (c.batch_first ? 0 : 1) << "), "
        << c.hidden << "])\n";
  }
  src << "    return torch." << c.op << "(x, " << hx << tail << "\n";
  module.define(src.str());
  module.eval();
  return module;
}

// Sequence input for `batch` x `steps`, with initial states when the config takes them.
InputSet sequence(const Config& c, int64_t batch, int64_t steps) {
  const int64_t states = c.layers * (c.bidirectional ? 2 : 1);
  std::vector<c10::IValue> args{c.batch_first ? torch::randn({batch, steps, kInputSize})
                                              : torch::randn({steps, batch, kInputSize})};
  if (c.initial_state) {
    args.emplace_back(torch::randn({states, batch, c.stateSize()}));
    args.emplace_back(torch::randn({states, batch, c.hidden}));
  }
  return {args, {}};
}

std::string describe(const Config& c) {
  std::ostringstream s;
  s << c.op << " layers=" << c.layers << " bidirectional=" << c.bidirectional
    << " batch_first=" << c.batch_first << " initial_state=" << c.initial_state
    << " bias=" << c.bias << " proj=" << c.proj;
  return s.str();
}

class RecurrentLayers
    : public ::testing::TestWithParam<std::tuple<std::string, int64_t, bool, bool, bool, bool>> {};

TEST_P(RecurrentLayers, MatchesJit) {
  const auto& [op, layers, bidirectional, batch_first, initial_state, bias] = GetParam();
  const Config c{op, layers, bidirectional, batch_first, initial_state, bias};
  SCOPED_TRACE(describe(c));
  const torch::jit::Module module = recurrentModule(c);
  expectMatchesJit(module, {sequence(c, 1, 5), sequence(c, 3, 4)}, {}, 1e-5);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.at("aten::" + op), std::set<KernelKind>{KernelKind::kOutVariant});
}

INSTANTIATE_TEST_SUITE_P(
    EveryMode, RecurrentLayers,
    ::testing::Combine(::testing::Values("lstm", "gru", "rnn_tanh", "rnn_relu"),
                       ::testing::Values(1, 2), ::testing::Bool(), ::testing::Bool(),
                       ::testing::Bool(), ::testing::Bool()));

// LSTM with proj_size (h = w_hr @ (o * tanh(c)), h0 / h_n / the outputs of proj_size columns,
// c of hidden): every configuration, batch 1, 3 and 70 (the GEMM), and its packed sequences.
class ProjectedLstm : public ::testing::TestWithParam<std::tuple<int64_t, bool, bool, bool, bool>> {
};

TEST_P(ProjectedLstm, MatchesJit) {
  const auto& [layers, bidirectional, batch_first, initial_state, bias] = GetParam();
  Config c{"lstm", layers, bidirectional, batch_first, initial_state, bias};
  c.proj = 7;
  SCOPED_TRACE(describe(c));
  const torch::jit::Module module = recurrentModule(c);
  expectMatchesJit(module, {sequence(c, 1, 5), sequence(c, 3, 4), sequence(c, 70, 2)}, {}, 1e-5);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.at("aten::lstm"), std::set<KernelKind>{KernelKind::kOutVariant});
}

INSTANTIATE_TEST_SUITE_P(EveryConfiguration, ProjectedLstm,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool()));

// Three layers use both intermediate buffers; a long sequence, a non-contiguous input, a large
// batch.
TEST(RecurrentLayersShapes, DeepWideAndStridedInput) {
  for (const std::string op : {"lstm", "gru"}) {
    const Config c{op, 3, true, false, true, true};
    SCOPED_TRACE(describe(c));
    const torch::jit::Module module = recurrentModule(c);
    InputSet strided = sequence(c, 2, 9);
    strided.args[0] = torch::randn({2, 9, kInputSize}).transpose(0, 1);
    // Batch 70: past the packed-weight row products, cblas_sgemm per step.
    expectMatchesJit(module, {sequence(c, 1, 40), strided, sequence(c, 70, 3)}, {}, 1e-5);
  }
}

// Directions on two threads: a hidden state wide enough for the cost model to split, batch 2
// (row products) and 12 (the GEMM).
TEST(RecurrentLayersShapes, DirectionsInParallel) {
  struct TwoThreads {
    int previous = at::get_num_threads();
    TwoThreads() { at::set_num_threads(2); }
    ~TwoThreads() { at::set_num_threads(previous); }
  } two_threads;
  for (const std::string op : {"lstm", "gru", "rnn_relu"}) {
    Config c{op, 2, true, true, true, true};
    c.hidden = 128;
    SCOPED_TRACE(describe(c));
    expectMatchesJit(recurrentModule(c), {sequence(c, 2, 30), sequence(c, 12, 9)}, {}, 1e-5);
  }
  Config projected{"lstm", 2, true, true, true, true};
  projected.hidden = 128;
  projected.proj = 40;
  SCOPED_TRACE(describe(projected));
  expectMatchesJit(recurrentModule(projected),
                   {sequence(projected, 2, 30), sequence(projected, 12, 9)}, {}, 1e-5);
}

// The same directions on the runtime's own workers (RuntimeOptions::workers; on by default under
// OMP_WAIT_POLICY=PASSIVE), each input twice, then the first again.
TEST(RecurrentLayersShapes, DirectionsOnOwnWorkers) {
  for (const std::string op : {"lstm", "gru"}) {
    Config c{op, 2, true, true, true, true};
    c.hidden = 128;
    SCOPED_TRACE(describe(c));
    torch::jit::Module module = recurrentModule(c);
    StaticModule prepared(module);
    RuntimeOptions options;
    options.intra_op_threads = 2;
    options.workers = IntraOpWorkers::kOwn;
    StaticRuntime runtime(prepared, options);
    const std::vector<InputSet> inputs = {sequence(c, 1, 30), sequence(c, 12, 9)};
    for (const InputSet* input : {&inputs[0], &inputs[0], &inputs[1], &inputs[1], &inputs[0]}) {
      const auto expected = module.forward(input->args).toTuple()->elements();
      const auto actual = runtime(input->args).toTuple()->elements();
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(torch::allclose(actual[i].toTensor(), expected[i].toTensor(), 1e-5, 1e-5))
            << "output " << i << " for input " << input->args[0].toTensor().sizes();
      }
    }
  }
}

// The packed-sequence overloads (pack_padded_sequence's data and batch sizes): sequences
// ending at different steps keep their own last state in h_n and c_n; in the reverse direction
// each starts at its own last step from h0. Batch 3 and, after it, 10 (the GEMM).
class PackedSequences : public ::testing::TestWithParam<std::tuple<std::string, int64_t, bool>> {};

TEST_P(PackedSequences, MatchesJit) {
  const auto& [op, layers, bidirectional] = GetParam();
  // An LSTM also with proj_size.
  for (const int64_t proj : op == "lstm" ? std::vector<int64_t>{0, 5} : std::vector<int64_t>{0}) {
    Config c{op, layers, bidirectional, false, true, true};
    c.proj = proj;
    SCOPED_TRACE(describe(c));
    torch::jit::Module module("PackedModule");
    module.register_attribute("params", c10::ListType::ofTensors(), flatWeights(c));
    const std::string hx = op == "lstm" ? "[h0, c0]" : "h0";
    module.define("def forward(self, data, batch_sizes, h0, c0):\n    return torch." + op +
                  "(data, batch_sizes, " + hx + ", self.params, True, " + std::to_string(layers) +
                  ", 0.0, False, " + pyBool(bidirectional) + ")\n");
    module.eval();
    const int64_t states = layers * (bidirectional ? 2 : 1);
    const auto packed = [&](std::vector<int64_t> batch_sizes) {
      int64_t rows = 0;
      for (int64_t b : batch_sizes) {
        rows += b;
      }
      const int64_t batch = batch_sizes.front();
      return InputSet{{torch::randn({rows, kInputSize}), torch::tensor(batch_sizes, torch::kLong),
                       torch::randn({states, batch, c.stateSize()}),
                       torch::randn({states, batch, c.hidden})},
                      {}};
    };
    expectMatchesJit(module, {packed({3, 3, 2, 1, 1}), packed({10, 9, 9, 4, 2, 1}), packed({1})},
                     {}, 1e-5);
    const auto kinds = kernelKinds(StaticModule(module));
    EXPECT_EQ(kinds.at("aten::" + op), std::set<KernelKind>{KernelKind::kOutVariant});
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMode, PackedSequences,
                         ::testing::Combine(::testing::Values("lstm", "gru", "rnn_tanh",
                                                              "rnn_relu"),
                                            ::testing::Values(1, 2), ::testing::Bool()));

// pad_packed_sequence's op (ops/recurrent/packed_sequence.cpp): sequences packed from a padded
// batch, padded again, batch first or not, with a padding value and a total length longer than
// the longest sequence, or 0; the lengths as ATen counts them.
TEST(PackedSequencePadding, MatchesJit) {
  const char* source = R"JIT(
def forward(self, x, lengths, batch_first: bool, total_length: int):
    data, batch_sizes = torch._pack_padded_sequence(x, lengths, batch_first)
    doubled = data * 2.0
    padded, counted = torch._pad_packed_sequence(doubled, batch_sizes, batch_first, -1.5, total_length)
    return padded, counted, padded.stride()
)JIT";
  std::vector<InputSet> sets;
  for (const bool batch_first : {false, true}) {
    for (const int64_t total_length : {0, 9}) {
      const auto padded = [&](int64_t steps, int64_t batch) {
        return batch_first ? torch::randn({batch, steps, 3}) : torch::randn({steps, batch, 3});
      };
      sets.push_back(
          {{padded(6, 3), torch::tensor({6, 4, 1}, torch::kLong), batch_first, total_length}, {}});
      sets.push_back(
          {{padded(7, 1), torch::tensor({7}, torch::kLong), batch_first, total_length}, {}});
    }
  }
  expectMatchesJit(source, sets);
  const auto kinds = kernelKinds(StaticModule(scriptModule(source)));
  EXPECT_EQ(kinds.at("aten::_pad_packed_sequence"), std::set<KernelKind>{KernelKind::kOutVariant});
}

TEST(PackedSequencePadding, ATooShortTotalLengthIsAClearError) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, data, batch_sizes, total_length: int):
    return torch._pad_packed_sequence(data, batch_sizes, False, 0.0, total_length)[0]
)JIT"));
  const at::Tensor data = torch::randn({5, 2});
  const at::Tensor batch_sizes = torch::tensor({2, 2, 1}, torch::kLong);
  try {
    static_cast<void>(module({data, batch_sizes, 2}));
    FAIL() << "expected an error";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find("total_length"), std::string::npos) << error.what();
  }
  const at::Tensor padded = module({data, batch_sizes, 0}).toTensor();
  EXPECT_TRUE(torch::equal(
      padded, std::get<0>(at::_pad_packed_sequence(data, batch_sizes, false, 0.0, 0))));
}

// fp32_precision = bf16: the weights packed as bfloat16 (the hidden products on vdpbf16ps, the
// input projections on oneDNN's bfloat16 matmul). Every mode, two layers both ways, an LSTM with
// an odd proj_size (a hidden weight of odd rows, paired with zero); batch 1 and 3 (row products)
// and 70 (float32's GEMM per step): within bfloat16's rounding of the JIT, and on a CPU that
// multiplies bfloat16, not float32's results exactly (the bfloat16 kernels ran).
TEST(RecurrentLayersBf16, WithinRoundingOfFloat32) {
  StaticModuleOptions bf16;
  bf16.fp32_precision = Fp32Precision::kBf16;
  for (const std::string op : {"lstm", "gru", "rnn_tanh", "rnn_relu"}) {
    for (const int64_t proj : op == "lstm" ? std::vector<int64_t>{0, 7} : std::vector<int64_t>{0}) {
      Config c{op, 2, true, true, true, true};
      c.proj = proj;
      SCOPED_TRACE(describe(c));
      const torch::jit::Module module = recurrentModule(c);
      expectMatchesJit(module, {sequence(c, 1, 5), sequence(c, 3, 4), sequence(c, 70, 2)}, bf16,
                       3e-2);
      EXPECT_EQ(kernelKinds(StaticModule(module, bf16)).at("aten::" + op),
                std::set<KernelKind>{KernelKind::kOutVariant});
      if (ops::cpuMultipliesBFloat16()) {
        const std::vector<c10::IValue> args = sequence(c, 1, 5).args;
        const at::Tensor ieee = StaticModule(module)(args).toTupleRef().elements()[0].toTensor();
        const at::Tensor rounded =
            StaticModule(module, bf16)(args).toTupleRef().elements()[0].toTensor();
        EXPECT_GT((ieee - rounded).abs().max().item<double>(), 1e-6);
      }
    }
  }
}

// At fixed shapes, with the outputs managed too, runs after the first two allocate no tensor
// memory: outputs in the planned arena, the loop's buffers and oneDNN's scratchpad in the node's
// planned scratch.
TEST(RecurrentLayersMemory, NothingAllocatedInSteadyState) {
  for (const std::string op : {"lstm", "gru"}) {
    const Config c{op, 2, true, true, true, true};
    SCOPED_TRACE(describe(c));
    StaticModuleOptions options;
    options.manage_output_tensors = true;
    StaticModule module(recurrentModule(c), options);
    StaticRuntime runtime(module);
    const InputSet inputs = sequence(c, 1, 6);
    for (int run = 1; run <= 2; ++run) {
      (void)runtime(inputs.args);
      runtime.deallocateOutputTensors();
    }
    AllocationCounter counter;
    for (int run = 3; run <= 20; ++run) {
      (void)runtime(inputs.args);
      runtime.deallocateOutputTensors();
    }
    EXPECT_EQ(counter.allocations(), 0u);
  }
}

// Dropout between layers in training draws random numbers: ATen's op runs the node.
TEST(RecurrentLayersDecline, TrainingWithDropout) {
  const Config c{"lstm", 2, false, false, true, true};
  const auto kinds = kernelKinds(StaticModule(recurrentModule(c, true, 0.5)));
  EXPECT_EQ(kinds.at("aten::lstm"), std::set<KernelKind>{KernelKind::kFallback});
}

// Weights passed at run time cannot be packed at build: ATen's op, same results.
TEST(RecurrentLayersDecline, WeightsAsArguments) {
  const std::string source = R"JIT(
def forward(self, x, h0, params: List[Tensor]):
    return torch.gru(x, h0, params, True, 1, 0.0, False, False, False)
)JIT";
  const Config c{"gru", 1, false, false, true, true};
  const c10::List<at::Tensor> params = flatWeights(c);
  expectMatchesJit(
      scriptModule(source),
      {{{torch::randn({4, 2, kInputSize}), torch::randn({1, 2, kHidden}), params}, {}}}, {}, 1e-5);
  const auto kinds = kernelKinds(StaticModule(scriptModule(source)));
  EXPECT_EQ(kinds.at("aten::gru"), std::set<KernelKind>{KernelKind::kFallback});
}

// A hidden state of the wrong batch gets ATen's error, and the runtime works after it; a double
// input gets ATen's result.
TEST(RecurrentLayersDecline, BadStateAndOtherDtypeGoToAten) {
  const Config c{"rnn_tanh", 1, false, false, true, true};
  StaticModule module(recurrentModule(c));
  EXPECT_THROW((void)module({torch::randn({4, 2, kInputSize}), torch::randn({1, 3, kHidden}),
                             torch::randn({1, 3, kHidden})}),
               c10::Error);
  const InputSet good = sequence(c, 2, 4);
  const at::Tensor after = module(good.args).toTupleRef().elements()[0].toTensor();
  EXPECT_EQ(after.sizes(), (std::vector<int64_t>{4, 2, kHidden}));

  expectMatchesJit(recurrentModule(c, false, 0.0, at::kDouble),
                   {{{torch::randn({4, 2, kInputSize}, torch::kDouble),
                      torch::randn({1, 2, kHidden}, torch::kDouble),
                      torch::randn({1, 2, kHidden}, torch::kDouble)},
                     {}}},
                   {}, 1e-9);
}

} // namespace
} // namespace srt::testing
