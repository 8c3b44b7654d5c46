// roll, repeat_interleave, tile and pixel_shuffle / pixel_unshuffle out-variant kernels
// (ops/shapes/rearrangements.cpp) against the JIT.
#include "ops/op_test_helpers.h"
#include "static_runtime/static_runtime.h"

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

// Factors 2 and 3, one channel and several, contiguous and channels-last images (the layout kept,
// one channel read either way); a 3-D image, a transposed one, doubles and a factor that does not
// divide through ATen's op (its result, or its error).
TEST(PixelShuffle, BothWaysMatchTheJit) {
  const auto channels_last = [](at::IntArrayRef shape) {
    return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
  };
  for (const auto& [expression, shapes] :
       std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>>{
           {"torch.pixel_shuffle(x, 3)", {{1, 9, 8, 7}, {2, 18, 5, 6}}},
           {"torch.pixel_shuffle(x, 2)", {{1, 4, 6, 6}, {3, 8, 3, 5}}},
           {"torch.pixel_unshuffle(x, 2)", {{1, 1, 8, 6}, {2, 3, 6, 10}}},
           {"torch.pixel_unshuffle(x, 3)", {{1, 5, 9, 6}, {2, 2, 3, 3}}}}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    std::vector<InputSet> sets;
    for (const std::vector<int64_t>& shape : shapes) {
      sets.push_back(inputs({torch::randn(shape)}));
      sets.push_back(inputs({channels_last(shape)}));
    }
    sets.push_back(inputs({torch::randn({2, 36, 6, 12}).transpose(2, 3)}));
    sets.push_back(inputs({torch::randn({36, 6, 6})}));
    sets.push_back(inputs({torch::randn({1, 36, 6, 6}, torch::kDouble)}));
    expectMatchesJit(source, sets);
    // A factor that does not divide: ATen's error, and the runtime goes on working.
    StaticModule module(scriptModule(source));
    StaticRuntime runtime(module);
    EXPECT_THROW(runtime({torch::randn({1, 7, 5, 5})}), c10::Error);
    const at::Tensor x = torch::randn(shapes.front());
    EXPECT_TRUE(at::equal(runtime({x}).toTensor(), scriptModule(source).forward({x}).toTensor()));
  }
}

} // namespace
} // namespace srt::testing
