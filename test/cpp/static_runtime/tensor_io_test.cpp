// AITemplate-style I/O: names, preallocated outputs, maximum shapes, zero-size inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/zoo.h"

namespace srt::testing {
namespace {

const char* kTwoOutputs = R"JIT(
def forward(self, x, y):
    return torch.relu(x) + y, x.sum(0)
)JIT";

class TensorIOTest : public ::testing::Test {
protected:
  StaticModule module{scriptModule(kTwoOutputs)};
  StaticRuntime runtime{module};
  TensorIO io{runtime};
};

TEST_F(TensorIOTest, NamesInputsAndOutputs) {
  EXPECT_THAT(io.inputNames(), ::testing::ElementsAre("x", "y"));
  EXPECT_THAT(io.outputNames(), ::testing::ElementsAre("output_0", "output_1"));
  EXPECT_EQ(io.inputIndex("y"), 1u);
  EXPECT_EQ(io.outputIndex("output_1"), 1u);
  EXPECT_THAT([&] { io.outputIndex("out"); },
              ::testing::ThrowsMessage<c10::Error>(
                  ::testing::HasSubstr("no output named 'out'; outputs are: output_0, output_1")));
}

TEST_F(TensorIOTest, WritesIntoPreallocatedOutputsByPositionAndByName) {
  // Buffers of a maximum shape; each run fills their front and reports the actual shape.
  at::Tensor out0 = torch::full({8, 4}, -7.0);
  at::Tensor out1 = torch::full({4}, -7.0);
  for (int64_t rows : {3, 8, 2}) {
    at::Tensor x = torch::randn({rows, 4});
    at::Tensor y = torch::randn({rows, 4});
    std::vector<Shape> shapes =
        rows == 8 ? io.runByName({{"x", x}, {"y", y}}, {{"output_0", out0}, {"output_1", out1}})
                  : io.run({x, y}, {out0, out1});
    ASSERT_EQ(shapes.size(), 2u);
    EXPECT_EQ(shapes[0], (Shape{rows, 4}));
    EXPECT_EQ(shapes[1], (Shape{4}));
    EXPECT_TRUE(torch::allclose(out0.view({-1}).narrow(0, 0, rows * 4).view({rows, 4}),
                                torch::relu(x) + y));
    EXPECT_TRUE(torch::allclose(out1, x.sum(0)));
  }
  EXPECT_EQ(io.outputMaximumShape("output_0"), (Shape{8, 4}));
}

TEST_F(TensorIOTest, NoMaximumShapeBeforeTheFirstRun) {
  EXPECT_EQ(io.outputMaximumShape("output_0"), std::nullopt);
}

TEST_F(TensorIOTest, RefusesOutputsThatDoNotFitAndKeepsWorking) {
  at::Tensor x = torch::randn({3, 4});
  at::Tensor y = torch::randn({3, 4});
  at::Tensor small = torch::empty({2, 4});
  at::Tensor out1 = torch::empty({4});
  EXPECT_THAT(
      [&] {
        io.run({x, y}, {small, out1});
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr(
          "output 'output_0' holds 8 elements but the result has shape [3, 4]")));
  at::Tensor doubles = torch::empty({3, 4}, torch::kDouble);
  EXPECT_THAT(
      [&] {
        io.run({x, y}, {doubles, out1});
      },
      ::testing::ThrowsMessage<c10::Error>(
          ::testing::HasSubstr("output 'output_0' has dtype Double but the model "
                               "produces Float")));
  EXPECT_THAT(
      [&] {
        io.run({x, y}, {out1});
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("has 2 outputs")));
  EXPECT_THAT(
      [&] {
        io.runByName({{"x", x}, {"z", y}}, {});
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("no input named 'z'")));
  at::Tensor out0 = torch::empty({3, 4});
  io.run({x, y}, {out0, out1});
  EXPECT_TRUE(torch::allclose(out0, torch::relu(x) + y));
}

TEST(TensorIO, AcceptsZeroSizeInputs) {
  StaticModule module(loadZooModel("mlp"));
  StaticRuntime runtime(module);
  TensorIO io(runtime);
  at::Tensor out = torch::empty({4, 10});
  for (int64_t batch : {0, 4, 0}) {
    std::vector<Shape> shapes = io.run({torch::randn({batch, 64})}, {out});
    EXPECT_EQ(shapes[0], (Shape{batch, 10}));
  }
  // The reference agrees on an empty batch.
  expectMatchesJit(loadZooModel("mlp"), {{{torch::randn({0, 64})}}, {{torch::randn({2, 64})}}});
}

} // namespace
} // namespace srt::testing
