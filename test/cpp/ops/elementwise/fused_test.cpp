// srt::fused_elementwise: program text (parse, print, errors), the bytecode fast path against
// the ATen ops it fuses, and the node through StaticModule (kernel) against the JIT (reference).
#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "ops/elementwise/fused_bytecode.h"
#include "ops/elementwise/fused_program.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

using ops::fused::Bytecode;
using ops::fused::InputBinding;
using ops::fused::parseProgram;
using ops::fused::printProgram;

// --- program text ------------------------------------------------------------------------------

TEST(FusedElementwiseProgram, PrintsWhatItParses) {
  for (const std::string text : {
           "sigmoid(add(mul(x0, 0.5), x1))",
           "t0 = add(x0, x1, 2); mul(t0, sigmoid(t0))",
           "where(gt(x0, 0), x0, mul(x1, 0.1))",
           "clamp(x0, None, 6)",
           "clamp(x0, -0.5, 0.5)",
           "gelu(sub(x0, x1, 0.25), 'tanh')",
           "pow(rsub(x0, 1.0), 2)",
           "leaky_relu(div(x0, 3), 0.01)",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(printProgram(parseProgram(text)), text);
  }
}

TEST(FusedElementwiseProgram, NumbersRoundTripAndKeepTheirType) {
  using ops::fused::printNumber;
  EXPECT_EQ(printNumber(int64_t{2}), "2");
  EXPECT_EQ(printNumber(int64_t{-7}), "-7");
  EXPECT_EQ(printNumber(2.0), "2.0");
  EXPECT_EQ(printNumber(0.1), "0.1");
  EXPECT_EQ(printNumber(1e-5), "1e-05");
  EXPECT_EQ(printNumber(-0.0), "-0.0");
  EXPECT_EQ(printNumber(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(printNumber(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(printNumber(std::nan("")), "nan");
  for (const double value : {1.0 / 3.0, 1.702, 6.02214076e23, -1e-300, 0.044715}) {
    const auto program = parseProgram("mul(x0, " + printNumber(value) + ")");
    const c10::Scalar parsed = program.code[0].args[1].number;
    EXPECT_TRUE(parsed.isFloatingPoint());
    EXPECT_EQ(parsed.toDouble(), value);
  }
  EXPECT_TRUE(parseProgram("mul(x0, 3)").code[0].args[1].number.isIntegral(false));
}

TEST(FusedElementwiseProgram, SharedValuesAreBoundOnce) {
  const auto program = parseProgram("t0 = exp(x0); t1 = add(t0, x1); mul(t1, div(t0, t1))");
  EXPECT_EQ(program.code.size(), 4u);
  EXPECT_EQ(program.num_inputs, 2u);
  EXPECT_EQ(printProgram(program), "t0 = exp(x0); t1 = add(t0, x1); mul(t1, div(t0, t1))");
}

TEST(FusedElementwiseProgram, ErrorsNameThePositionAndTheProblem) {
  using ::testing::HasSubstr;
  auto error = [](const std::string& text) {
    try {
      parseProgram(text);
    } catch (const c10::Error& e) {
      return std::string(e.what_without_backtrace());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("frobnicate(x0)"), HasSubstr("unknown op 'frobnicate'"));
  EXPECT_THAT(error("add(x0)"), HasSubstr("add takes 2 to 3 operands, got 1"));
  EXPECT_THAT(error("mul(2, x0)"), HasSubstr("mul operand 0 must be an input or a computed value"));
  EXPECT_THAT(error("pow(x0, x1)"), HasSubstr("pow operand 1 must be a number literal"));
  EXPECT_THAT(error("relu(y)"), HasSubstr("unknown name 'y'"));
  EXPECT_THAT(error("relu(x0) x1"), HasSubstr("at character 9: expected the end of the program"));
  EXPECT_THAT(error("gelu(x0, 'erf')"), HasSubstr("'none' or 'tanh'"));
  EXPECT_THAT(error("relu(x0"), HasSubstr("expected ')'"));
}

// --- bytecode ------------------------------------------------------------------------------------

// Runs the bytecode of `text` on float32 tensors (or broadcast values) shaped like `like`.
at::Tensor runBytecode(const std::string& text, const std::vector<c10::IValue>& inputs,
                       at::IntArrayRef sizes) {
  std::string why;
  const std::optional<Bytecode> code =
      ops::fused::compile(parseProgram(text), static_cast<uint32_t>(inputs.size()), &why);
  EXPECT_TRUE(code.has_value()) << text << ": " << why;
  if (!code) {
    return {};
  }
  std::vector<InputBinding> bindings;
  for (const c10::IValue& input : inputs) {
    InputBinding binding;
    if (input.isTensor() && input.toTensor().numel() != 1) {
      binding.data = input.toTensor().data_ptr<float>();
    } else {
      binding.value = input.isTensor() ? input.toTensor().item<float>()
                                       : static_cast<float>(input.toScalar().toDouble());
    }
    bindings.push_back(binding);
  }
  at::Tensor out = torch::full(sizes, std::nanf(""));
  ops::fused::run(*code, bindings.data(), out.data_ptr<float>(), out.numel());
  return out;
}

void expectClose(const at::Tensor& expected, const at::Tensor& actual, double tolerance = 1e-6) {
  ASSERT_EQ(expected.sizes(), actual.sizes());
  ASSERT_EQ(expected.scalar_type(), actual.scalar_type());
  EXPECT_TRUE(torch::allclose(expected, actual, tolerance, tolerance, /*equal_nan=*/true))
      << "max difference " << (expected - actual).abs().nan_to_num(0).max().item<double>();
}

// Sizes around the vector width (16 floats with AVX-512) and the block (up to 1024), one split
// over threads, and zero.
const std::vector<int64_t> kSizes = {0, 1, 15, 16, 17, 100, 1023, 1024, 1025, 5000, 70001};

TEST(FusedElementwiseBytecode, MatchesTheAtenOpsItFuses) {
  struct Case {
    std::string program;
    std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> aten;
  };
  const std::vector<Case> cases = {
      {"sigmoid(add(mul(x0, 0.5), x1))",
       [](const at::Tensor& x, const at::Tensor& y) { return torch::sigmoid(x * 0.5 + y); }},
      {"t0 = add(x0, x1, 2); mul(t0, tanh(t0))",
       [](const at::Tensor& x, const at::Tensor& y) {
         const at::Tensor t = torch::add(x, y, 2);
         return t * torch::tanh(t);
       }},
      {"where(gt(x0, 0), x0, mul(x1, 0.1))",
       [](const at::Tensor& x, const at::Tensor& y) { return torch::where(x > 0, x, y * 0.1); }},
      {"rsub(clamp(sub(x0, x1, 0.5), -0.5, None), 1.0, 3)",
       [](const at::Tensor& x, const at::Tensor& y) {
         return torch::rsub(torch::clamp(torch::sub(x, y, 0.5), -0.5), 1.0, 3);
       }},
      {"div(pow(abs(x0), 1.5), add(sqrt(abs(x1)), 1))",
       [](const at::Tensor& x, const at::Tensor& y) {
         return torch::pow(x.abs(), 1.5) / (torch::sqrt(y.abs()) + 1);
       }},
      {"hardswish(silu(leaky_relu(neg(x0), 0.2)))",
       [](const at::Tensor& x, const at::Tensor&) {
         return torch::hardswish(torch::silu(torch::leaky_relu(-x, 0.2)));
       }},
      {"gelu(relu(x0), 'tanh')",
       [](const at::Tensor& x, const at::Tensor&) { return torch::gelu(torch::relu(x), "tanh"); }},
      {"mul(reciprocal(add(exp(x0), 1)), log(add(abs(x1), 1)))",
       [](const at::Tensor& x, const at::Tensor& y) {
         return torch::reciprocal(torch::exp(x) + 1) * torch::log(y.abs() + 1);
       }},
      {"add(rsqrt(add(mul(x0, x0), 1)), pow(x1, 2))",
       [](const at::Tensor& x, const at::Tensor& y) { return torch::rsqrt(x * x + 1) + y.pow(2); }},
      {"where(ne(x0, x1), clamp_max(x0, 0.25), clamp_min(x1, -0.25))",
       [](const at::Tensor& x, const at::Tensor& y) {
         return torch::where(x != y, torch::clamp_max(x, 0.25), torch::clamp_min(y, -0.25));
       }},
  };
  for (const int64_t n : kSizes) {
    const at::Tensor x = torch::randn({n});
    const at::Tensor y = torch::randn({n});
    for (const Case& c : cases) {
      SCOPED_TRACE(c.program + " on " + std::to_string(n) + " elements");
      expectClose(c.aten(x, y), runBytecode(c.program, {x, y}, {n}));
    }
  }
}

TEST(FusedElementwiseBytecode, BroadcastsScalarsAndOneElementTensors) {
  const at::Tensor x = torch::randn({3, 37});
  const at::Tensor one = torch::randn({1});
  expectClose(torch::sigmoid(x * one + 2.5),
              runBytecode("sigmoid(add(mul(x0, x1), x2))", {x, one, 2.5}, {3, 37}));
  expectClose(torch::where(x < one, one, x),
              runBytecode("where(lt(x0, x1), x1, x0)", {x, one}, {3, 37}));
}

TEST(FusedElementwiseBytecode, ReusesRegistersOfDeadValues) {
  // A long chain needs one register per step only while values are live: here one.
  const auto code = ops::fused::compile(
      parseProgram("exp(neg(sigmoid(tanh(relu(abs(add(mul(x0, 2), 1)))))))"), 1, nullptr);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(code->steps.size(), 8u);
  EXPECT_EQ(code->num_registers, 1u);
  EXPECT_EQ(code->constants.size(), 2u);
}

TEST(FusedElementwiseBytecode, DeclinesWhatOnlyTheReferenceRuns) {
  auto why = [](const std::string& text, uint32_t inputs = 2) {
    std::string reason;
    EXPECT_FALSE(ops::fused::compile(parseProgram(text), inputs, &reason).has_value()) << text;
    return reason;
  };
  EXPECT_THAT(why("where(x0, x1, 0.0)"), ::testing::HasSubstr("condition"));
  EXPECT_THAT(why("mul(x0, gt(x0, x1))"), ::testing::HasSubstr("comparison"));
  EXPECT_THAT(why("relu(gt(x0, x1))"), ::testing::HasSubstr("comparison"));
  EXPECT_THAT(why("clamp(x0, nan, 1)"), ::testing::HasSubstr("NaN"));
  EXPECT_THAT(why("add(x0, x1)", 1), ::testing::HasSubstr("reads x1"));
}

// --- the node: kernel (StaticModule) against reference (JIT) ---------------------------------

std::shared_ptr<torch::jit::Graph> fusedGraph(const std::string& program,
                                              const std::vector<std::string>& input_types) {
  std::string params;
  std::string args;
  for (size_t i = 0; i < input_types.size(); ++i) {
    params += (i ? ", " : "") + ("%x" + std::to_string(i) + " : " + input_types[i]);
    args += ", %x" + std::to_string(i);
  }
  return parsedGraph("graph(" + params + "):\n  %p : str = prim::Constant[value=\"" + program +
                     "\"]()\n  %y : Tensor = srt::fused_elementwise(%p" + args +
                     ")\n  return (%y)\n");
}

// The kernel's output for every input set matches the JIT's, run after run (the second run of
// a shape writes into the first one's output).
void expectKernelMatchesReference(const std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<std::vector<c10::IValue>>& input_sets) {
  StaticModule module(graph);
  EXPECT_EQ(module.stats().out_variant_nodes, 1u);
  EXPECT_EQ(module.stats().fallback_nodes, 0u);
  for (int round = 0; round < 2; ++round) {
    for (size_t set = 0; set < input_sets.size(); ++set) {
      const std::vector<c10::IValue> expected = runWithJit(graph, input_sets[set]);
      const c10::IValue actual = module(input_sets[set]);
      EXPECT_EQ(compareIValues(expected.at(0), actual), "") << "input set " << set;
    }
  }
}

TEST(FusedElementwise, KernelMatchesReferenceOnEveryLayout) {
  const auto graph = fusedGraph("t0 = add(mul(x0, 0.5), x1, 2); where(gt(t0, 0), t0, exp(t0))",
                                {"Tensor", "Tensor"});
  const at::Tensor wide = torch::randn({6, 40});
  expectKernelMatchesReference(
      graph,
      {
          {torch::randn({4, 33}), torch::randn({4, 33})},   // streamed
          {torch::randn({1025}), torch::randn({1025})},     // partial blocks
          {torch::randn({2, 3, 70001}), torch::randn({1})}, // threads, one value
          {torch::randn({5, 7}), torch::randn({})},         // 0-dim
          {torch::randn({1, 1, 1}), torch::randn({6, 2})},  // leading one dims
          {torch::randn({0, 5}), torch::randn({0, 5})},     // zero-size
          {torch::randn({0, 5}), torch::randn({1})},        // zero-size, broadcast
          {torch::randn({3, 4}).t(), torch::randn({4, 3})}, // transposed
          {torch::randn({4, 1}), torch::randn({1, 3})},     // both broadcast
          {torch::randn({7, 50}), torch::randn({50})},      // bias over rows
          {torch::randn({2, 3, 50}), torch::randn({3, 1})}, // per-row value
          {torch::randn({5, 1, 3}), torch::randn({1, 4, 1})},
          {wide.slice(1, 1, 40, 3), torch::randn({6, 13})},             // sliced, strided
          {torch::randn({3, 1}).expand({3, 500}), torch::randn({500})}, // expanded
          {torch::randn({2, 3, 4, 5}).permute({3, 1, 0, 2}), torch::randn({5, 3, 1, 4})},
          {torch::randn({2, 1, 2, 1, 2, 1, 2, 1, 2, 3}), torch::randn({3, 1, 3, 1, 3, 1, 3})},
      });
}

// The output is laid out as ATen lays out the ops' result: like the inputs of its shape where
// they agree on a dense layout (channels last, a permuted view, beside broadcast operands), read
// and written in that memory order; contiguous where they disagree. Run twice: the second run
// writes into the first one's output.
TEST(FusedElementwise, OutputTakesTheLayoutOfItsInputs) {
  const auto graph = fusedGraph("add(mul(relu(x0), x1), x2)", {"Tensor", "Tensor", "Tensor"});
  StaticModule module(graph);
  const auto channels_last = [](at::Tensor t) {
    return t.contiguous(at::MemoryFormat::ChannelsLast);
  };
  const at::Tensor cl = channels_last(torch::randn({2, 8, 5, 6}));
  const at::Tensor permuted = torch::randn({2, 5, 6, 8}).permute({0, 3, 1, 2});
  const at::Tensor sequence = torch::randn({3, 70, 9}).permute({0, 2, 1});
  const std::vector<std::pair<std::string, std::vector<c10::IValue>>> cases = {
      {"channels last", {cl, channels_last(torch::randn({2, 8, 5, 6})), cl}},
      {"broadcast scale",
       {cl, torch::randn({2, 8, 1, 1}), channels_last(torch::randn({2, 8, 5, 6}))}},
      {"permuted view",
       {permuted, torch::randn({8, 1, 1}), torch::randn({2, 5, 6, 8}).permute({0, 3, 1, 2})}},
      {"3-D, threads",
       {sequence, torch::randn({9, 1}), torch::randn({3, 70, 9}).permute({0, 2, 1})}},
  };
  for (int run = 0; run < 2; ++run) {
    for (const auto& [name, inputs] : cases) {
      const at::Tensor expected = runWithJit(graph, inputs).at(0).toTensor();
      const at::Tensor actual = module(inputs).toTensor();
      EXPECT_EQ(compareIValues(expected, actual), "") << name;
      EXPECT_EQ(actual.strides(), inputs[0].toTensor().strides()) << name;
      EXPECT_EQ(actual.strides(), expected.strides()) << name;
    }
    // Inputs of the output's shape in two layouts: contiguous, values as ATen's.
    const std::vector<c10::IValue> mixed = {cl, torch::randn({8, 1, 1}),
                                            torch::randn({2, 8, 5, 6})};
    const at::Tensor actual = module(mixed).toTensor();
    EXPECT_EQ(compareIValues(runWithJit(graph, mixed).at(0), actual), "");
    EXPECT_TRUE(actual.is_contiguous());
  }
}

TEST(FusedElementwise, OtherDtypesRunTheReference) {
  const auto graph = fusedGraph("sigmoid(add(mul(x0, 0.5), x1, 2))", {"Tensor", "Tensor"});
  expectKernelMatchesReference(
      graph, {
                 {torch::randn({3, 5}, torch::kDouble), torch::randn({3, 5})},
                 {torch::randint(-5, 5, {3, 5}), torch::randint(-5, 5, {3, 5})},
                 {torch::randn({3, 5}), torch::randn({}, torch::kDouble)}, // float32 result
                 {torch::randn({3, 5}), torch::randint(0, 3, {5}).to(torch::kBool)},
                 {torch::randn({3, 5}), torch::randn({3, 5})}, // and back to the fast path
             });
}

TEST(FusedElementwise, IntegerInputsPromoteAsTheUnfusedOpsDo) {
  // int * int stays int; int * 0.5 is float; x / 3 is float: the reference path keeps ATen's
  // promotion, the fast path is never taken for int tensors.
  const auto graph = fusedGraph("add(mul(x0, x1), div(x0, 3))", {"Tensor", "Tensor"});
  const at::Tensor a = torch::randint(-9, 10, {4, 6});
  const at::Tensor b = torch::randint(-9, 10, {4, 6});
  StaticModule module(graph);
  const at::Tensor out = module({a, b}).toTensor();
  EXPECT_EQ(out.scalar_type(), at::kFloat);
  expectClose(a * b + a / 3, out);
  expectKernelMatchesReference(graph, {{a, b}, {a.to(at::kFloat), b.to(at::kFloat)}});
  expectKernelMatchesReference(fusedGraph("relu(mul(x0, 2))", {"Tensor"}),
                               {{a}, {a.to(at::kFloat)}, {a.to(at::kBool)}});
}

TEST(FusedElementwise, ScalarInputsFromTheGraph) {
  const auto graph = fusedGraph("sigmoid(add(mul(x0, x1), x2, 2))", {"Tensor", "float", "int"});
  expectKernelMatchesReference(graph, {{torch::randn({3, 100}), 0.25, int64_t{3}},
                                       {torch::randn({17}), -1.5, int64_t{-2}},
                                       {torch::randint(0, 5, {6}), 0.5, int64_t{1}}});
}

TEST(FusedElementwise, ReferenceErrorsNameTheOp) {
  const auto graph = fusedGraph("relu(x0)", {"float"});
  StaticModule module(graph);
  EXPECT_THAT([&] { (void)module({1.5}); },
              ::testing::ThrowsMessage<c10::Error>(
                  ::testing::HasSubstr("relu operand 0 must be a Tensor")));
}

TEST(FusedElementwise, BadProgramFailsWhenTheModuleIsBuilt) {
  EXPECT_THAT(
      [] {
        StaticModule module(fusedGraph("add(x0, x3)", {"Tensor", "Tensor"}));
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("reads x3")));
}

} // namespace
} // namespace srt::testing
