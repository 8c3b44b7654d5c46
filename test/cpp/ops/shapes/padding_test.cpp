// pad (all modes) and constant_pad_nd out-variant kernels (ops/shapes/padding.cpp) against the
// JIT, including negative (cropping) pads and non-contiguous inputs.
#include "ops/op_test_helpers.h"
#include "static_runtime/static_runtime.h"

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

// Reflect and replicate of one or two dims run our row and pixel copies on contiguous and
// channels-last float32 tensors (the layout kept): pads up to a dim's size less one, a side left
// unpadded, 3-D inputs, batches; what they do not take (a reflect pad of a dim's size,
// negative pads, doubles, a transposed tensor) runs ATen's kernels, and their errors.
TEST(Padding, ReflectAndReplicateRowsMatchTheJit) {
  const auto channels_last = [](at::IntArrayRef shape) {
    return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
  };
  const std::vector<InputSet> images = {inputs({torch::randn({1, 3, 5, 6})}),
                                        inputs({channels_last({2, 16, 5, 7})}),
                                        inputs({channels_last({1, 5, 6, 9})}),
                                        inputs({torch::randn({4, 5, 6})}),
                                        inputs({torch::randn({2, 3, 5, 6}).transpose(2, 3)}),
                                        inputs({torch::randn({1, 2, 5, 5}, torch::kDouble)})};
  const std::vector<InputSet> sequences = {inputs({torch::randn({2, 3, 7})}),
                                           inputs({torch::randn({4, 6})}),
                                           inputs({torch::randn({2, 7, 3}).transpose(1, 2)})};
  for (const std::string mode : {"reflect", "replicate"}) {
    for (const auto& [pads, input_sets] :
         std::vector<std::pair<std::string, std::vector<InputSet>>>{{"[1, 1, 1, 1]", images},
                                                                    {"[3, 0, 2, 4]", images},
                                                                    {"[4, 4, 0, 4]", images},
                                                                    {"[0, 2]", sequences},
                                                                    {"[3, 1]", sequences}}) {
      const std::string expression = "torch.pad(x, " + pads + ", mode='" + mode + "')";
      SCOPED_TRACE(expression);
      const std::string source = forwardReturning("x", expression);
      expectAllOutVariant(source, 1);
      expectMatchesJit(source, input_sets);
    }
  }
  const std::string source = forwardReturning("x", "torch.pad(x, [2, 2, 1, 1], mode='reflect')");
  StaticModule module(scriptModule(source));
  StaticRuntime runtime(module);
  const at::Tensor x = channels_last({1, 8, 4, 5});
  const at::Tensor padded = runtime({x}).toTensor();
  EXPECT_TRUE(padded.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(at::equal(padded, at::pad(x, {2, 2, 1, 1}, "reflect")));
  EXPECT_THROW(static_cast<void>(runtime({torch::randn({1, 2, 3, 2})})), c10::Error); // 2 >= 2
  EXPECT_TRUE(at::equal(runtime({x}).toTensor(), padded));
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
