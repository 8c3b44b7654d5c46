// Convolutions on oneDNN with the weight packed at build (ops/conv/onednn_conv.cpp), against the
// JIT: grouped and depthwise, strided, dilated, padded, with and without bias, NCHW and
// channels-last inputs, shapes changing between runs, and what falls back to ATen (another
// layout, bad inputs).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

torch::jit::Module convModule(std::vector<std::pair<std::string, at::Tensor>> parameters,
                              const std::string& source) {
  torch::jit::Module module("ConvModule");
  for (auto& [name, tensor] : parameters) {
    module.register_parameter(name, tensor, /*is_buffer=*/false);
  }
  module.define(source);
  module.eval();
  return module;
}

constexpr int64_t kChannels = 96;

TEST(Conv2dOneDnn, EveryArgumentMatchesJit) {
  const torch::jit::Module module =
      convModule({{"dense", torch::randn({kChannels, 16, 3, 3}) * 0.1},
                  {"grouped", torch::randn({kChannels, 4, 3, 3}) * 0.1},
                  {"depthwise", torch::randn({16, 1, 3, 3})},
                  {"pointwise", torch::randn({kChannels, 16, 1, 1}) * 0.2},
                  {"bias", torch::randn({kChannels})},
                  {"small_bias", torch::randn({16})}},
                 R"JIT(
def forward(self, x):
    padded = torch.conv2d(x, self.dense, self.bias, 1, 1)
    strided = torch.conv2d(x, self.dense, None, [2, 1], [1, 2], [1, 1], 1)
    dilated = torch.conv2d(x, self.dense, self.bias, 1, 2, 2, 1)
    grouped = torch.conv2d(x, self.grouped, self.bias, 1, 1, 1, 4)
    depthwise = torch.conv2d(x, self.depthwise, self.small_bias, 2, 1, 1, 16)
    pointwise = torch.conv2d(x, self.pointwise, self.bias)
    return padded, strided, dilated, grouped, depthwise, pointwise
)JIT");
  expectMatchesJit(
      module,
      {{{torch::randn({1, 16, 12, 12})}, {}},
       {{torch::randn({2, 16, 9, 7})}, {}},
       {{torch::randn({1, 16, 20, 20}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
       // Neither layout: ATen's result, copied into the planned output.
       {{torch::randn({1, 12, 10, 16}).permute({0, 3, 1, 2})}, {}}},
      {}, 1e-4);
  // Every weight here is packed as one constant (passes/conv_weight_packing.cpp).
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.count("aten::conv2d"), 0u);
  EXPECT_EQ(kinds.at("srt::packed_conv2d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

// A small weight on a large image (ResNet's stem at 224x224), with the fused activation.
TEST(Conv2dOneDnn, SmallWeightLargeImage) {
  const torch::jit::Module module =
      convModule({{"weight", torch::randn({8, 3, 7, 7}) * 0.1}, {"bias", torch::randn({8})}}, R"JIT(
def forward(self, x):
    return torch.relu(torch.conv2d(x, self.weight, self.bias, 2, 3))
)JIT");
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 224, 224})}, {}}, {{torch::randn({1, 3, 20, 20})}, {}}},
                   {}, 1e-4);
}

// A channels-last input runs without a reorder; the caller gets NCHW back, as from every
// network the runtime keeps channels last inside (passes/channels_last.cpp).
TEST(Conv2dOneDnn, ChannelsLastInput) {
  const torch::jit::Module module =
      convModule({{"weight", torch::randn({kChannels, 8, 3, 3})}}, R"JIT(
def forward(self, x):
    return torch.conv2d(x, self.weight, None, 1, 1)
)JIT");
  StaticModule prepared(module);
  const at::Tensor x = torch::randn({2, 8, 10, 10}).contiguous(at::MemoryFormat::ChannelsLast);
  for (int run = 0; run < 2; ++run) {
    const at::Tensor y = prepared({x}).toTensor();
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(
        torch::allclose(y, at::conv2d(x, module.attr("weight").toTensor(), {}, 1, 1), 1e-4, 1e-4));
  }
}

TEST(Conv2dOneDnn, BadInputsAreAtenErrorsAndTheRuntimeRecovers) {
  const torch::jit::Module module =
      convModule({{"weight", torch::randn({kChannels, 8, 3, 3})}}, R"JIT(
def forward(self, x):
    return torch.conv2d(x, self.weight, None)
)JIT");
  StaticModule prepared(module);
  StaticRuntime runtime(prepared);
  EXPECT_THROW(runtime({torch::randn({1, 4, 8, 8})}), c10::Error); // wrong channel count
  EXPECT_THROW(runtime({torch::randn({1, 8, 2, 2})}), c10::Error); // smaller than the kernel
  const at::Tensor x = torch::randn({1, 8, 8, 8});
  EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(),
                              at::conv2d(x, module.attr("weight").toTensor()), 1e-4, 1e-4));
}

} // namespace
} // namespace srt::testing
