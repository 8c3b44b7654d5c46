// pad (all modes) and constant_pad_nd out-variant kernels (ops/shapes/padding.cpp) against the
// JIT, including negative (cropping) pads and non-contiguous inputs.
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

TEST(Padding, ConstantMatchesTheJit) {
  for (const std::string expression :
       {"torch.pad(x, [1, 2])", "torch.pad(x, [0, 0, 2, 1], value=1.5)",
        "torch.pad(x, [1, -1, -1, 2])", "torch.pad(x, [0, 0, 0, 1, 0, 2])",
        "torch.constant_pad_nd(x, [2, 1], 3)", "torch.constant_pad_nd(x, [-1, 0, 0, -1])",
        "torch.pad(x, [-2, 0])"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randintLong}) {
      expectMatchesJit(source, {inputs({make({2, 3, 4})}), inputs({make({3, 5, 6})}),
                                inputs({make({4, 5, 3}).transpose(0, 2)})});
    }
  }
}

TEST(Padding, ReflectReplicateAndCircularMatchTheJit) {
  // Each mode pads one, two or three trailing dimensions of an input with one or two more.
  const std::vector<std::pair<std::string, std::vector<InputSet>>> cases = {
      {"torch.pad(x, [1, 2], mode='reflect')",
       {inputs({randnFloat({2, 3, 5})}), inputs({randnFloat({3, 4})}),
        inputs({randnFloat({2, 6, 3}).transpose(1, 2)})}},
      {"torch.pad(x, [1, 2], mode='replicate')",
       {inputs({randnFloat({2, 3, 5})}), inputs({randnDouble({1, 2, 3})})}},
      {"torch.pad(x, [2, 1, 1, 0], mode='reflect')",
       {inputs({randnFloat({2, 3, 4, 5})}), inputs({randnFloat({2, 6, 3})}),
        inputs({randnFloat({2, 5, 4, 3}).transpose(1, 3)})}},
      {"torch.pad(x, [1, 2, 0, 3], mode='replicate')",
       {inputs({randnFloat({2, 3, 4, 5})}), inputs({randnFloat({1, 2, 6, 3})}),
        inputs({randnFloat({2, 5, 4, 3}).transpose(1, 3)})}},
      {"torch.pad(x, [1, 1, 2, 0, 1, 1], mode='replicate')",
       {inputs({randnFloat({1, 2, 3, 4, 5})}), inputs({randnFloat({2, 3, 4, 2})})}},
      {"torch.pad(x, [1, 1, 2, 1], mode='circular')",
       {inputs({randnFloat({2, 3, 4, 5})}), inputs({randnFloat({1, 2, 6, 3})})}}};
  for (const auto& [expression, input_sets] : cases) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source, 1);
    expectMatchesJit(source, input_sets);
  }
}

TEST(Padding, BadPaddingIsAClearError) {
  StaticModule module(scriptModule(forwardReturning("x", "torch.pad(x, [1, 2, 3])")));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({torch::randn({2, 3})})), c10::Error);
  StaticModule cropped(scriptModule(forwardReturning("x", "torch.pad(x, [-3, 0])")));
  StaticRuntime cropped_runtime(cropped);
  EXPECT_THROW(static_cast<void>(cropped_runtime({torch::randn({2, 2})})), c10::Error);
  EXPECT_EQ(cropped_runtime({torch::randn({2, 5})}).toTensor().sizes(), at::IntArrayRef({2, 2}));
}

} // namespace
} // namespace srt::testing
