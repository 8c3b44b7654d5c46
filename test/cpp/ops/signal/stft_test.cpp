// aten::stft (ops/signal/stft.cpp) against the JIT: windowed and not, 1-D and batched signals,
// hop lengths given or defaulted, normalized; the forms it hands to ATen whole (a window shorter
// than the FFT, real output) too, and ATen's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

constexpr const char* kSpectra = R"JIT(
def forward(self, x, window):
    a = torch.stft(x, 64, 16, 64, window, False, True, True)
    b = torch.stft(x, 32, None, None, None, True, None, True)
    c = torch.stft(x, 64, 20, 48, window[:48], False, True, True)
    d = torch.stft(x, 32, 8, 32, None, False, True, False)
    return a.abs().pow(2.0), b, c, d
)JIT";

TEST(Stft, MatchesJit) {
  const torch::Tensor window = torch::hann_window(64);
  expectMatchesJit(kSpectra, {{{torch::randn({400}), window}},
                              {{torch::randn({3, 257}), window}},
                              {{torch::randn({2, 1000}).narrow(1, 10, 700), window}}});
  expectKinds(kSpectra, {{"aten::stft", KernelKind::kOutVariant}});
}

TEST(Stft, BadArgumentsAreAtensErrorsAndTheRuntimeKeepsWorking) {
  StaticModule module(scriptModule(kSpectra));
  const torch::Tensor window = torch::hann_window(64);
  EXPECT_THAT(
      [&] {
        static_cast<void>(module({torch::randn({40}), window}));
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("n_fft")));
  EXPECT_THAT(
      [&] {
        static_cast<void>(module({torch::randn({400}), torch::hann_window(50)}));
      },
      ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("window")));
  const torch::Tensor x = torch::randn({400});
  const auto outputs = module({x, window}).toTupleRef().elements();
  EXPECT_TRUE(
      torch::equal(outputs[1].toTensor(), torch::stft(x, 32, c10::nullopt, c10::nullopt,
                                                      c10::nullopt, true, c10::nullopt, true)));
}

} // namespace
} // namespace srt::testing
