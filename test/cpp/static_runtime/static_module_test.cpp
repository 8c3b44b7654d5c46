// StaticModule / StaticRuntime: binding, outputs, control flow, errors and recovery.
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "scripts.h"

namespace srt::testing {
namespace {

TEST(StaticModule, MatchesJitOnSimpleArithmeticOverAllOptions) {
  expectMatchesJit(scripts::kAddMul, {{{torch::randn({2, 3}), torch::randn({2, 3})}},
                                      {{torch::randn({5, 7}), torch::randn({5, 7})}}});
}

TEST(StaticModule, BindsKeywordArgumentsAndDefaults) {
  expectMatchesJit(scripts::kKwargsWithDefaults,
                   {{{torch::randn({3})}, {}},
                    {{torch::randn({4, 2})}, {{"scale", 3.0}}},
                    {{torch::randn({4, 2})}, {{"bias", torch::randn({2})}, {"scale", -1.0}}},
                    {{torch::randn({2}), 0.5}, {{"bias", torch::randn({2})}}}});
}

TEST(StaticModule, ReturnsTheSameStructureAsForward) {
  expectMatchesJit(scripts::kTupleListDictScalarOutputs,
                   {{{torch::randn({2, 3})}}, {{torch::randn({4})}}});
}

TEST(StaticModule, ReturnsInputsAndDuplicatedOutputsAsValues) {
  expectMatchesJit(scripts::kInputReturnedDirectly, {{{torch::randn({2}), torch::randn({2})}},
                                                     {{torch::randn({3}), torch::randn({3})}}});
}

TEST(StaticModule, BranchesOnInputValues) {
  expectMatchesJit(scripts::kBranchOnValue,
                   {{{torch::ones({2, 2})}}, {{-torch::ones({3})}}, {{torch::randn({4, 4})}}});
}

TEST(StaticModule, LoopsOnInputValues) {
  expectMatchesJit(
      scripts::kLoopOnValue,
      {{{torch::randn({2}), 0}}, {{torch::randn({3, 3}), 4}}, {{torch::randn({1}), 7}}});
}

TEST(StaticModule, RunsNestedControlFlow) {
  expectMatchesJit(
      scripts::kNestedControlFlow,
      {{{torch::randn({3}), 5}}, {{torch::randn({2, 2}), 0}}, {{torch::randn({4}), 1}}});
}

TEST(StaticModule, RunsUserInPlaceCode) {
  expectMatchesJit(scripts::kInPlaceUserCode, {{{torch::randn({5})}}, {{torch::randn({2, 8})}}});
}

TEST(StaticModule, PushesInputCountForVarargOperators) {
  expectMatchesJit(scripts::kVarargFormat, {{{torch::randn({2}), 3}}, {{torch::randn({3}), 12}}});
}

TEST(StaticModule, ValidatesOptions) {
  StaticModuleOptions options;
  options.enable_out_variant = false;
  options.optimize_memory = true;
  auto module = scriptModule(scripts::kAddMul);
  try {
    StaticModule static_module(module, options);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), ::testing::HasSubstr("optimize_memory"));
  }
  options.optimize_memory = false;
  options.manage_output_tensors = true;
  EXPECT_THROW(StaticModule(module, options), c10::Error);
}

// Runs `call`, which must throw a c10::Error whose message contains every one of `fragments`.
template <typename Call>
void expectErrorContaining(Call&& call, std::initializer_list<const char*> fragments) {
  try {
    call();
    ADD_FAILURE() << "expected a c10::Error";
  } catch (const c10::Error& e) {
    for (const char* fragment : fragments) {
      EXPECT_THAT(e.what_without_backtrace(), ::testing::HasSubstr(fragment));
    }
  }
}

class StaticModuleErrors : public ::testing::Test {
protected:
  // After every error, the same runtime and module must still give correct results.
  void expectStillWorks() {
    auto a = torch::randn({2, 3});
    auto b = torch::randn({2, 3});
    auto expected = (a + b) * a;
    EXPECT_TRUE(torch::allclose(runtime_({a, b}).toTensor(), expected));
    EXPECT_TRUE(torch::allclose(static_module_({a, b}).toTensor(), expected));
  }

  torch::jit::Module module_ = scriptModule(scripts::kAddMul);
  StaticModule static_module_{module_};
  StaticRuntime runtime_{static_module_};
};

TEST_F(StaticModuleErrors, TooManyArguments) {
  auto x = torch::randn({1});
  expectErrorContaining([&] { (void)runtime_({x, x, x}); }, {"at most 2 argument(s)", "forward"});
  expectStillWorks();
}

TEST_F(StaticModuleErrors, MissingArgument) {
  expectErrorContaining([&] { (void)runtime_({torch::randn({1})}); }, {"missing value", "'b'"});
  expectStillWorks();
}

TEST_F(StaticModuleErrors, UnknownKeyword) {
  auto x = torch::randn({1});
  expectErrorContaining(
      [&] {
        (void)runtime_({x, x}, {{"c", x}});
      },
      {"Unknown keyword argument 'c'"});
  expectStillWorks();
}

TEST_F(StaticModuleErrors, NonTensorWhereTensorExpected) {
  expectErrorContaining(
      [&] {
        (void)runtime_({torch::randn({1}), 3});
      },
      {"argument 'b'", "Tensor", "int"});
  expectStillWorks();
}

TEST_F(StaticModuleErrors, KernelErrorNamesNodeAndSourceLine) {
  expectErrorContaining(
      [&] {
        (void)runtime_({torch::randn({2, 3}), torch::randn({4, 5})});
      },
      {"aten::add", "fused program", "size of tensor a"});
  expectStillWorks();
  // Unfused, the error points at the user's line (a fused chain reports its last line).
  StaticModuleOptions unfused;
  unfused.disabled_passes = {"elementwise_fusion"};
  StaticModule module(module_, unfused);
  StaticRuntime runtime(module);
  expectErrorContaining(
      [&] {
        (void)runtime({torch::randn({2, 3}), torch::randn({4, 5})});
      },
      {"aten::add", ":3: `c = a + b`", "size of tensor a"});
}

TEST(StaticModuleErrorsExtra, WrongRankAndDtypeReachTheCallerWithNodeContext) {
  auto module = scriptModule(scripts::kLinearLike);
  StaticModule static_module(module);
  StaticRuntime runtime(static_module);
  expectErrorContaining(
      [&] {
        (void)runtime({torch::randn({2, 3, 4}), torch::randn({4, 2})});
      },
      {"aten::mm", "torch.mm(x, w)", "must be a matrix"});
  expectErrorContaining(
      [&] {
        (void)runtime({torch::randn({2, 3}), torch::ones({3, 2}, torch::kInt64)});
      },
      {"aten::mm", "torch.mm(x, w)"});
  auto x = torch::randn({2, 3});
  auto w = torch::randn({3, 2});
  EXPECT_TRUE(torch::allclose(runtime({x, w}).toTensor(), torch::mm(x, w)));
}

TEST(StaticModuleErrorsExtra, ModelRaisesItsOwnMessage) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(scripts::kRaiseOnNegativeIr, graph.get());
  StaticModule static_module(graph);
  StaticRuntime runtime(static_module);
  expectErrorContaining([&] { (void)runtime({-torch::ones({2})}); },
                        {"ValueError: negative input", "prim::RaiseException"});
  auto x = torch::rand({3}) + 1;
  EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), x.sqrt()));
}

TEST(StaticModuleErrorsExtra, ErrorsLeaveNoInputsAlive) {
  auto module = scriptModule(scripts::kLinearLike);
  StaticModule static_module(module);
  StaticRuntime runtime(static_module);
  auto x = torch::randn({2, 3});
  auto w = torch::randn({4, 5});
  EXPECT_THROW((void)runtime({x, w}), c10::Error);
  EXPECT_EQ(x.use_count(), 1) << "the runtime kept the caller's input alive after an error";
  EXPECT_EQ(w.use_count(), 1);
}

TEST(StaticModule, ResultsOutliveLaterRuns) {
  auto module = scriptModule(scripts::kAddMul);
  StaticModule static_module(module);
  StaticRuntime runtime(static_module);
  auto a = torch::randn({4});
  auto first = runtime({a, a}).toTensor();
  auto first_copy = first.clone();
  auto second = runtime({a * 2, a}).toTensor();
  EXPECT_TRUE(torch::equal(first, first_copy)) << "a later run overwrote an earlier result";
  EXPECT_FALSE(torch::equal(first, second));
}

TEST(StaticModule, IsSafeToCallFromManyThreads) {
  auto module = scriptModule(scripts::kBranchOnValue);
  StaticModule static_module(module);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto x = torch::randn({t + 1, i % 5 + 1});
        auto expected = module.forward({x}).toTensor();
        if (!torch::allclose(static_module({x}).toTensor(), expected)) {
          ++mismatches;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(StaticMethod, ImplementsIMethod) {
  auto module = scriptModule(scripts::kKwargsWithDefaults);
  auto static_module = std::make_shared<const StaticModule>(module);
  std::unique_ptr<torch::IMethod> method = std::make_unique<StaticMethod>(static_module);
  EXPECT_EQ(method->name(), "forward");
  EXPECT_EQ(method->getArgumentNames(), (std::vector<std::string>{"x", "scale", "bias"}));
  auto x = torch::randn({3});
  auto result = (*method)({x}, {{"scale", 4.0}}).toTensor();
  EXPECT_TRUE(torch::allclose(result, x * 4.0));
}

TEST(StaticModule, AcceptsAFreeStandingGraph) {
  auto module = scriptModule(scripts::kAddMul);
  auto graph = module.get_method("forward").graph()->copy();
  graph->eraseInput(0); // self, unused by this forward
  StaticModule static_module(graph);
  auto a = torch::randn({3});
  auto b = torch::randn({3});
  EXPECT_TRUE(torch::allclose(static_module({a, b}).toTensor(), (a + b) * a));
  EXPECT_EQ(static_module.schema().arguments().at(0).name(), "a");
}

} // namespace
} // namespace srt::testing
