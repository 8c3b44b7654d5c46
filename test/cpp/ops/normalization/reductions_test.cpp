// sum, mean, amax and argmax out-variant kernels against the JIT.
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

TEST(Reduction, ListSumIsDeclined) {
  const std::string source = forwardReturning("x: List[int]", "sum(x)");
  expectFallback(source, "aten::sum");
  expectMatchesJit(source, {inputs({c10::List<int64_t>({1, 2, 3})})});
}

} // namespace
} // namespace srt::testing
