// conv2d with a constant weight (ops/conv/convolution.cpp) on small weights and images, the stems
// and heads of small CNNs (ops/conv/onednn_conv_test.cpp has the rest); a weight given at run time
// keeps ATen's native kernel; all against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

torch::jit::Module convModule(const at::Tensor& weight, const at::Tensor& bias,
                              const std::string& source) {
  torch::jit::Module module("ConvModule");
  module.register_parameter("weight", weight, /*is_buffer=*/false);
  module.register_parameter("bias", bias, /*is_buffer=*/false);
  module.define(source);
  module.eval();
  return module;
}

// Every geometry: padding (symmetric and not), stride, dilation, a 1x1
// (no columns at all), no bias, and an input whose planes are not a multiple of anything.
constexpr const char* kGeometries = R"JIT(
def forward(self, x):
    padded = torch.conv2d(x, self.weight, self.bias, 1, 1)
    strided = torch.conv2d(x, self.weight, None, [2, 1], [1, 2], [1, 1], 1)
    dilated = torch.conv2d(x, self.weight, self.bias, 1, 2, 2, 1)
    valid = torch.relu(torch.conv2d(x, self.weight, self.bias))
    return padded, strided, dilated, valid
)JIT";

TEST(Conv2dSmall, EveryGeometryMatchesJit) {
  const torch::jit::Module module =
      convModule(torch::randn({8, 3, 3, 3}), torch::randn({8}), kGeometries);
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 16, 16})}, {}},
                    {{torch::randn({2, 3, 9, 7})}, {}},
                    {{torch::randn({1, 3, 3, 3})}, {}},
                    // Not contiguous: ATen's result, copied into the planned output.
                    {{torch::randn({1, 11, 10, 3}).permute({0, 3, 1, 2})}, {}}},
                   {}, 1e-4);
  StaticModule prepared(module);
  const auto kinds = kernelKinds(prepared);
  EXPECT_EQ(kinds.at("srt::packed_conv2d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

TEST(Conv2dSmall, Pointwise) {
  expectMatchesJit(convModule(torch::randn({16, 8, 1, 1}), torch::randn({16}), R"JIT(
def forward(self, x):
    return torch.conv2d(x, self.weight, self.bias), torch.conv2d(x, self.weight, None, 2)
)JIT"),
                   {{{torch::randn({1, 8, 5, 6})}, {}}, {{torch::randn({3, 8, 4, 4})}, {}}}, {},
                   1e-4);
}

TEST(Conv2dSmall, BadInputsAreAtenErrorsAndTheRuntimeRecovers) {
  const torch::jit::Module module =
      convModule(torch::randn({8, 3, 3, 3}), torch::randn({8}), kGeometries);
  StaticModule prepared(module);
  StaticRuntime runtime(prepared);
  EXPECT_THROW(runtime({torch::randn({1, 4, 8, 8})}), c10::Error); // wrong channel count
  EXPECT_THROW(runtime({torch::randn({1, 3, 2, 2})}), c10::Error); // smaller than the kernel
  const at::Tensor x = torch::randn({1, 3, 8, 8});
  const auto outputs = runtime({x}).toTupleRef().elements();
  EXPECT_TRUE(torch::allclose(
      outputs[0].toTensor(),
      at::conv2d(x, module.attr("weight").toTensor(), module.attr("bias").toTensor(), 1, 1), 1e-4,
      1e-5));
}

// A weight that is not a constant (an input) keeps ATen's kernel.
TEST(Conv2d, WeightGivenAtRunTimeKeepsAtensKernel) {
  const char* source = R"JIT(
def forward(self, x, w):
    return torch.conv2d(x, w, None, 1, 1)
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({1, 3, 8, 8}), torch::randn({4, 3, 3, 3})}, {}},
                    {{torch::randn({2, 3, 5, 6}), torch::randn({2, 3, 1, 1})}, {}}},
                   1e-4);
  StaticModule prepared(scriptModule(source));
  EXPECT_EQ(kernelKinds(prepared).at("aten::conv2d"), std::set<KernelKind>{KernelKind::kNative});
}

} // namespace
} // namespace srt::testing
