// ops/conv/grid_sample.cpp: F.grid_sample on 4-D and 5-D inputs, each mode and padding, against
// the JIT; a rank ATen refuses is a clear error and the runtime works on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection.
constexpr const char* kGridSample = R"JIT(
def forward(self, x, grid):
    return (torch.grid_sampler(x, grid, 0, 0, False), torch.grid_sampler(x, grid, 1, 1, True),
            torch.grid_sampler(x, grid, 2, 2, False))
)JIT";

TEST(GridSample, TwoDimensionalMatchesJit) {
  expectMatchesJit(kGridSample,
                   {{{torch::randn({1, 2, 5, 5}), torch::rand({1, 3, 4, 2}) * 2.2 - 1.1}},
                    {{torch::randn({2, 3, 4, 6}), torch::rand({2, 2, 2, 2}) * 2 - 1}}});
  expectKinds(kGridSample, {{"aten::grid_sampler", KernelKind::kOutVariant}});
}

TEST(GridSample, ThreeDimensionalMatchesJit) {
  const char* source = R"JIT(
def forward(self, x, grid):
    return torch.grid_sampler(x, grid, 0, 1, False), torch.grid_sampler(x, grid, 1, 0, True)
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({1, 2, 3, 4, 5}), torch::rand({1, 2, 3, 2, 3}) * 2 - 1}},
                    {{torch::randn({2, 1, 4, 4, 4}), torch::rand({2, 1, 2, 3, 3}) * 2 - 1}}});
}

TEST(GridSample, OtherRanksAreClearErrors) {
  StaticModule module(scriptModule(kGridSample));
  EXPECT_THAT(
      [&] {
        static_cast<void>(module({torch::randn({2, 5, 5}), torch::rand({2, 3, 2})}));
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("expected 4D or 5D")));
  const torch::Tensor x = torch::randn({1, 2, 5, 5});
  const torch::Tensor grid = torch::rand({1, 3, 4, 2}) * 2 - 1;
  EXPECT_TRUE(torch::equal(module({x, grid}).toTupleRef().elements()[0].toTensor(),
                           torch::grid_sampler(x, grid, 0, 0, false)));
}

} // namespace
} // namespace srt::testing
