// Out-variant zeros / ones / full with run-time sizes (ops/creation/filled_tensors.cpp) against the
// JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// Dtypes spelled as enum values (float64 7, int32 3, bool 11); full's dtype otherwise follows
// its fill value (int -> int64, float -> the default dtype).
const char* const kFilled = R"JIT(
def forward(self, x, fill: float, count: int):
    n = x.size(0)
    return (torch.zeros(n, 3), torch.zeros([n, count], dtype=7), torch.ones(count),
            torch.ones([n], dtype=11), torch.full([n, 2], fill), torch.full([count], 4),
            torch.full([2, n], count, dtype=3), x + torch.zeros(x.size()))
)JIT";

TEST(FilledTensors, MatchTheJitForRunTimeSizesAndDtypes) {
  expectMatchesJit(kFilled, {{{torch::randn({4, 2}), 1.5, 3}},
                             {{torch::randn({1, 5}), -2.0, 0}},
                             {{torch::randn({0, 1}), 0.25, 2}}});
  expectKinds(kFilled, {{"aten::zeros", KernelKind::kOutVariant},
                        {"aten::ones", KernelKind::kOutVariant},
                        {"aten::full", KernelKind::kOutVariant}});
}

// A device (as nn.LSTM passes one for its initial state) is left to the JIT operator.
TEST(FilledTensors, APlacementArgumentIsLeftToTheJit) {
  const char* source = R"JIT(
def forward(self, x):
    return torch.zeros(x.size(0), 2, device=x.device, dtype=x.dtype)
)JIT";
  expectKinds(source, {{"aten::zeros", KernelKind::kFallback}});
  expectMatchesJit(source, {{{torch::randn({3})}}, {{torch::randn({1})}}});
}

// A negative size is refused with ATen's message, and the runtime keeps working.
TEST(FilledTensors, NegativeSizeIsAClearErrorAndTheRuntimeRecovers) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, n: int):
    return torch.ones(n, 2)
)JIT"));
  StaticRuntime runtime(module);
  EXPECT_TRUE(torch::equal(runtime({3}).toTensor(), torch::ones({3, 2})));
  try {
    static_cast<void>(runtime({-1}));
    ADD_FAILURE() << "a negative size ran";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find("negative dimension -1"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(torch::equal(runtime({2}).toTensor(), torch::ones({2, 2})));
}

} // namespace
} // namespace srt::testing
