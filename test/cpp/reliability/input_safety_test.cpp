// What a caller hands us and what it gets back: inputs are never written (unless TorchScript
// itself writes them), outputs never point into the runtime's arena and stay valid across later
// runs, and tensors the runtime cannot run are refused up front with the input's name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/zoo.h"

namespace srt::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// ---------------------------------------------------------------------------------------------
// Caller tensors are never written. expectMatchesJit checks every input byte for byte after every
// run (the zoo runs through it); these tests check the check, and the one exception.

TEST(InputBytes, NoticesAWriteAnywhereInTheStorageAndAResize) {
  at::Tensor base = torch::randn({4, 4});
  at::Tensor view = base.slice(0, 1, 3); // shows rows 1..2 of a 4-row storage
  const TensorBytes before(c10::ivalue::Tuple::create({view, int64_t{3}}));
  EXPECT_EQ(before.compare(c10::ivalue::Tuple::create({view, int64_t{3}}), "args"), "");
  base[3][3] = -base[3][3].item<float>(); // outside the view, inside its storage
  EXPECT_THAT(before.compare(c10::ivalue::Tuple::create({view, int64_t{3}}), "args"),
              AllOf(HasSubstr("args[0]: byte 63 of 64 in its storage was written")));
  at::Tensor resized = torch::randn({3});
  const TensorBytes resized_before(resized);
  resized.resize_({2});
  EXPECT_THAT(resized_before.compare(resized, "'y'"), HasSubstr("'y': dtype, sizes"));
}

TEST(InputBytes, NegativeZeroCountsAsAWrite) {
  // Value comparisons miss these; byte comparison does not.
  at::Tensor x = torch::zeros({2});
  const TensorBytes before(x);
  x[1] = -0.0;
  EXPECT_THAT(before.compare(x, "'x'"), HasSubstr("'x': byte 7"));
}

// A model that writes into its argument in TorchScript: the JIT writes into the caller's tensor,
// and so must we (same semantics); the harness then compares with what the JIT left behind.
constexpr const char* kWritesItsInput = R"JIT(
def forward(self, x, y):
    x.add_(1)
    y[0] = 0.0
    return x * 2 + y.sum()
)JIT";

TEST(InputWrites, WhereTorchScriptWritesAnInputWeWriteTheSame) {
  expectMatchesJit(kWritesItsInput, {{{torch::randn({3, 4}), torch::randn({5})}, {}},
                                     {{torch::randn({2, 2}), torch::randn({3})}, {}}});

  StaticModule module(scriptModule(kWritesItsInput));
  at::Tensor x = torch::zeros({2});
  at::Tensor y = torch::ones({2});
  (void)module({x, y});
  EXPECT_TRUE(torch::equal(x, torch::ones({2}))) << "x.add_(1) must reach the caller's x";
  EXPECT_TRUE(torch::equal(y, torch::tensor({0.f, 1.f})));
}

// Views and in-place ops on intermediates next to the inputs: none may reach back into an input.
constexpr const char* kInPlaceOnViews = R"JIT(
def forward(self, x, y):
    a = x.clone()
    v = a.view(-1)
    v.mul_(2)
    t = y.t()
    b = t.contiguous()
    b.add_(1)
    return a.relu_(), b, x[0], y.t()
)JIT";

TEST(InputWrites, InPlaceOpsOnCopiesLeaveInputsUntouched) {
  at::Tensor storage = torch::randn({6, 4});
  // y.t() is never contiguous here, so `contiguous()` copies and b.add_(1) writes only the copy.
  expectMatchesJit(kInPlaceOnViews,
                   {{{torch::randn({3, 4}), torch::randn({4, 3})}, {}},
                    // Views into larger storages.
                    {{storage.slice(0, 1, 4), torch::randn({4, 6}).slice(1, 0, 3)}, {}}});
}

// Found by the harness's input check: when y.t() is already contiguous, TorchScript's
// `contiguous()` returns y.t() itself, so b.add_(1) writes into the caller's y (the JIT does).
// Our aten::contiguous (and aten::to) kernels copy (ops/shapes/conversions.cpp); a node whose
// result is written in place keeps the JIT's aliasing operator, so the write reaches y as in the
// JIT.
TEST(InputWrites, ContiguousOfAContiguousInputAliasesItLikeTheJit) {
  expectMatchesJit(kInPlaceOnViews, {{{torch::randn({3, 4}), torch::randn({3, 4}).t()}, {}},
                                     {{torch::randn({2, 4}), torch::randn({2, 4}).t()}, {}}});
}

// ---------------------------------------------------------------------------------------------
// Outputs never alias the arena (unless manage_output_tensors), and stay what they were.

// Outputs that are views of planned-looking intermediates, and intermediates themselves.
constexpr const char* kViewOutputs = R"JIT(
def forward(self, x):
    a = torch.relu(x * 2)
    b = torch.matmul(a, a.t())
    c = torch.softmax(b, 1)
    return a.t(), c[1:], b.view(-1), torch.chunk(c, 2)[1], torch.tanh(b)
)JIT";

// Every tensor in `value`, with its position.
void collectTensors(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) {
      collectTensors(element, out);
    }
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toList()) {
      collectTensors(element, out);
    }
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      collectTensors(entry.value(), out);
    }
  }
}

std::string outputInArena(const StaticRuntime& runtime, const c10::IValue& outputs) {
  std::vector<at::Tensor> tensors;
  collectTensors(outputs, tensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (t.defined() && t.has_storage() && runtime.arenaContains(t.storage().data())) {
      return "output tensor " + std::to_string(i) + " lives in the runtime's arena";
    }
  }
  return "";
}

// Runs `first`, keeps its outputs, runs every set of `others` (twice, so the second is planned),
// and checks after each run that the kept outputs never pointed into the arena and still hold
// exactly the bytes they were returned with.
void expectOutputsAreTheCallers(const torch::jit::Module& jit, const InputSet& first,
                                const std::vector<InputSet>& others,
                                const StaticModuleOptions& options) {
  SCOPED_TRACE(describe(options));
  StaticModule module(jit, options);
  StaticRuntime runtime(module);
  // Twice: the first run only learns sizes, the second runs in the arena.
  for (int run = 0; run < 2; ++run) {
    c10::IValue kept = runtime(first.args, first.kwargs);
    if (options.manage_output_tensors) {
      // The documented exception: outputs live in the runtime until handed back, but in the
      // output arena, never among the intermediates.
      EXPECT_EQ(outputInArena(runtime, kept), "");
      runtime.deallocateOutputTensors();
      continue;
    }
    EXPECT_EQ(outputInArena(runtime, kept), "") << "run " << run;
    const TensorBytes returned(kept);
    for (const InputSet& set : others) {
      for (int again = 0; again < 2; ++again) {
        c10::IValue other = runtime(set.args, set.kwargs);
        EXPECT_EQ(outputInArena(runtime, other), "");
        EXPECT_EQ(returned.compare(kept, "kept output"), "")
            << "a later run changed what an earlier run returned";
      }
    }
  }
}

TEST(OutputAliasing, ViewAndIntermediateOutputsAreNeverInTheArena) {
  torch::manual_seed(0);
  torch::jit::Module jit = scriptModule(kViewOutputs);
  const InputSet first{{torch::randn({6, 5})}, {}};
  const std::vector<InputSet> others{{{torch::randn({8, 3})}, {}}, {{torch::randn({6, 5})}, {}}};
  for (const StaticModuleOptions& options : allValidOptions()) {
    expectOutputsAreTheCallers(jit, first, others, options);
  }
}

TEST(OutputAliasing, ZooOutputsAreNeverInTheArenaAndOutliveLaterRuns) {
  for (const std::string& name : zooModelNames()) {
    SCOPED_TRACE(name);
    const std::vector<InputSet> sets = loadZooInputs(name);
    ASSERT_GE(sets.size(), 2u);
    StaticModuleOptions with_copies;
    with_copies.use_copy_variants = with_copies.use_maybe_copy_variants = true;
    for (const StaticModuleOptions& options : {StaticModuleOptions{}, with_copies}) {
      expectOutputsAreTheCallers(loadZooModel(name), sets[0],
                                 std::vector<InputSet>(sets.begin() + 1, sets.end()), options);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Tensors the runtime cannot run are refused before any kernel runs, naming the input.

constexpr const char* kTwoInputs = R"JIT(
def forward(self, x, y):
    return torch.relu(x) + y
)JIT";

constexpr const char* kListInput = R"JIT(
def forward(self, xs: List[Tensor], scale: float = 2.0):
    return torch.cat(xs, 0) * scale
)JIT";

StaticModule& twoInputs() {
  static StaticModule module(scriptModule(kTwoInputs));
  return module;
}

// After a refusal the module still runs, and still refuses.
void expectStillWorks(StaticModule& module) {
  const at::Tensor x = torch::randn({2, 3});
  const at::Tensor y = torch::randn({2, 3});
  EXPECT_TRUE(torch::allclose(module({x, y}).toTensor(), torch::relu(x) + y));
}

TEST(InputRefusal, MetaTensorsAreRefusedNamingTheInput) {
  const at::Tensor meta = torch::empty({2, 3}, torch::device(torch::kMeta));
  EXPECT_THAT(
      [&] {
        (void)twoInputs()({torch::randn({2, 3}), meta});
      },
      ThrowsMessage<c10::Error>(AllOf(HasSubstr("input 'y' (argument 1) is on device meta"),
                                      HasSubstr("expected a CPU tensor"))));
  // By keyword too: the name is the argument's, wherever it was passed.
  EXPECT_THAT(
      [&] {
        (void)twoInputs()({}, {{"x", meta}, {"y", torch::randn({2, 3})}});
      },
      ThrowsMessage<c10::Error>(HasSubstr("input 'x' (argument 0) is on device meta")));
  expectStillWorks(twoInputs());
}

TEST(InputRefusal, SparseAndQuantizedTensorsAreRefusedNamingTheInput) {
  const at::Tensor dense = torch::randn({2, 3});
  EXPECT_THAT(
      [&] {
        (void)twoInputs()({dense.to_sparse(), dense});
      },
      ThrowsMessage<c10::Error>(AllOf(HasSubstr("input 'x' (argument 0) has layout Sparse"),
                                      HasSubstr("expected a dense (strided) tensor"))));
  const at::Tensor quantized = torch::quantize_per_tensor(dense, 0.1, 0, torch::kQInt8);
  EXPECT_THAT(
      [&] {
        (void)twoInputs()({dense, quantized});
      },
      ThrowsMessage<c10::Error>(AllOf(HasSubstr("input 'y' (argument 1) is a quantized"),
                                      HasSubstr("QInt8"), HasSubstr(".dequantize()"))));
  expectStillWorks(twoInputs());
}

TEST(InputRefusal, TensorsInsideListsAreCheckedWithTheirPosition) {
  StaticModule module(scriptModule(kListInput));
  c10::List<at::Tensor> xs({torch::randn({1, 2}), torch::randn({1, 2}),
                            torch::empty({1, 2}, torch::device(torch::kMeta))});
  EXPECT_THAT([&] { (void)module({xs}); },
              ThrowsMessage<c10::Error>(HasSubstr("input 'xs' (argument 0)[2] is on device meta")));
  xs.set(2, torch::randn({1, 2}));
  EXPECT_TRUE(torch::allclose(module({xs}).toTensor(), torch::cat(xs.vec(), 0) * 2));
}

TEST(InputRefusal, DeclaredTensorTypesAreEnforcedNamingTheInput) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %y : Tensor = aten::relu(%x)
  return (%y)
)IR",
                      graph.get());
  StaticModule module(graph);
  EXPECT_THAT(
      [&] {
        (void)module({torch::randn({2, 3}, torch::kFloat64)});
      },
      ThrowsMessage<c10::Error>(AllOf(HasSubstr("input 'x' (argument 0) is Double(2, 3"),
                                      HasSubstr("forward declares Float(2, 3"))));
  EXPECT_TRUE(torch::equal(module({torch::ones({2, 3})}).toTensor(), torch::ones({2, 3})));
}

TEST(InputRefusal, RequiresGradInputsRunAndReturnPlainResults) {
  const at::Tensor x = torch::randn({2, 3}).requires_grad_();
  const at::Tensor y = torch::randn({2, 3});
  at::Tensor result = twoInputs()({x, y}).toTensor();
  EXPECT_FALSE(result.requires_grad()) << "inference runs without autograd";
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(result, torch::relu(x) + y));
}

// For dtypes a model's kernels may or may not take, we accept exactly what the JIT accepts: where
// the JIT runs, results agree; where it fails, we fail with a c10::Error too (naming the node),
// never a crash or a wrong result.
constexpr const char* kMixedOps = R"JIT(
def forward(self, x, y):
    a = torch.relu(x * y + 1)
    b = torch.matmul(a, y.t())
    return torch.softmax(b, 1), a.sum(1)
)JIT";

TEST(InputRefusal, DtypesAreAcceptedExactlyWhereTheJitAcceptsThem) {
  torch::jit::Module jit = scriptModule(kMixedOps);
  StaticModule module(jit);
  const std::vector<c10::ScalarType> dtypes{torch::kFloat64, torch::kComplexFloat, torch::kInt64,
                                            torch::kInt32,   torch::kBool,         torch::kBFloat16,
                                            torch::kHalf};
  size_t jit_failures = 0;
  for (c10::ScalarType x_dtype : dtypes) {
    for (c10::ScalarType y_dtype : {torch::kFloat32, x_dtype}) {
      SCOPED_TRACE(c10::str("x ", x_dtype, ", y ", y_dtype));
      const std::vector<c10::IValue> args{(torch::randn({3, 4}) * 3).to(x_dtype),
                                          (torch::randn({2, 4}) * 3).to(y_dtype).slice(0, 0, 1)};
      c10::IValue expected;
      std::string jit_error;
      try {
        torch::NoGradGuard no_grad;
        expected = jit.get_method("forward")(args);
      } catch (const std::exception& e) {
        jit_error = e.what();
      }
      if (!jit_error.empty()) {
        ++jit_failures;
        EXPECT_THROW((void)module(args), c10::Error) << "the JIT failed with: " << jit_error;
      } else {
        c10::IValue actual;
        ASSERT_NO_THROW(actual = module(args));
        EXPECT_EQ(compareIValues(expected, actual, 1e-2), "");
      }
    }
  }
  EXPECT_GT(jit_failures, 0u) << "some dtype must exercise the failing side";
  EXPECT_LT(jit_failures, 2 * dtypes.size()) << "some dtype must exercise the running side";
  const std::vector<c10::IValue> floats{torch::randn({3, 4}), torch::randn({1, 4})};
  torch::NoGradGuard no_grad;
  EXPECT_EQ(compareIValues(jit.get_method("forward")(floats), module(floats)), "");
}

} // namespace
} // namespace srt::testing
