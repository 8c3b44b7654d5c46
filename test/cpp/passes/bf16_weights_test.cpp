// passes/bf16_weights.cpp: with fp32_precision = bf16, every packed linear weight and every
// convolution weight but depthwise ones is packed again as bfloat16 (once per weight, the float32
// copy dropped, no Winograd), and the kernels multiply in bfloat16: the results are float32's to
// within bfloat16's rounding, and not float32's exactly. With the default options nothing changes.
#include <set>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/onednn_log.h"
#include "ops/conv/packed_conv.h"
#include "ops/core/multiply_precision.h"
#include "ops/gemm/onednn.h"
#include "ops/gemm/packed_linear.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

using ops::MultiplyPrecision;

at::Tensor scaled(at::IntArrayRef sizes, int64_t fan_in) {
  return torch::randn(sizes) * (1.0 / std::sqrt(static_cast<double>(fan_in)));
}

// A small CNN and MLP head: a 3x3 conv + relu (64 channels: Winograd's otherwise), a depthwise
// conv, a 1x1 conv with a residual, a weight two convolutions share, then linear + gelu and a
// linear with a residual, whose weight two linears share.
torch::jit::Module mixedModule() {
  torch::jit::Module module("MixedModule");
  module.register_parameter("stem", scaled({64, 64, 3, 3}, 64 * 9), false);
  module.register_parameter("depthwise", scaled({64, 1, 3, 3}, 9), false);
  module.register_parameter("pointwise", scaled({64, 64, 1, 1}, 64), false);
  module.register_parameter("shared", scaled({64, 64, 3, 3}, 64 * 9), false);
  module.register_parameter("fc1", scaled({256, 64}, 64), false);
  module.register_parameter("fc1_bias", torch::randn({256}) * 0.1, false);
  module.register_parameter("fc2", scaled({64, 256}, 256), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    b = torch.conv2d(a, self.depthwise, None, 1, 1, 1, 64)
    c = torch.conv2d(b, self.pointwise) + a
    d = torch.conv2d(torch.relu(torch.conv2d(c, self.shared, None, 1, 1)), self.shared, None, 1, 1)
    t = torch.mean(d, [2, 3]).unsqueeze(1).expand(-1, 4, -1)
    h = torch.gelu(torch.linear(t, self.fc1, self.fc1_bias))
    y = torch.linear(h, self.fc2) + t
    return d, torch.linear(torch.linear(y, self.fc2.t()), self.fc2)
)JIT");
  module.eval();
  return module;
}

StaticModuleOptions bf16Options() {
  StaticModuleOptions options;
  options.fp32_precision = Fp32Precision::kBf16;
  return options;
}

struct PackedWeights {
  std::set<const ops::OneDnnPackedWeight*> linear_bf16, linear_f32;
  std::set<const ops::OneDnnConvWeight*> conv_bf16, conv_f32;
  size_t winograd = 0;
};

// The packed weights the graph's constants hold, by kind and precision.
PackedWeights packedWeights(const torch::jit::Graph& graph) {
  PackedWeights found;
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() != c10::prim::Constant ||
        node->output()->type()->kind() != c10::TypeKind::ClassType) {
      continue;
    }
    const c10::IValue value = *torch::jit::toIValue(node->output());
    if (value.type() == c10::getCustomClassType<c10::intrusive_ptr<ops::PackedConvWeight>>()) {
      const auto& packed = value.toCustomClass<ops::PackedConvWeight>()->packed;
      const bool bf16 = ops::multiplyPrecision(*packed) == MultiplyPrecision::kBFloat16;
      (bf16 ? found.conv_bf16 : found.conv_f32).insert(packed.get());
      found.winograd += ops::convAlgorithm(*packed) == ops::ConvAlgorithm::kWinograd;
    } else {
      const auto& packed = value.toCustomClass<ops::PackedLinearWeight>()->packed;
      const bool bf16 = ops::multiplyPrecision(*packed) == MultiplyPrecision::kBFloat16;
      (bf16 ? found.linear_bf16 : found.linear_f32).insert(packed.get());
    }
  }
  return found;
}

#define SKIP_WITHOUT_BF16()                                                                        \
  if (!ops::cpuMultipliesBFloat16()) {                                                             \
    GTEST_SKIP() << "this CPU has no native bfloat16: fp32_precision=bf16 keeps float32";          \
  }

TEST(Bf16Weights, RepacksLinearAndNonDepthwiseConvWeightsOnce) {
  SKIP_WITHOUT_BF16();
  StaticModule module(mixedModule(), bf16Options());
  const PackedWeights weights = packedWeights(module.graph());
  // fc1, fc2 and fc2ᵀ (its transpose is another weight); stem, pointwise, shared once each.
  EXPECT_EQ(weights.linear_bf16.size(), 3u) << module.graph();
  EXPECT_EQ(weights.conv_bf16.size(), 3u) << module.graph();
  // The depthwise weight stays float32; no float32 copy of the others is left.
  EXPECT_EQ(weights.conv_f32.size(), 1u) << module.graph();
  EXPECT_TRUE(weights.linear_f32.empty()) << module.graph();
  EXPECT_EQ(weights.winograd, 0u) << module.graph();
}

TEST(Bf16Weights, DefaultOptionsKeepFloat32) {
  StaticModule module(mixedModule());
  const PackedWeights weights = packedWeights(module.graph());
  EXPECT_TRUE(weights.linear_bf16.empty() && weights.conv_bf16.empty()) << module.graph();
  EXPECT_EQ(weights.linear_f32.size(), 3u) << module.graph();
}

// Two images and batches, contiguous and channels-last, each twice (harness): within bfloat16's
// rounding of the JIT's float32 results.
TEST(Bf16Weights, KernelsMatchJitWithinBfloat16Rounding) {
  expectMatchesJit(mixedModule(),
                   {{{torch::randn({1, 64, 12, 12})}, {}},
                    {{torch::randn({2, 64, 9, 7}).contiguous(at::MemoryFormat::ChannelsLast)}, {}}},
                   bf16Options(), 5e-2);
}

// The bfloat16 kernels ran: the results are not float32's to float32's rounding.
TEST(Bf16Weights, ResultsAreBfloat16s) {
  SKIP_WITHOUT_BF16();
  torch::jit::Module reference = mixedModule();
  StaticModule module(reference, bf16Options());
  const at::Tensor x = torch::randn({1, 64, 12, 12});
  const auto expected = reference.forward({x}).toTuple();
  const auto actual = module({x}).toTuple();
  for (size_t i = 0; i < 2; ++i) {
    const at::Tensor e = expected->elements()[i].toTensor();
    const at::Tensor a = actual->elements()[i].toTensor();
    const double error = (e - a).abs().max().item<double>() / e.abs().max().item<double>();
    EXPECT_GT(error, 1e-5) << "output " << i;
    EXPECT_LT(error, 3e-2) << "output " << i;
  }
}

// A grouped, dilated 1-D convolution (lowered to 2-D): oneDNN 2.6 picks an AMX bfloat16
// implementation whose kernel then fails to generate; the next implementation runs it.
TEST(Bf16Weights, ConvolutionsWhoseFirstImplementationFailsStillRun) {
  torch::jit::Module module("GroupedDilated");
  module.register_parameter("first", scaled({32, 8, 5}, 8 * 5), false);
  module.register_parameter("grouped", scaled({32, 8, 3}, 8 * 3), false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv1d(x, self.first, None, 1, 2))
    return torch.gelu(torch.conv1d(y, self.grouped, None, 1, 2, 2, 4))
)JIT");
  module.eval();
  expectMatchesJit(module, {{{torch::randn({1, 8, 50})}, {}}, {{torch::randn({3, 8, 37})}, {}}},
                   bf16Options(), 5e-2);
}

// Under the runtime's own workers (what OMP_WAIT_POLICY=PASSIVE picks), bfloat16 convolutions
// split into pieces as float32 ones do, instead of one primitive waking OpenMP's sleeping threads:
// one image by rows, a batch by images. Each piece rounds its own slab of the input to bfloat16,
// so the results are the one-thread runtime's to float32's rounding, and the JIT's to bfloat16's.
TEST(Bf16Weights, ConvolutionsSplitIntoPiecesOverTheOwnWorkers) {
  SKIP_WITHOUT_BF16();
  torch::jit::Module reference("Stem");
  reference.register_parameter("stem", scaled({16, 3, 3, 3}, 3 * 9), false);
  reference.register_parameter("wide", scaled({64, 16, 3, 3}, 16 * 9), false);
  reference.register_parameter("bias", torch::randn({64}) * 0.1, false);
  reference.register_parameter("depthwise", scaled({64, 1, 3, 3}, 9), false);
  reference.register_parameter("pointwise", scaled({64, 64, 1, 1}, 64), false);
  reference.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    b = torch.relu(torch.conv2d(a, self.wide, self.bias, 1, 1))
    c = torch.conv2d(b, self.depthwise, None, 1, 1, 1, 64)
    return torch.conv2d(c, self.pointwise) + b
)JIT");
  reference.eval();
  StaticModule module(reference, bf16Options());
  RuntimeOptions one_thread;
  one_thread.intra_op_threads = 1;
  RuntimeOptions own_workers;
  own_workers.intra_op_threads = 2;
  own_workers.workers = IntraOpWorkers::kOwn;
  StaticRuntime whole(module, one_thread);
  StaticRuntime pieces(module, own_workers);
  const std::vector<at::Tensor> inputs = {torch::randn({1, 3, 32, 32}),
                                          torch::randn({2, 3, 24, 20})};
  for (int run = 0; run < 2; ++run) {
    for (const at::Tensor& x : inputs) {
      const at::Tensor expected = reference.forward({x}).toTensor();
      const at::Tensor single = whole({x}).toTensor();
      const at::Tensor split = pieces({x}).toTensor();
      const double scale = expected.abs().max().item<double>();
      EXPECT_LT((split - single).abs().max().item<double>(), 1e-5 * scale) << x.sizes();
      EXPECT_LT((split - expected).abs().max().item<double>(), 3e-2 * scale) << x.sizes();
    }
  }
  // The 16 -> 64 layer (channels last: no convolution in this chain prefers oneDNN's blocked
  // layout in bfloat16) by rows of its one image, and by images of the batch.
  const std::string image = steadyStateLog(pieces, {inputs[0]});
  EXPECT_NE(image.find("mb1_ic16oc64_ih17oh16"), std::string::npos) << image;
  EXPECT_EQ(image.find("mb1_ic16oc64_ih32oh32"), std::string::npos) << image;
  EXPECT_NE(image.find("wei_bf16"), std::string::npos) << image;
  const std::string batch = steadyStateLog(pieces, {inputs[1]});
  EXPECT_NE(batch.find("mb1_ic16oc64_ih24oh24"), std::string::npos) << batch;
  EXPECT_EQ(batch.find("mb2_"), std::string::npos) << batch;
}

TEST(Bf16Weights, RepackedValuesAreTheWeightsRounded) {
  const at::Tensor weight = torch::randn({96, 80});
  const auto packed = ops::packOneDnnWeight(weight);
  ASSERT_NE(packed, nullptr);
  const auto bf16 = ops::repackOneDnnWeight(*packed, MultiplyPrecision::kBFloat16);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(ops::multiplyPrecision(*bf16), MultiplyPrecision::kBFloat16);
  EXPECT_TRUE(
      torch::equal(ops::unpackOneDnnWeight(*bf16), weight.to(at::kBFloat16).to(at::kFloat)));

  ops::ConvArguments arguments;
  const at::Tensor conv = torch::randn({32, 16, 3, 3});
  const at::Tensor bias = torch::randn({32});
  const auto packed_conv = ops::packConvWeight(conv, bias, arguments);
  ASSERT_NE(packed_conv, nullptr);
  const auto bf16_conv = ops::repackConvWeight(*packed_conv, MultiplyPrecision::kBFloat16);
  ASSERT_NE(bf16_conv, nullptr);
  EXPECT_TRUE(
      torch::equal(ops::unpackConvWeight(*bf16_conv), conv.to(at::kBFloat16).to(at::kFloat)));
  EXPECT_TRUE(torch::equal(ops::convBias(*bf16_conv), bias));
}

} // namespace
} // namespace srt::testing
