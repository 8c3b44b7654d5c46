// sum, mean, amax, argmax, max and min out-variant kernels against the JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

std::vector<InputSet> reductionShapes(const std::function<at::Tensor(at::IntArrayRef)>& make) {
  return {inputs({make({2, 3})}), inputs({make({4, 5, 6})}), inputs({make({4, 3}).t()}),
          inputs({make({0, 5})}), inputs({make({300, 400})})};
}

const std::vector<std::string> kSums = {"x.sum()",
                                        "torch.sum(x, [1])",
                                        "torch.sum(x, [0], keepdim=True)",
                                        "torch.sum(x, [0, -1])",
                                        "torch.sum(x, dtype=7)",
                                        "torch.sum(x, [1], True, dtype=7)",
                                        "torch.sum(x, None)"};

TEST(Reduction, Sum) {
  for (const auto& expression : kSums) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randnDouble, randintLong}) {
      expectMatchesJit(source, reductionShapes(make));
    }
  }
  // bool sums to int64.
  expectMatchesJit(forwardReturning("x", "x.sum()"), {inputs({torch::rand({3, 4}) > 0.5})});
}

TEST(Reduction, Mean) {
  for (const std::string expression :
       {"x.mean()", "torch.mean(x, [1])", "torch.mean(x, [0], keepdim=True)",
        "torch.mean(x, [0, -1])", "torch.mean(x, dtype=7)", "torch.mean(x, [1], True, dtype=7)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randnDouble}) {
      expectMatchesJit(source, reductionShapes(make));
    }
  }
  expectMatchesJit(forwardReturning("x", "torch.mean(x, [1], dtype=6)"),
                   {inputs({randintLong({2, 3})}), inputs({randintLong({4, 5})})});
}

// A channels-last image batch's mean and sum over the image (a network's head): rows of channels
// summed in order, within rounding of ATen's; keepdim both ways, dims in any order and negative,
// a batch, and the forms that stay ATen's (other dims, a dtype, a contiguous batch, one pixel).
TEST(Reduction, MeanAndSumOverChannelsLastImages) {
  const auto channels_last = [](at::IntArrayRef sizes) {
    return torch::randn(sizes).contiguous(at::MemoryFormat::ChannelsLast);
  };
  for (const std::string expression :
       {"torch.mean(x, [2, 3])", "torch.mean(x, [-1, -2], True)", "torch.mean(x, [3, 2])",
        "torch.mean(x, [1, 2])", "torch.mean(x, [2, 3], dtype=7)", "torch.sum(x, [2, 3])",
        "torch.sum(x, [-2, -1], True)", "torch.sum(x, [2, 3], dtype=7)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    expectMatchesJit(
        source, {inputs({channels_last({1, 1280, 7, 7})}), inputs({channels_last({3, 40, 5, 9})}),
                 inputs({torch::randn({2, 24, 6, 6})}), inputs({channels_last({2, 16, 1, 1})}),
                 inputs({channels_last({1, 1280, 7, 7})})});
  }
}

TEST(Reduction, AmaxAndArgmax) {
  for (const std::string expression :
       {"torch.amax(x, [1])", "torch.amax(x, [0], keepdim=True)", "torch.amax(x, [0, 1])",
        "torch.argmax(x, 1)", "torch.argmax(x, 0, keepdim=True)", "torch.argmax(x, -1)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randnDouble, randintLong}) {
      expectMatchesJit(source, {inputs({make({2, 3})}), inputs({make({4, 5, 6})}),
                                inputs({make({4, 3}).t()}), inputs({make({300, 400})})});
    }
  }
  // Over every element ([] for amax, None for argmax); zero-size along a kept dimension.
  for (const std::string expression : {"torch.amax(x)", "torch.argmax(x)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    expectMatchesJit(source, {inputs({randnFloat({2, 3})}), inputs({randintLong({7})})});
  }
  expectMatchesJit(forwardReturning("x", "torch.amax(x, [1])"), {inputs({randnFloat({0, 5})})});
}

TEST(Reduction, DimsFromInputs) {
  const std::string source =
      forwardReturning("x, dims: List[int], keep: bool", "torch.sum(x, dims, keep)");
  expectMatchesJit(source, {inputs({randnFloat({2, 3, 4}), c10::List<int64_t>({1}), true}),
                            inputs({randnFloat({5, 6}), c10::List<int64_t>({0, 1}), false})});
}

// sum() of a Python list is declined here and taken by the list kernels (ops/containers/).
TEST(Reduction, ListSumIsNotATensorSum) {
  for (const std::string params : {"x: List[int]", "x: List[float]", "x: List[bool]"}) {
    const std::string source = forwardReturning(params, "sum(x)");
    ModuleStats stats = StaticModule(scriptModule(source)).stats();
    EXPECT_EQ(stats.out_variant_nodes, 0u) << params;
    EXPECT_EQ(stats.fallback_nodes, 0u) << params;
  }
  expectMatchesJit(forwardReturning("x: List[int]", "sum(x)"),
                   {inputs({c10::List<int64_t>({1, 2, 3})}), inputs({c10::List<int64_t>()})});
  expectMatchesJit(forwardReturning("x: List[float]", "sum(x)"),
                   {inputs({c10::List<double>({1.5, 2.25})}), inputs({c10::List<double>({-1.0})})});
  expectMatchesJit(forwardReturning("x: List[bool]", "sum(x)"),
                   {inputs({c10::List<bool>({true, false, true})})});
}

// max / min over a dim (values and indices), of every element, and of two tensors.
TEST(Reduction, MaxAndMin) {
  for (const std::string expression :
       {"torch.max(x, 1)", "torch.max(x, 0, keepdim=True)", "torch.min(x, -1)",
        "torch.min(x, 0, True)", "x.max()", "x.min()"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    for (const auto& make : {randnFloat, randnDouble, randintLong}) {
      expectMatchesJit(source, {inputs({make({2, 3})}), inputs({make({4, 5, 6})}),
                                inputs({make({4, 3}).t()}), inputs({make({300, 400})})});
    }
    ModuleStats stats = StaticModule(scriptModule(source)).stats();
    EXPECT_EQ(stats.fallback_nodes, 0u);
  }
  for (const std::string expression : {"torch.max(x, y)", "torch.min(x, y)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x, y", expression);
    expectAllOutVariant(source, 1);
    expectMatchesJit(source, binaryShapes(randnFloat));
    expectMatchesJit(source, {inputs({randintLong({3, 4}), randnFloat({3, 4})}),
                              inputs({randintLong({5}), randintLong({1})})});
  }
}

TEST(Reduction, MaxOfNothingIsAClearError) {
  StaticModule module(scriptModule(forwardReturning("x", "x.max()")));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({torch::randn({0, 3})})), c10::Error);
  EXPECT_TRUE(torch::equal(runtime({torch::ones({2})}).toTensor(), torch::ones({})));
}

TEST(Reduction, NormsCumsumSortAndTopk) {
  for (const std::string expression :
       {"torch.norm(x)", "torch.norm(x, 1)", "torch.norm(x, 2, [1])",
        "torch.norm(x, 3.0, [0], True)", "torch.linalg_vector_norm(x)",
        "torch.linalg_vector_norm(x, 1, [-1], True)",
        "torch.linalg_vector_norm(x, 2, [0], dtype=7)", "torch.cumsum(x, 1)",
        "torch.cumsum(x, 0, dtype=7)", "torch.sort(x, 1)", "torch.sort(x, 0, True)",
        "torch.topk(x, 2, 1)", "torch.topk(x, 1, 0, False, True)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    ModuleStats stats = StaticModule(scriptModule(source)).stats();
    EXPECT_EQ(stats.fallback_nodes, 0u);
    for (const auto& make : {randnFloat, randnDouble}) {
      expectMatchesJit(source, {inputs({make({2, 3})}), inputs({make({4, 5, 6})}),
                                inputs({make({4, 3}).t()}), inputs({make({300, 40})})});
    }
  }
  // Integers: cumsum in int64, sort and topk in their dtype.
  for (const std::string expression :
       {"torch.cumsum(x, 1)", "torch.sort(x, 1)", "torch.topk(x, 2, 1)"}) {
    expectMatchesJit(forwardReturning("x", expression),
                     {inputs({randintLong({2, 3})}), inputs({randintLong({5, 4})})});
  }
}

TEST(Reduction, LogicalNot) {
  const std::string source = forwardReturning("x", "torch.logical_not(x)");
  expectAllOutVariant(source, 1);
  expectMatchesJit(source,
                   unaryShapes([](at::IntArrayRef shape) { return torch::rand(shape) > 0.5; }));
  expectMatchesJit(source, unaryShapes(randintLong));
}

} // namespace
} // namespace srt::testing
