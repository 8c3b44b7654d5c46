// roll, repeat_interleave and tile out-variant kernels (ops/shapes/rearrangements.cpp) against the
// JIT.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

std::vector<InputSet> shapes(const std::function<at::Tensor(at::IntArrayRef)>& make) {
  return {inputs({make({2, 3, 4})}), inputs({make({5, 4, 7})}),
          inputs({make({4, 6, 3}).transpose(0, 2)}), inputs({make({0, 3, 2})})};
}

TEST(Roll, MatchesTheJit) {
  for (const std::string expression :
       {"torch.roll(x, [1], [0])", "torch.roll(x, [-2, 3], [1, 2])", "torch.roll(x, [7], [-1])",
        "torch.roll(x, [1, 1], [1, 1])", "torch.roll(x, [0, 4], [0, 1])", "torch.roll(x, [5])",
        "torch.roll(x, [1, -1, 2], [0, 1, 2])"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randintLong}) {
      expectMatchesJit(source, shapes(make));
    }
  }
}

TEST(RepeatInterleave, ByAnIntMatchesTheJit) {
  for (const std::string expression :
       {"torch.repeat_interleave(x, 2, 0)", "torch.repeat_interleave(x, 3, -1)",
        "torch.repeat_interleave(x, 2)", "torch.repeat_interleave(x, 1, 1)",
        "torch.repeat_interleave(x, 0, 1)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randintLong}) {
      expectMatchesJit(source, shapes(make));
    }
  }
}

// Fewer, as many and more repeats than dimensions (the shorter side padded with leading ones).
TEST(Tile, MatchesTheJit) {
  for (const std::string expression :
       {"torch.tile(x, [2])", "torch.tile(x, [2, 1, 3])", "torch.tile(x, [2, 1, 1, 2])",
        "x.tile([0, 2])", "torch.tile(x, [])"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randintLong}) {
      expectMatchesJit(source, shapes(make));
    }
  }
}

} // namespace
} // namespace srt::testing
