// passes/conv_winograd.cpp: the 3x3 stride-1 convolutions Winograd suits get their packed weight
// repacked for it (once per weight, the direct copy dropped), an activation oneDNN's Winograd has
// no post-op for applied after it; the others keep the direct one (too few channels, a stride);
// disabled_passes switches it off; the results match the JIT through our kernels (layouts, shapes,
// residual, twice each) and through the op's JIT reference, which reads the weight back out of
// Winograd's layout.
#include <set>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/conv_weights.h"
#include "harness/differential.h"
#include "harness/onednn_log.h"
#include "harness/pass_testing.h"
#include "ops/conv/packed_conv.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

// Channels of the layers these tests run on oneDNN's Winograd: more than ops/conv/winograd.h's
// loop takes (64 x 64 channel pairs), which would run the layers it times faster instead.
constexpr int64_t kChannels = 80;

// Winograd's: a conv + bias + relu; a residual block's conv + add + relu; 80 -> 128 channels
// without epilogue; a weight two convolutions share; one without padding; hardswish (no Winograd
// post-op: run after the primitive); 80 -> 192 with SiLU after (run after the primitive; a fused
// MBConv expansion, whose weight is no larger than a 128 -> 128 one's). Not: 16 output channels,
// stride 2.
torch::jit::Module winogradModule() {
  torch::jit::Module module("WinogradModule");
  module.register_parameter("first", convWeight(kChannels, kChannels, 3), false);
  module.register_parameter("first_bias", torch::randn({kChannels}) * 0.1, false);
  module.register_parameter("second", convWeight(kChannels, kChannels, 3), false);
  module.register_parameter("widen", convWeight(128, kChannels, 3), false);
  module.register_parameter("shared", convWeight(128, 128, 3), false);
  module.register_parameter("unpadded", convWeight(kChannels, kChannels, 3), false);
  module.register_parameter("hardswish", convWeight(kChannels, kChannels, 3), false);
  module.register_parameter("narrow", convWeight(16, kChannels, 3), false);
  module.register_parameter("expand", convWeight(192, kChannels, 3), false);
  module.register_parameter("strided", convWeight(kChannels, kChannels, 3), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.first, self.first_bias, 1, 1))
    b = torch.relu(torch.conv2d(a, self.second, None, 1, 1) + x)
    c = torch.conv2d(b, self.widen, None, 1, 1)
    d = torch.conv2d(torch.relu(torch.conv2d(c, self.shared, None, 1, 1)), self.shared, None, 1, 1)
    e = torch.conv2d(b, self.unpadded, None, 1, 0)
    f = torch.hardswish(torch.conv2d(b, self.hardswish, None, 1, 1))
    g = torch.conv2d(b, self.narrow, None, 1, 1)
    h = torch.conv2d(b, self.strided, None, 2, 1)
    i = torch.silu(torch.conv2d(b, self.expand, None, 1, 1))
    return d, e, f, g, h, i
)JIT");
  module.eval();
  return module;
}

struct PackedConvs {
  size_t winograd_nodes = 0;
  size_t direct_nodes = 0;
  std::set<const ops::OneDnnConvWeight*> winograd_weights;
};

PackedConvs packedConvs(const torch::jit::Graph& graph) {
  PackedConvs found;
  for (const torch::jit::Node* node : graph.nodes()) {
    // Both kinds: passes/blocked_layout.cpp keeps chains of these blocked.
    if (node->kind() != c10::Symbol::fromQualString("srt::packed_conv2d") &&
        node->kind() != c10::Symbol::fromQualString("srt::blocked_conv2d")) {
      continue;
    }
    const auto weight =
        torch::jit::toIValue(node->input(1))->toCustomClass<ops::PackedConvWeight>();
    if (ops::convAlgorithm(*weight->packed) == ops::ConvAlgorithm::kWinograd) {
      ++found.winograd_nodes;
      found.winograd_weights.insert(weight->packed.get());
    } else {
      ++found.direct_nodes;
    }
  }
  return found;
}

// The distinct packed weights the graph's constants hold (each constant is its own TorchScript
// object; the packed weight inside is what layers share).
size_t packedWeightsHeld(const torch::jit::Graph& graph) {
  std::set<const ops::OneDnnConvWeight*> held;
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::Constant &&
        node->output()->type()->kind() == c10::TypeKind::ClassType) {
      held.insert(torch::jit::toIValue(node->output())
                      ->toCustomClass<ops::PackedConvWeight>()
                      ->packed.get());
    }
  }
  return held.size();
}

bool winogradAvailable() {
  ops::ConvArguments arguments;
  arguments.padding[0] = arguments.padding[1] = 1;
  const auto packed = ops::packConvWeight(convWeight(64, 64, 3), at::Tensor(), arguments);
  return packed != nullptr && ops::winogradSuits(*packed, ops::ConvEpilogue());
}

#define SKIP_WITHOUT_WINOGRAD()                                                                    \
  if (!winogradAvailable()) {                                                                      \
    GTEST_SKIP() << "oneDNN has no Winograd convolution on this CPU";                              \
  }

TEST(ConvWinograd, RepacksTheConvolutionsItSuitsOncePerWeight) {
  SKIP_WITHOUT_WINOGRAD();
  StaticModule module(winogradModule());
  const torch::jit::Graph& graph = module.graph();
  const PackedConvs convs = packedConvs(graph);
  EXPECT_EQ(convs.winograd_nodes, 8u) << graph;
  EXPECT_EQ(convs.winograd_weights.size(), 7u) << graph; // the shared weight once
  EXPECT_EQ(convs.direct_nodes, 2u) << graph;            // 16 channels, stride 2
  // The direct-packed constants Winograd replaced are gone: every weight held once.
  EXPECT_EQ(packedWeightsHeld(graph), 7u + 2u) << graph;
}

TEST(ConvWinograd, DisabledPassesSwitchItOff) {
  StaticModuleOptions options;
  options.disabled_passes = {"conv_winograd"};
  StaticModule module(winogradModule(), options);
  const PackedConvs convs = packedConvs(module.graph());
  EXPECT_EQ(convs.winograd_nodes, 0u) << module.graph();
  EXPECT_EQ(convs.direct_nodes, 10u) << module.graph();
}

// Our kernels, each input twice and the first again after the others: images Winograd's weight
// layout takes (NCHW and channels-last), images it does not (direct, on the weight read back),
// batches (one image at a time, each with its residual: oneDNN's Winograd for a batch reads
// another weight layout), and a strided input (the reference path).
TEST(ConvWinograd, KernelsMatchJit) {
  const at::Tensor wide = torch::randn({1, kChannels, 10, 18});
  expectMatchesJit(
      winogradModule(),
      {{{torch::randn({1, kChannels, 32, 32})}, {}},
       {{torch::randn({1, kChannels, 56, 48}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
       {{torch::randn({1, kChannels, 12, 12})}, {}},
       {{torch::randn({2, kChannels, 9, 13}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
       {{torch::randn({3, kChannels, 28, 20})}, {}},
       {{torch::randn({8, kChannels, 16, 16}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
       {{wide.slice(3, 0, 18, 2)}, {}}},
      {}, 1e-4);
}

// On the runtime's own workers (2 threads), a batch splits into ranges of images, each run
// image by image on the one Winograd weight: 3 images (pieces of 1 and 2), 8, and a single
// image (by output channel blocks, below), each twice, the residual per image.
TEST(ConvWinograd, ImagesSplitOverOwnWorkersMatchJit) {
  SKIP_WITHOUT_WINOGRAD();
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  std::vector<at::Tensor> inputs;
  for (const int64_t batch : {3, 8, 1, 3}) {
    inputs.push_back(torch::randn({batch, kChannels, 14, 18}));
  }
  expectRuntimeMatchesJit(winogradModule(), inputs, {}, options, 1e-4);
}

// The oneDNN log line's part before `shape`: the implementation that ran it.
std::string winogradLineOf(const std::string& log, const std::string& shape) {
  const size_t at = log.find(shape);
  if (at == std::string::npos) {
    return "";
  }
  const size_t begin = log.rfind('\n', at);
  return log.substr(begin == std::string::npos ? 0 : begin, at - begin);
}

// One image on the runtime's own workers splits by blocks of output channels, each piece a
// Winograd convolution of its own weight slice (128 -> 64 of the shared 128-channel weight, in
// oneDNN's log) reading the whole input, its residual slice added; two shapes, twice each. An
// 80-channel layer stays whole: pieces of 32 or 48 channels would each transform the whole input.
TEST(ConvWinograd, OneImageSplitsByOutputChannelsOverOwnWorkers) {
  SKIP_WITHOUT_WINOGRAD();
  torch::jit::Module module = winogradModule();
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  expectRuntimeMatchesJit(
      module, {torch::randn({1, kChannels, 28, 28}), torch::randn({1, kChannels, 13, 17})}, {},
      options, 1e-4);
  StaticModule built(module);
  StaticRuntime runtime(built, options);
  const at::Tensor x = torch::randn({1, kChannels, 28, 28});
  const std::string log = steadyStateLog(runtime, {x});
  EXPECT_NE(log.find("ic128oc64_ih28"), std::string::npos) << log;
  EXPECT_NE(log.find("wino"), std::string::npos) << log;
  EXPECT_NE(winogradLineOf(log, "ic80oc80_ih28oh28kh3sh1dh0ph1").find("wino"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("ic80oc32_ih28oh28kh3sh1"), std::string::npos) << log;
  EXPECT_EQ(log.find("ic80oc48_ih28oh28kh3sh1"), std::string::npos) << log;
}

// The module on one thread, two OpenMP threads and two of the runtime's own workers, each input
// twice, against the JIT.
void expectEveryThreadingMatchesJit(const torch::jit::Module& module,
                                    const std::vector<at::Tensor>& inputs) {
  for (const IntraOpWorkers workers : {IntraOpWorkers::kOpenMp, IntraOpWorkers::kOwn}) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, " +
                   (workers == IntraOpWorkers::kOwn ? "own workers" : "OpenMP's"));
      RuntimeOptions options;
      options.intra_op_threads = threads;
      options.workers = workers;
      expectRuntimeMatchesJit(module, inputs, {}, options, 1e-4);
    }
  }
}

// oneDNN's Winograd picks its weight layout by the thread count its primitive is created with
// (80 -> 128 channels: output blocks paired on two threads, not on one). Single images of
// several sizes at 1 and 2 threads, on OpenMP's threads and the runtime's own, whatever the
// thread count the module was built on: each large enough for Winograd (28x28, 30x30) runs it on
// the one-thread layout or, on more OpenMP threads, in the layout oneDNN picks for them (the
// weight read back and packed again, which threw there before), the 80 -> 128 layer at 28x28
// too; the smaller ones run direct (winogradPays).
TEST(ConvWinograd, EveryThreadCountAndWorkerKindMatchesJit) {
  SKIP_WITHOUT_WINOGRAD();
  const torch::jit::Module module = winogradModule();
  std::vector<at::Tensor> inputs;
  for (const auto& [height, width] :
       std::vector<std::pair<int64_t, int64_t>>{{28, 28}, {13, 17}, {7, 7}, {30, 30}}) {
    inputs.push_back(torch::randn({1, kChannels, height, width}));
  }
  expectEveryThreadingMatchesJit(module, inputs);
  StaticModule built(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOpenMp;
  StaticRuntime runtime(built, options);
  const std::string log = steadyStateLog(runtime, {inputs[0]});
  EXPECT_NE(winogradLineOf(log, "ic80oc128_ih28").find("wino"), std::string::npos) << log;
}

// Activations oneDNN's Winograd has no post-op for (leaky_relu, ReLU6's clamp, tanh, gelu,
// hardswish; each alone and after a residual) keep their convolutions on Winograd and run after
// the primitive: in oneDNN's log every layer is Winograd; the results match the JIT at two sizes,
// twice each, on one thread, two OpenMP threads and two own workers (whose pieces each apply it
// to their part).
TEST(ConvWinograd, ActivationsWithoutAWinogradPostOpRunAfterIt) {
  SKIP_WITHOUT_WINOGRAD();
  torch::jit::Module module("Activations");
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
    module.register_parameter(name, convWeight(kChannels, kChannels, 3), false);
  }
  module.define(R"JIT(
def forward(self, x):
    a = torch.leaky_relu(torch.conv2d(x, self.a, None, 1, 1), 0.1)
    b = torch.hardtanh(torch.conv2d(a, self.b, None, 1, 1), 0.0, 6.0)
    c = torch.tanh(torch.conv2d(b, self.c, None, 1, 1))
    d = torch.gelu(torch.conv2d(c, self.d, None, 1, 1))
    e = torch.hardswish(torch.conv2d(d, self.e, None, 1, 1))
    f = torch.leaky_relu(torch.conv2d(e, self.f, None, 1, 1) + x, 0.2)
    return f
)JIT");
  module.eval();
  StaticModule built(module);
  const PackedConvs convs = packedConvs(built.graph());
  EXPECT_EQ(convs.winograd_nodes, 6u) << built.graph();
  EXPECT_EQ(convs.direct_nodes, 0u) << built.graph();
  const std::vector<at::Tensor> inputs{torch::randn({1, kChannels, 28, 28}),
                                       torch::randn({2, kChannels, 13, 17})};
  expectEveryThreadingMatchesJit(module, inputs);
  StaticRuntime runtime(built);
  const std::string log = steadyStateLog(runtime, {inputs[0]});
  size_t convolutions = 0;
  for (size_t at = log.find("convolution"); at != std::string::npos;
       at = log.find("convolution", at + 1)) {
    const size_t begin = log.rfind('\n', at);
    const size_t end = log.find('\n', at);
    const std::string line = log.substr(begin == std::string::npos ? 0 : begin, end - begin);
    EXPECT_NE(line.find("wino"), std::string::npos) << line;
    ++convolutions;
    at = end == std::string::npos ? at : end;
  }
  EXPECT_GE(convolutions, 6u) << log;
}

// The packed Winograd layout is chosen on a 32x32 image; oneDNN's Winograd for 48 -> 192
// channels at 56x56 wants another (efficientnet_v2_s's fused MBConv expansion): that image runs
// Winograd in its own layout (packed once for every runtime), not the direct algorithm, on one
// thread; the results match the JIT at that size and at another, twice each.
TEST(ConvWinograd, AnImageWhoseLayoutDiffersRunsWinogradInItsOwn) {
  SKIP_WITHOUT_WINOGRAD();
  torch::jit::Module module("Expansion");
  module.register_parameter("expand", convWeight(192, 48, 3), false);
  module.define(R"JIT(
def forward(self, x):
    return torch.silu(torch.conv2d(x, self.expand, None, 1, 1))
)JIT");
  module.eval();
  RuntimeOptions options;
  options.intra_op_threads = 1;
  expectRuntimeMatchesJit(module, {torch::randn({1, 48, 56, 56}), torch::randn({1, 48, 20, 24})},
                          {}, options, 1e-4);
  StaticModule built(module);
  EXPECT_EQ(packedConvs(built.graph()).winograd_nodes, 1u) << built.graph();
  StaticRuntime runtime(built, options);
  const at::Tensor x = torch::randn({1, 48, 56, 56});
  const std::string log = steadyStateLog(runtime, {x});
  EXPECT_NE(winogradLineOf(log, "ic48oc192_ih56").find("wino"), std::string::npos) << log;
}

// Below 20x20 output pixels a call (ops::winogradPays), a Winograd weight's convolution runs the
// direct algorithm, on a copy of the weight packed for it once: a 13x13 image direct (its line in
// oneDNN's log not Winograd), 28x28 and a batch of four 13x13s Winograd; every size matches the
// JIT twice, in the blocked chain and alone (channels last), on one thread, two OpenMP threads
// and two own workers.
TEST(ConvWinograd, SmallImagesRunDirectOnACopyOfTheWeight) {
  SKIP_WITHOUT_WINOGRAD();
  torch::jit::Module module("SmallImages");
  for (const char* name : {"a", "b", "c", "alone"}) {
    module.register_parameter(name, convWeight(kChannels, kChannels, 3), false);
  }
  module.register_parameter("a_bias", torch::randn({kChannels}) * 0.1, false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.a, self.a_bias, 1, 1))
    b = torch.relu(torch.conv2d(a, self.b, None, 1, 1) + x)
    c = torch.hardswish(torch.conv2d(b, self.c, None, 1, 1))
    return c, torch.relu(torch.conv2d(x.contiguous(memory_format=2), self.alone, None, 1, 1))
)JIT");
  module.eval();
  StaticModule built(module);
  EXPECT_EQ(packedConvs(built.graph()).winograd_nodes, 4u) << built.graph();
  expectEveryThreadingMatchesJit(
      module, {torch::randn({1, kChannels, 13, 13}), torch::randn({1, kChannels, 28, 28}),
               torch::randn({4, kChannels, 13, 13}), torch::randn({1, kChannels, 13, 13})});
  StaticRuntime runtime(built);
  const auto algorithm_at = [&](const at::Tensor& x, const std::string& shape) {
    const std::string log = steadyStateLog(runtime, {x});
    const std::string line = winogradLineOf(log, shape);
    EXPECT_FALSE(line.empty()) << log;
    return line.find("wino") != std::string::npos ? "winograd" : "direct";
  };
  EXPECT_STREQ(algorithm_at(torch::randn({1, kChannels, 13, 13}), "ic80oc80_ih13"), "direct");
  EXPECT_STREQ(algorithm_at(torch::randn({1, kChannels, 28, 28}), "ic80oc80_ih28"), "winograd");
  EXPECT_STREQ(algorithm_at(torch::randn({4, kChannels, 13, 13}), "ic80oc80_ih13"), "winograd");
}

// The JIT runs srt::packed_conv2d's reference, on the weight read back out of Winograd's layout.
TEST(ConvWinograd, JitReferenceReadsTheWinogradWeight) {
  SKIP_WITHOUT_WINOGRAD();
  auto graph = passes::prepareModule(winogradModule()).graph;
  passes::fuseConvEpilogues(graph);
  passes::packConvWeights(graph);
  expectPassPreservesResults(
      passes::useWinogradConvolutions, graph,
      {{torch::randn({1, kChannels, 8, 8})}, {torch::randn({2, kChannels, 7, 5})}},
      /*expect_changed=*/true, 1e-4);
}

TEST(ConvWinograd, UnpackedWeightIsTheOriginal) {
  SKIP_WITHOUT_WINOGRAD();
  ops::ConvArguments arguments;
  const at::Tensor weight = convWeight(128, 96, 3);
  const at::Tensor bias = torch::randn({128});
  const auto direct = ops::packConvWeight(weight, bias, arguments);
  ASSERT_NE(direct, nullptr);
  ASSERT_TRUE(ops::winogradSuits(*direct, ops::ConvEpilogue()));
  const auto winograd = ops::packForWinograd(*direct);
  EXPECT_EQ(ops::convAlgorithm(*winograd), ops::ConvAlgorithm::kWinograd);
  EXPECT_TRUE(torch::allclose(ops::unpackConvWeight(*winograd), weight, 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(ops::convBias(*winograd), bias));
}

} // namespace
} // namespace srt::testing
