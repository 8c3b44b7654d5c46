// Convolutions (2-D, 3-D) and transposed convolutions on oneDNN with the weight packed at build
// (ops/conv/onednn_conv.cpp), against the JIT: grouped and depthwise, strided, dilated, padded,
// output-padded, with and without bias, contiguous and channels-last inputs, shapes changing
// between runs, and what falls back to ATen (another layout, bad inputs); ungrouped transposed
// ones as one matmul (ops/conv/gemm_conv_transpose.cpp).
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/onednn_log.h"
#include "ops/conv/depthwise_blocked.h"
#include "ops/conv/pointwise_blocked.h"
#include "ops/conv/stem_conv.h"
#include "ops/conv/strided_winograd.h"
#include "ops/conv/winograd.h"
#include "ops/gemm/blocked_gemm.h"

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

RuntimeOptions oneThread() {
  RuntimeOptions options;
  options.intra_op_threads = 1;
  return options;
}

// `module` against the JIT on `inputs`, on one thread and on two of the runtime's own workers
// (where a dense input would split into pieces).
void expectMatchesJitOnOneThreadAndOwnWorkers(const torch::jit::Module& module,
                                              const std::vector<at::Tensor>& inputs) {
  RuntimeOptions own_workers;
  own_workers.intra_op_threads = 2;
  own_workers.workers = IntraOpWorkers::kOwn;
  for (const RuntimeOptions& options : {oneThread(), own_workers}) {
    expectRuntimeMatchesJit(module, inputs, {}, options, 1e-4);
  }
}

// Two runtimes of `prepared` compute bit-identical results on each of `inputs`: what the kernels
// choose once per weight and shape (a layout, a loop) is shared by every runtime of the module.
void expectRuntimesAgree(const StaticModule& prepared, const std::vector<at::Tensor>& inputs,
                         const RuntimeOptions& options = {}) {
  StaticRuntime first(prepared, options);
  StaticRuntime second(prepared, options);
  for (const at::Tensor& input : inputs) {
    const at::Tensor a = first({input}).toTensor().clone();
    const at::Tensor b = second({input}).toTensor();
    EXPECT_TRUE(torch::equal(a, b)) << "input " << input.sizes();
  }
}

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

// A convolution of half a batch's channels (ShuffleNet's blocks: torch.chunk, then a blocked
// 1x1 + depthwise + 1x1 chain) reads the strided half in place, through the reorder into the
// blocked layout, at every batch: from batch 2 on the half is not contiguous, and ATen's
// reference ran it with the weight repacked on every call (2.5x the convolution's time).
TEST(Conv2dOneDnn, AChannelRangeOfABatchIsReadInPlace) {
  const torch::jit::Module module = convModule({{"expand", torch::randn({24, 16, 1, 1}) * 0.2},
                                                {"depthwise", torch::randn({24, 1, 3, 3}) * 0.3},
                                                {"project", torch::randn({16, 24, 1, 1}) * 0.2}},
                                               R"JIT(
def forward(self, x):
    kept, convolved = x.chunk(2, 1)
    y = torch.relu(torch.conv2d(convolved, self.expand))
    y = torch.conv2d(torch.conv2d(y, self.depthwise, None, 1, 1, 1, 24), self.project)
    return torch.cat([kept, y], 1)
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({2, 32, 10, 12}),
                                          torch::randn({1, 32, 7, 7}), torch::randn({3, 32, 9, 5})};
  expectMatchesJitOnOneThreadAndOwnWorkers(module, inputs);
  StaticModule prepared(module);
  StaticRuntime runtime(prepared, oneThread());
  for (const at::Tensor& x : {inputs[0], inputs[2]}) {
    const std::string log = steadyStateLog(runtime, {x});
    EXPECT_NE(log.find("ic16oc24"), std::string::npos) << log;
    EXPECT_EQ(log.find("24x16x1x1"), std::string::npos) << log; // no weight repacked
  }
}

// A residual still needed after the convolution is added by a binary post-op reading it where it
// is, not copied into the output for a sum post-op first; one that dies there has the output
// written over it (Kernel::writes_over_input: the plan gives both one slot), which the sum
// post-op adds where it is. r below is both: the blocked 1x1 projection's residual (images too
// large for our pointwise loop; ReLU after the addition), then the last 3x3's (Winograd, whose
// primitives take the sum only; 80 channels, more than our own Winograd loop takes, so that
// oneDNN's runs it). On one thread and split over the runtime's own workers.
TEST(Conv2dOneDnn, AResidualIsReadInPlaceOrWrittenOver) {
  const torch::jit::Module module = convModule({{"square", torch::randn({80, 80, 3, 3}) * 0.05},
                                                {"expand", torch::randn({64, 80, 1, 1}) * 0.2},
                                                {"depthwise", torch::randn({64, 1, 3, 3}) * 0.3},
                                                {"project", torch::randn({80, 64, 1, 1}) * 0.2},
                                                {"last", torch::randn({80, 80, 3, 3}) * 0.05}},
                                               R"JIT(
def forward(self, x):
    r = torch.relu(torch.conv2d(x, self.square, None, 1, 1))
    y = torch.relu(torch.conv2d(r, self.expand))
    y = torch.relu(torch.conv2d(y, self.depthwise, None, 1, 1, 1, 64))
    z = torch.relu(torch.conv2d(y, self.project) + r)
    return torch.relu(torch.conv2d(z, self.last, None, 1, 1) + r) + z
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({2, 80, 32, 32}),
                                          torch::randn({1, 80, 30, 34})};
  expectMatchesJitOnOneThreadAndOwnWorkers(module, inputs);
  StaticModule prepared(module);
  StaticRuntime runtime(prepared, oneThread());
  const std::string log = steadyStateLog(runtime, {inputs[0]});
  const auto line = [&](size_t at) {
    EXPECT_NE(at, std::string::npos) << log;
    const size_t begin = log.rfind('\n', at) + 1;
    return log.substr(begin, log.find('\n', at) - begin);
  };
  const std::string projection = line(log.find("mb2_ic64oc80_ih32"));
  EXPECT_NE(projection.find("binary_add"), std::string::npos) << projection;
  EXPECT_EQ(projection.find("sum"), std::string::npos) << projection;
  const std::string last = line(log.rfind("ic80oc80_ih32"));
  EXPECT_NE(last.find("sum"), std::string::npos) << last;
  // r's slot, then the last convolution's output in it.
  EXPECT_NE(runtime.memoryPlan().find(" > %"), std::string::npos) << runtime.memoryPlan();
}

// Grouped convolutions of few channels per group (ResNeXt-, RegNet-style and narrower) on
// channels-last activations run oneDNN's direct kernel on them as they are: left to choose,
// oneDNN took im2col + GEMM on NCHW (3-4x slower, reorders included) or a 4-channel blocked
// layout whose reorders took most of the time.
TEST(Conv2dOneDnn, GroupedConvolutionsRunDirectlyOnChannelsLast) {
  const torch::jit::Module module = convModule({{"pairs", torch::randn({64, 2, 3, 3}) * 0.2},
                                                {"halves", torch::randn({100, 4, 3, 3}) * 0.2},
                                                {"quads", torch::randn({128, 4, 3, 3}) * 0.2},
                                                {"bias", torch::randn({128})}},
                                               R"JIT(
def forward(self, x, y):
    a = torch.relu(torch.conv2d(x, self.pairs, None, 1, 1, 1, 32))
    b = torch.conv2d(y, self.halves, None, 1, 1, 1, 2)
    return a, b, torch.conv2d(torch.cat([a, a], 1), self.quads, self.bias, 1, 1, 1, 32)
)JIT");
  const auto channels_last = [](at::Tensor t) {
    return t.contiguous(at::MemoryFormat::ChannelsLast);
  };
  const at::Tensor x = channels_last(torch::randn({1, 64, 20, 18}));
  const at::Tensor y = channels_last(torch::randn({1, 8, 20, 18}));
  expectMatchesJit(
      module,
      {{{x, y}, {}},
       {{channels_last(torch::randn({2, 64, 9, 7})), channels_last(torch::randn({2, 8, 9, 7}))},
        {}}},
      {}, 1e-4);
  StaticModule prepared(module);
  static_cast<void>(prepared({x, y}));
  const std::string log = oneDnnLog([&] { static_cast<void>(prepared({x, y})); });
  EXPECT_NE(log.find("exec,cpu,convolution"), std::string::npos) << log;
  EXPECT_EQ(log.find("gemm"), std::string::npos) << log;
  EXPECT_EQ(log.find("exec,cpu,reorder"), std::string::npos) << log;
}

// One input channel: a tensor contiguous both ways is read as its strides suggest: channels
// last where it was made so (the channels_last pass's conversion of wav2vec2's waveform),
// contiguous as given (a grayscale image). Either way the caller gets ATen's values and layout.
TEST(Conv2dOneDnn, OneChannelInputInEitherLayoutMatchesAten) {
  const torch::jit::Module module = convModule({{"weight", torch::randn({32, 1, 1, 10})}}, R"JIT(
def forward(self, x):
    return torch.conv2d(x, self.weight, None, [1, 5])
)JIT");
  StaticModule prepared(module);
  const at::Tensor waveform = torch::randn({2, 1, 1, 400});
  for (const at::MemoryFormat format :
       {at::MemoryFormat::ChannelsLast, at::MemoryFormat::Contiguous}) {
    const at::Tensor x = waveform.contiguous(format);
    const at::Tensor expected = at::conv2d(x, module.attr("weight").toTensor(), {}, {1, 5});
    for (int run = 0; run < 2; ++run) {
      const at::Tensor y = prepared({x}).toTensor();
      EXPECT_EQ(y.suggest_memory_format(), expected.suggest_memory_format());
      EXPECT_TRUE(torch::allclose(y, expected, 1e-4, 1e-4));
    }
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

// Convolutions split into pieces over the runtime's own workers (RuntimeOptions::workers, on by
// default under OMP_WAIT_POLICY=PASSIVE; forced here): slabs of images (batch 2), of rows (one
// image), of columns (one row), each piece with the padding of the whole where it meets the
// border; strided, dilated, depthwise, with bias, activation and fused residual. Each shape
// twice, then the first again, against the JIT; a contiguous input (no pieces) too.
TEST(Conv2dOneDnn, PiecesOverOwnWorkersMatchJit) {
  constexpr int64_t kWide = 64;
  torch::jit::Module module = convModule({{"dense", torch::randn({kWide, kWide, 3, 3}) * 0.05},
                                          {"depthwise", torch::randn({kWide, 1, 5, 5}) * 0.2},
                                          {"pointwise", torch::randn({kWide, kWide, 1, 1}) * 0.1},
                                          {"bias", torch::randn({kWide})}},
                                         R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.dense, self.bias, 1, 1))
    strided = torch.conv2d(a, self.dense, None, 2, 1)
    dilated = torch.conv2d(a, self.dense, self.bias, 1, 2, 2)
    depthwise = torch.conv2d(a, self.depthwise, None, 2, 2, 1, 64)
    residual = torch.relu(torch.conv2d(a, self.pointwise, None) + x)
    return strided, dilated, depthwise, residual
)JIT");
  const auto channelsLast = [](at::Tensor t) {
    return t.contiguous(at::MemoryFormat::ChannelsLast);
  };
  const std::vector<at::Tensor> inputs = {
      channelsLast(torch::randn({1, kWide, 29, 31})), channelsLast(torch::randn({2, kWide, 14, 9})),
      channelsLast(torch::randn({1, kWide, 1, 67})), torch::randn({1, kWide, 17, 17})};
  StaticModule prepared(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  StaticRuntime runtime(prepared, options);
  std::vector<at::Tensor> order = inputs;
  order.insert(order.end(), inputs.begin(), inputs.end());
  order.push_back(inputs[0]);
  for (const at::Tensor& x : order) {
    const auto expected = module.forward({x}).toTuple()->elements();
    const auto actual = runtime({x}).toTuple()->elements();
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(torch::allclose(actual[i].toTensor(), expected[i].toTensor(), 1e-4, 1e-4))
          << "output " << i << " for input " << x.sizes();
    }
  }
  const auto kinds = kernelKinds(prepared);
  EXPECT_EQ(kinds.count("aten::conv2d"), 0u);
}

// One image of more pixels than the small-image product takes, against a large weight (256
// channels at 10x14: 16.9x the output), splits into ranges of output channels on the runtime's own
// workers, not rows: each piece convolves the whole image with its slice of the weight into
// scratch, and a reorder spreads its channels into the output (the residual comes in the same
// way; a SiLU applies before). Against the JIT, each shape twice; 7x7 and 5x6 images (and a batch
// of two) run as products on the blocked GEMM instead.
TEST(Conv2dOneDnn, WeightHeavyImagesSplitByOutputChannels) {
  constexpr int64_t kWide = 256; // 3x3s this wide stay channels last (blocked_layout)
  torch::jit::Module module = convModule({{"first", torch::randn({kWide, kWide, 3, 3}) * 0.02},
                                          {"second", torch::randn({kWide, kWide, 3, 3}) * 0.02},
                                          {"bias", torch::randn({kWide})}},
                                         R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.first, self.bias, 1, 1))
    b = torch.relu(torch.conv2d(a, self.second, None, 1, 1) + x)
    return b, torch.silu(torch.conv2d(b, self.first, self.bias, 1, 1))
)JIT");
  const std::vector<at::Tensor> inputs = {
      torch::randn({1, kWide, 10, 14}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({1, kWide, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({1, kWide, 5, 6}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({2, kWide, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast)};
  StaticModule prepared(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  StaticRuntime runtime(prepared, options);
  for (const at::Tensor& x : inputs) {
    const auto expected = module.forward({x}).toTuple()->elements();
    for (int run = 0; run < 2; ++run) {
      const auto actual = runtime({x}).toTuple()->elements();
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(torch::allclose(actual[i].toTensor(), expected[i].toTensor(), 1e-4, 1e-4))
            << "output " << i << " for input " << x.sizes() << ", run " << run;
      }
    }
  }
  const std::string log = oneDnnLog([&] { static_cast<void>(runtime({inputs[0]})); });
  EXPECT_NE(log.find("mb1_ic256oc128_ih10oh10"), std::string::npos) << log;
  EXPECT_EQ(log.find("mb1_ic256oc256_ih10oh10"), std::string::npos) << log;
  EXPECT_EQ(kernelKinds(prepared).count("aten::conv2d"), 0u);
}

// Channels-last convolutions of at most 128 output pixels an image run as im2col products on the
// blocked GEMM (ops/conv/small_image_gemm.h), reading oneDNN's packed weight in place (blocks of
// 32, 48 and 64 output channels here, 80 padded to three of 32): 3x3 padded, strided and dilated,
// 1x1 read in place and strided, bias, residual added before the activation (ReLU, ReLU6's bounds,
// SiLU after), none at all; 7x7, 5x6 and a batch of two, each twice, against the JIT, on one thread
// and split over two; a 12x12 image (144 pixels) and a batch of three 7x7 ones (147) stay
// oneDNN's. Fails if the window gather, the weight's block addressing, the residual's order or a
// clamp bound goes wrong.
TEST(Conv2dOneDnn, SmallImagesRunAsProductsOnTheBlockedGemm) {
  if (!ops::blockedGemmRuns()) {
    GTEST_SKIP() << "the blocked GEMM is written for AVX-512";
  }
  torch::jit::Module module = convModule({{"c3", torch::randn({256, 128, 3, 3}) * 0.03},
                                          {"b3", torch::randn({256})},
                                          {"r3", torch::randn({256, 256, 3, 3}) * 0.02},
                                          {"s2", torch::randn({64, 256, 3, 3}) * 0.02},
                                          {"d2", torch::randn({80, 64, 3, 3}) * 0.05},
                                          {"p1", torch::randn({128, 256, 1, 1}) * 0.06},
                                          {"p2", torch::randn({96, 128, 1, 1}) * 0.08}},
                                         R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.c3, self.b3, 1, 1))
    b = torch.relu(torch.conv2d(a, self.r3, None, 1, 1) + a)
    c = torch.clamp(torch.conv2d(b, self.s2, None, 2, 1), 0.0, 6.0)
    d = torch.silu(torch.conv2d(c, self.d2, None, 1, 2, 2))
    e = torch.conv2d(b, self.p1)
    f = torch.conv2d(e, self.p2, None, 2)
    return b, c, d, e, f
)JIT");
  const std::vector<at::Tensor> inputs = {
      torch::randn({1, 128, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({1, 128, 5, 6}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({2, 128, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({1, 128, 12, 12}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({3, 128, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast)};
  StaticModule prepared(module);
  for (const int threads : {1, 2}) {
    RuntimeOptions options;
    options.intra_op_threads = threads;
    // The batch of three runs whole, so each node sees 147 pixels, not a slice's 98 or 49.
    options.split_batch = false;
    expectRuntimeMatchesJit(module, inputs, {}, options, 1e-4);
    StaticRuntime runtime(prepared, options);
    // Steady states: a first call may time oneDNN's kernel for the strided 3x3, whose shapes our
    // strided Winograd loop also takes (stridedWinogradFaster).
    const std::string small = steadyStateLog(runtime, {inputs[0]});
    EXPECT_EQ(small.find("exec,cpu,convolution"), std::string::npos) << small;
    const std::string large = steadyStateLog(runtime, {inputs[3]});
    EXPECT_NE(large.find("mb1_ic128oc256_ih12oh12"), std::string::npos) << large;
    const std::string batch = steadyStateLog(runtime, {inputs[4]});
    EXPECT_NE(batch.find("mb3_ic128oc256_ih7oh7"), std::string::npos) << batch;
  }
  EXPECT_EQ(kernelKinds(prepared).count("aten::conv2d"), 0u);
}

// A blocked projection whose output has fewer channel blocks than there are workers (96 -> 24,
// with bias and residual; 24 -> 16 on two, whose input's second block is a padded half) splits
// by input channel blocks on the runtime's own workers: each piece convolves its blocks of the
// input with its slice of the weight, the first into the output (bias, residual), the others into
// partial sums that are added in after. Against the JIT on 2 and 3 workers (two partial sums), each
// shape twice; a batch of two splits into images instead. Convolutions followed by an activation
// keep splitting by output channels.
TEST(Conv2dOneDnn, NarrowProjectionsSplitByInputChannels) {
  torch::jit::Module module = convModule({{"stem", torch::randn({24, 3, 3, 3}) * 0.3},
                                          {"expand", torch::randn({96, 24, 1, 1}) * 0.2},
                                          {"dw", torch::randn({96, 1, 3, 3}) * 0.3},
                                          {"project", torch::randn({24, 96, 1, 1}) * 0.1},
                                          {"project_bias", torch::randn({24})},
                                          {"narrow", torch::randn({16, 24, 1, 1}) * 0.2},
                                          {"narrow_bias", torch::randn({16})}},
                                         R"JIT(
def forward(self, x):
    a = torch.clamp(torch.conv2d(x, self.stem, None, 1, 1), 0.0, 6.0)
    b = torch.clamp(torch.conv2d(a, self.expand), 0.0, 6.0)
    c = torch.clamp(torch.conv2d(b, self.dw, None, 1, 1, 1, 96), 0.0, 6.0)
    d = torch.conv2d(c, self.project, self.project_bias) + a
    return torch.conv2d(d, self.narrow, self.narrow_bias)
)JIT");
  const std::vector<at::Tensor> inputs = {
      torch::randn({1, 3, 56, 56}), torch::randn({1, 3, 45, 61}), torch::randn({2, 3, 40, 40})};
  StaticModule prepared(module);
  for (const int threads : {2, 3}) {
    RuntimeOptions options;
    options.intra_op_threads = threads;
    options.workers = IntraOpWorkers::kOwn;
    StaticRuntime runtime(prepared, options);
    for (const at::Tensor& x : inputs) {
      const at::Tensor expected = module.forward({x}).toTensor();
      for (int run = 0; run < 2; ++run) {
        EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), expected, 1e-4, 1e-4))
            << threads << " threads, input " << x.sizes() << ", run " << run;
      }
    }
    const std::string log = oneDnnLog([&] { static_cast<void>(runtime({inputs[0]})); });
    const std::string project_slice = threads == 2 ? "mb1_ic48oc24_ih56" : "mb1_ic32oc24_ih56";
    EXPECT_NE(log.find(project_slice), std::string::npos) << threads << " threads:\n" << log;
    EXPECT_EQ(log.find("mb1_ic96oc24_ih56"), std::string::npos) << log;
    if (threads == 2) { // the narrow one's input has two blocks: too few for three pieces
      EXPECT_NE(log.find("mb1_ic16oc16_ih56"), std::string::npos) << log;
      EXPECT_NE(log.find("mb1_ic8oc16_ih56"), std::string::npos) << log;
    }
    EXPECT_EQ(log.find("mb1_ic24oc96"), std::string::npos) << log; // activation: by output blocks
  }
  EXPECT_EQ(kernelKinds(prepared).count("aten::conv2d"), 0u);
}

// The 1x1 convolutions of blocked chains on images of 14x14 pixels and fewer run in our loop on
// one thread (ops/conv/pointwise_blocked.h), oneDNN's kernel above: an expansion to 88 channels (a
// padded last block) with hardswish; two squeeze-excitations on one pixel, one of 4 channels (a
// weight oneDNN packs without input blocks) with relu and hardsigmoid, one of 20 (a padded second
// input block) with SiLU and sigmoid, applied after the loop; a 24 -> 24 with bias, residual and
// ReLU6; and the projection of the image times both excitations (the product a fused element-wise
// group on the blocked tensors). Images of 7x7, 14x14 and 15x15 and a batch of two, each twice
// against the JIT, at 1 thread.
TEST(Conv2dOneDnn, PointwiseConvolutionsOfSmallImagesMatchJit) {
  torch::jit::Module module = convModule({{"stem", torch::randn({24, 3, 3, 3}) * 0.3},
                                          {"expand", torch::randn({88, 24, 1, 1}) * 0.2},
                                          {"expand_bias", torch::randn({88})},
                                          {"dw", torch::randn({88, 1, 3, 3}) * 0.3},
                                          {"squeeze", torch::randn({4, 88, 1, 1}) * 0.3},
                                          {"squeeze_bias", torch::randn({4})},
                                          {"excite", torch::randn({88, 4, 1, 1}) * 0.5},
                                          {"excite_bias", torch::randn({88})},
                                          {"squeeze2", torch::randn({20, 88, 1, 1}) * 0.3},
                                          {"squeeze2_bias", torch::randn({20})},
                                          {"excite2", torch::randn({88, 20, 1, 1}) * 0.3},
                                          {"excite2_bias", torch::randn({88})},
                                          {"project", torch::randn({24, 88, 1, 1}) * 0.1},
                                          {"project_bias", torch::randn({24})},
                                          {"mix", torch::randn({24, 24, 1, 1}) * 0.2},
                                          {"mix_bias", torch::randn({24})}},
                                         R"JIT(
def forward(self, x):
    a = torch.clamp(torch.conv2d(x, self.stem, None, 1, 1), 0.0, 6.0)
    b = torch.hardswish(torch.conv2d(a, self.expand, self.expand_bias))
    c = torch.clamp(torch.conv2d(b, self.dw, None, 1, 1, 1, 88), 0.0, 6.0)
    p = torch.adaptive_avg_pool2d(c, [1, 1])
    s = torch.relu(torch.conv2d(p, self.squeeze, self.squeeze_bias))
    s = torch.hardsigmoid(torch.conv2d(s, self.excite, self.excite_bias))
    t = torch.silu(torch.conv2d(p, self.squeeze2, self.squeeze2_bias))
    t = torch.sigmoid(torch.conv2d(t, self.excite2, self.excite2_bias))
    d = torch.conv2d(c * (s * t), self.project, self.project_bias)
    return torch.clamp(torch.conv2d(d, self.mix, self.mix_bias) + a, 0.0, 6.0)
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({1, 3, 7, 7}), torch::randn({2, 3, 5, 6}),
                                          torch::randn({1, 3, 14, 14}),
                                          torch::randn({1, 3, 15, 15})};
  RuntimeOptions one_thread; // where every convolution of these sizes takes the loop
  one_thread.intra_op_threads = 1;
  expectRuntimeMatchesJit(module, inputs, {}, one_thread, 1e-4);
  StaticModule prepared(module);
  StaticRuntime runtime(prepared, one_thread);
  EXPECT_EQ(kernelKinds(prepared).count("aten::conv2d"), 0u);
  if (!ops::pointwise::blockedPointwiseAvailable()) {
    return;
  }
  // 7x7 and 14x14: none of the 1x1 convolutions in oneDNN; 15x15: the expansion is.
  for (const at::Tensor& input : {inputs[0], inputs[2]}) {
    const std::string small = oneDnnLog([&] { static_cast<void>(runtime({input})); });
    for (const char* shape : {"mb1_ic24oc88", "mb1_ic88oc4", "mb1_ic4oc88", "mb1_ic88oc20",
                              "mb1_ic20oc88", "mb1_ic88oc24", "mb1_ic24oc24"}) {
      EXPECT_EQ(small.find(shape), std::string::npos) << shape << "\n" << small;
    }
  }
  const std::string large = oneDnnLog([&] { static_cast<void>(runtime({inputs[3]})); });
  EXPECT_NE(large.find("mb1_ic24oc88_ih15"), std::string::npos) << large;
}

// A squeeze-excited projection (srt::scaled_blocked_conv2d: the image times one factor per image
// and channel, then a 1x1 convolution, here with a residual) of 14x14 pixels and fewer runs in the
// blocked pointwise loop on the image scaled into scratch; at 15x15 it stays oneDNN's. 88 channels
// (a padded last block) into 24; one image and a batch of two (factors per image), each twice
// against the JIT, at 1 thread.
TEST(Conv2dOneDnn, SqueezeExcitedProjectionsOfSmallImagesRunInThePointwiseLoop) {
  torch::jit::Module module = convModule({{"stem", torch::randn({24, 3, 3, 3}) * 0.3},
                                          {"expand", torch::randn({88, 24, 1, 1}) * 0.2},
                                          {"squeeze", torch::randn({8, 88, 1, 1}) * 0.3},
                                          {"squeeze_bias", torch::randn({8})},
                                          {"excite", torch::randn({88, 8, 1, 1}) * 0.5},
                                          {"excite_bias", torch::randn({88})},
                                          {"project", torch::randn({24, 88, 1, 1}) * 0.1},
                                          {"project_bias", torch::randn({24})}},
                                         R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    b = torch.relu(torch.conv2d(a, self.expand, None))
    p = torch.adaptive_avg_pool2d(b, [1, 1])
    s = torch.relu(torch.conv2d(p, self.squeeze, self.squeeze_bias))
    s = torch.sigmoid(torch.conv2d(s, self.excite, self.excite_bias))
    return torch.conv2d(b * s, self.project, self.project_bias) + a
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({1, 3, 7, 7}), torch::randn({2, 3, 5, 6}),
                                          torch::randn({1, 3, 15, 15})};
  RuntimeOptions one_thread;
  one_thread.intra_op_threads = 1;
  expectRuntimeMatchesJit(module, inputs, {}, one_thread, 1e-4);
  StaticModule prepared(module);
  EXPECT_EQ(kernelKinds(prepared).count("srt::scaled_blocked_conv2d"), 1u);
  if (!ops::pointwise::blockedPointwiseAvailable()) {
    return;
  }
  StaticRuntime runtime(prepared, one_thread);
  for (const at::Tensor& input : {inputs[0], torch::randn({1, 3, 14, 14})}) {
    const std::string small = oneDnnLog([&] { static_cast<void>(runtime({input})); });
    EXPECT_EQ(small.find("mb1_ic88oc24"), std::string::npos) << small;
  }
  const std::string large = oneDnnLog([&] { static_cast<void>(runtime({inputs[2]})); });
  EXPECT_NE(large.find("mb1_ic88oc24_ih15"), std::string::npos) << large;
}

// One image's blocked 1x1 convolutions of 7x7 pixels, large enough to split, run in the pointwise
// loop over the runtime's own workers, each taking whole groups of three output blocks: 64 -> 400
// channels (25 blocks, 9 groups, a padded last one) with SiLU applied after each part, a
// squeeze-excited projection back to 64 with a residual. Against the JIT on 2 and 3 workers, each
// twice; oneDNN's log shows neither convolution at batch 1, both at batch 4 (split by images).
TEST(Conv2dOneDnn, PointwiseLoopSplitsOneImageOverTheWorkers) {
  torch::jit::Module module = convModule({{"stem", torch::randn({64, 3, 3, 3}) * 0.3},
                                          {"expand", torch::randn({400, 64, 1, 1}) * 0.1},
                                          {"expand_bias", torch::randn({400})},
                                          {"squeeze", torch::randn({16, 400, 1, 1}) * 0.1},
                                          {"excite", torch::randn({400, 16, 1, 1}) * 0.3},
                                          {"project", torch::randn({64, 400, 1, 1}) * 0.05},
                                          {"project_bias", torch::randn({64})}},
                                         R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    b = torch.silu(torch.conv2d(a, self.expand, self.expand_bias))
    p = torch.adaptive_avg_pool2d(b, [1, 1])
    s = torch.sigmoid(torch.conv2d(torch.relu(torch.conv2d(p, self.squeeze, None)), self.excite, None))
    return torch.conv2d(b * s, self.project, self.project_bias) + a
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({1, 3, 7, 7}), torch::randn({1, 3, 6, 5})};
  for (int threads : {2, 3}) {
    RuntimeOptions options;
    options.intra_op_threads = threads;
    options.workers = IntraOpWorkers::kOwn;
    expectRuntimeMatchesJit(module, inputs, {}, options, 1e-4);
  }
  if (!ops::pointwise::blockedPointwiseAvailable()) {
    return;
  }
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  options.split_batch = false; // the batch of 4 splits by images inside each node, not as slices
  StaticModule prepared(module);
  StaticRuntime runtime(prepared, options);
  const std::string one = oneDnnLog([&] { static_cast<void>(runtime({inputs[0]})); });
  EXPECT_EQ(one.find("ic64oc400"), std::string::npos) << one;
  EXPECT_EQ(one.find("ic400oc64"), std::string::npos) << one;
  const std::string batch = oneDnnLog([&] {
    static_cast<void>(runtime({torch::randn({4, 3, 7, 7})}));
  });
  EXPECT_NE(batch.find("ic64oc400"), std::string::npos) << batch;
}

// Depthwise convolutions of blocked chains whose output rows are 14 pixels or fewer run in our
// loop (ops/conv/depthwise_blocked.h), oneDNN's jit_dw above: 3x3 stride 1 with ReLU6, 5x5
// stride 2 with hardswish, 3x3 stride 2 without bias and SiLU after; 88 channels (a padded last
// block); rows of 14, 13 and 7 pixels, odd heights, a batch of two, and a 40x40 image whose wide
// rows stay oneDNN's. Each twice against the JIT, at 1 thread.
TEST(Conv2dOneDnn, DepthwiseConvolutionsOfSmallImagesMatchJit) {
  torch::jit::Module module = convModule({{"stem", torch::randn({24, 3, 3, 3}) * 0.3},
                                          {"expand", torch::randn({88, 24, 1, 1}) * 0.2},
                                          {"dw3", torch::randn({88, 1, 3, 3}) * 0.3},
                                          {"dw3_bias", torch::randn({88})},
                                          {"dw5", torch::randn({88, 1, 5, 5}) * 0.2},
                                          {"dw5_bias", torch::randn({88})},
                                          {"dw3s2", torch::randn({88, 1, 3, 3}) * 0.3},
                                          {"project", torch::randn({24, 88, 1, 1}) * 0.1}},
                                         R"JIT(
def forward(self, x):
    a = torch.clamp(torch.conv2d(x, self.stem, None, 1, 1), 0.0, 6.0)
    b = torch.clamp(torch.conv2d(a, self.expand), 0.0, 6.0)
    c = torch.clamp(torch.conv2d(b, self.dw3, self.dw3_bias, 1, 1, 1, 88), 0.0, 6.0)
    d = torch.hardswish(torch.conv2d(c, self.dw5, self.dw5_bias, 2, 2, 1, 88))
    e = torch.silu(torch.conv2d(d, self.dw3s2, None, 2, 1, 1, 88))
    return torch.conv2d(e, self.project)
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({1, 3, 14, 14}), torch::randn({2, 3, 9, 13}),
                                          torch::randn({1, 3, 7, 7}), torch::randn({1, 3, 40, 40})};
  RuntimeOptions one_thread; // where every convolution of these sizes takes the loop
  one_thread.intra_op_threads = 1;
  expectRuntimeMatchesJit(module, inputs, {}, one_thread, 1e-4);
  StaticModule prepared(module);
  StaticRuntime runtime(prepared, one_thread);
  EXPECT_EQ(kernelKinds(prepared).count("aten::conv2d"), 0u);
  if (!ops::depthwise::blockedDepthwiseRuns(3, 1, 14)) {
    return;
  }
  const std::string small = oneDnnLog([&] { static_cast<void>(runtime({inputs[0]})); });
  EXPECT_EQ(small.find("g88mb1"), std::string::npos) << small;
  const std::string large = oneDnnLog([&] { static_cast<void>(runtime({inputs[3]})); });
  EXPECT_NE(large.find("g88mb1_ic88oc88_ih40"), std::string::npos) << large;
  EXPECT_EQ(large.find("g88mb1_ic88oc88_ih20"), std::string::npos) << large;
}

// [N, C, H, W] -> [N, ceil(C / 16), H, W, 16], padding channels zero.
at::Tensor toBlocked(const at::Tensor& x) {
  const int64_t blocks = (x.size(1) + 15) / 16;
  const at::Tensor padded = at::constant_pad_nd(x, {0, 0, 0, 0, 0, blocks * 16 - x.size(1)}, 0.0);
  return padded.view({x.size(0), blocks, 16, x.size(2), x.size(3)})
      .permute({0, 1, 3, 4, 2})
      .contiguous();
}

// [N, ceil(C / 16), H, W, 16] -> [N, C, H, W].
at::Tensor fromBlocked(const at::Tensor& x, int64_t channels) {
  return x.permute({0, 1, 4, 2, 3})
      .reshape({x.size(0), x.size(1) * 16, x.size(2), x.size(3)})
      .narrow(1, 0, channels);
}

// One of the Winograd loops of 3x3 convolutions, padding 1 (ops/conv/strided_winograd.h at
// stride 2, ops/conv/winograd.h at stride 1), as its header declares it.
struct TileLoop {
  int64_t stride;
  int64_t (*weight_floats)(int64_t in_channels, int64_t out_channels);
  void (*transform_weight)(const float* weight, int64_t out_channels, int64_t in_channels,
                           float* out);
  int64_t (*scratch_floats)(const ops::winograd::WinogradConv& conv);
  // Units a range of the image is given in: rows of tiles (stride 2) or tiles (stride 1).
  int64_t (*units)(const ops::winograd::WinogradConv& conv);
  void (*run)(const ops::winograd::WinogradConv& conv, float* scratch, int64_t first, int64_t last);
};

// A Winograd loop itself, against ATen's convolution: blocked and channels-last images, channels
// that leave a block partial (20, 40, 24), sizes odd and even, smaller than a tile and not; bias,
// residual and activations (ReLU, hardswish); whole images and ranges of tile rows. The kernel
// runs a loop only where it measured faster than oneDNN's (stridedWinogradFaster,
// winogradLoopFaster), which depends on the CPU, so each is tested here on its own.
void expectTileLoopMatchesAten(const TileLoop& loop) {
  ops::pointwise::PointwiseActivation relu;
  relu.lo = 0.f;
  ops::pointwise::PointwiseActivation hardswish;
  hardswish.shift = 3.f;
  hardswish.lo = 0.f;
  hardswish.hi = 6.f;
  hardswish.scale = 1.f / 6.f;
  hardswish.times_input = true;
  struct Case {
    int64_t in_channels, out_channels, height, width;
    bool channels_last, bias, residual;
    const ops::pointwise::PointwiseActivation* activation;
  };
  const ops::pointwise::PointwiseActivation identity;
  const std::vector<Case> cases = {{16, 32, 64, 64, false, false, false, &relu},
                                   {16, 32, 33, 31, true, true, false, &relu},
                                   {40, 24, 17, 22, false, true, true, &identity},
                                   {20, 24, 9, 13, true, false, true, &hardswish},
                                   {32, 64, 2, 3, false, true, false, &hardswish},
                                   {24, 20, 16, 16, true, true, true, &relu},
                                   {64, 64, 56, 56, false, true, true, &relu}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.in_channels << " -> " << c.out_channels << " at " << c.height << "x"
                 << c.width << (c.channels_last ? " channels last" : " blocked") << ", stride "
                 << loop.stride);
    const at::Tensor x = torch::randn({1, c.in_channels, c.height, c.width});
    const at::Tensor weight = torch::randn({c.out_channels, c.in_channels, 3, 3}) * 0.1;
    const at::Tensor bias = c.bias ? torch::randn({c.out_channels}) : at::Tensor();
    at::Tensor expected = at::conv2d(x, weight, bias, loop.stride, 1);
    const at::Tensor residual = c.residual ? torch::randn_like(expected) : at::Tensor();
    if (c.residual) {
      expected = expected + residual;
    }
    const auto& a = *c.activation;
    const at::Tensor activated = at::clamp(expected + a.shift, a.lo, a.hi) * a.scale;
    expected = a.times_input ? activated * expected : activated;
    const at::Tensor transformed = at::empty({loop.weight_floats(c.in_channels, c.out_channels)});
    loop.transform_weight(weight.data_ptr<float>(), c.out_channels, c.in_channels,
                          transformed.data_ptr<float>());
    const auto layout = [&](const at::Tensor& t) {
      return c.channels_last ? t.contiguous(at::MemoryFormat::ChannelsLast) : toBlocked(t);
    };
    const at::Tensor src = layout(x);
    const at::Tensor residual_in = c.residual ? layout(residual) : at::Tensor();
    at::Tensor out = at::full_like(layout(expected), std::nanf(""));
    ops::winograd::WinogradConv conv;
    conv.channels_last = c.channels_last;
    conv.src = src.data_ptr<float>();
    conv.weight = transformed.data_ptr<float>();
    conv.bias = c.bias ? bias.data_ptr<float>() : nullptr;
    conv.residual = c.residual ? residual_in.data_ptr<float>() : nullptr;
    conv.out = out.data_ptr<float>();
    conv.in_channels = c.in_channels;
    conv.out_channels = c.out_channels;
    conv.height = c.height;
    conv.width = c.width;
    conv.activation = a;
    const at::Tensor scratch = at::empty({loop.scratch_floats(conv)});
    // In two ranges, as two workers would run them.
    const int64_t units = loop.units(conv);
    loop.run(conv, scratch.data_ptr<float>(), 0, units / 2);
    loop.run(conv, scratch.data_ptr<float>(), units / 2, units);
    const at::Tensor result = c.channels_last ? out : fromBlocked(out, c.out_channels);
    EXPECT_TRUE(at::allclose(result, expected, 1e-4, 1e-4))
        << (result - expected).abs().max().item<float>();
  }
}

TEST(StridedWinogradLoop, MatchesAtenConvolution) {
  if (!ops::strided_winograd::stridedWinogradAvailable()) {
    GTEST_SKIP() << "the loop is built for AVX-512 only";
  }
  namespace loop = ops::strided_winograd;
  expectTileLoopMatchesAten({2, loop::transformedWeightFloats, loop::transformWeight,
                             loop::scratchFloats, loop::tileRows, loop::runStridedWinograd});
}

TEST(WinogradLoop, MatchesAtenConvolution) {
  if (!ops::winograd::winogradAvailable()) {
    GTEST_SKIP() << "the loop is built for AVX-512 only";
  }
  namespace loop = ops::winograd;
  expectTileLoopMatchesAten({1, loop::transformedWeightFloats, loop::transformWeight,
                             loop::scratchFloats, loop::tiles, loop::runWinograd});
}

// Stride-1 3x3 convolutions of 16 input channels and more run in our Winograd loop
// (ops/conv/winograd.h) or oneDNN's kernel, whichever measured faster for the weight and shape
// (winogradLoopFaster): a ResNet basic block in small, blocked (16 -> 24 -> 24 channels, a
// partial block; the residual, ReLU; then SiLU, applied after the loop) and on channels-last
// images (the stem's 3 channels into 20 and 32, a hardswish). Odd and even sizes (partial tiles,
// images smaller than a tile) and batches of one and three, each twice against the JIT, on one
// thread and split by rows of tiles over the runtime's own workers; two runtimes of one module
// compute alike (the choice is shared).
TEST(Conv2dOneDnn, StrideOneConvolutionsRunInTheWinogradLoopWhereItIsFaster) {
  const torch::jit::Module blocked = convModule({{"expand", torch::randn({24, 16, 1, 1}) * 0.2},
                                                 {"conv1", torch::randn({24, 24, 3, 3}) * 0.1},
                                                 {"conv1_bias", torch::randn({24})},
                                                 {"conv2", torch::randn({24, 24, 3, 3}) * 0.1},
                                                 {"conv3", torch::randn({16, 24, 3, 3}) * 0.1},
                                                 {"project", torch::randn({8, 16, 1, 1}) * 0.2}},
                                                R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.expand))
    b = torch.relu(torch.conv2d(a, self.conv1, self.conv1_bias, 1, 1))
    c = torch.relu(torch.conv2d(b, self.conv2, None, 1, 1) + a)
    d = torch.silu(torch.conv2d(c, self.conv3, None, 1, 1))
    return torch.conv2d(d, self.project)
)JIT");
  const torch::jit::Module channels_last =
      convModule({{"stem", torch::randn({20, 3, 3, 3}) * 0.3},
                  {"conv1", torch::randn({32, 20, 3, 3}) * 0.1},
                  {"conv1_bias", torch::randn({32})},
                  {"conv2", torch::randn({32, 32, 3, 3}) * 0.1}},
                 R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 2, 1))
    b = torch.hardswish(torch.conv2d(a, self.conv1, self.conv1_bias, 1, 1))
    c = torch.relu(torch.conv2d(b, self.conv2, None, 1, 1) + b)
    return torch.adaptive_avg_pool2d(c, [1, 1])
)JIT");
  for (const auto& [module, channels] : {std::pair{&blocked, 16}, std::pair{&channels_last, 3}}) {
    const std::vector<at::Tensor> inputs = {
        torch::randn({1, channels, 33, 31}), torch::randn({3, channels, 16, 16}),
        torch::randn({1, channels, 9, 13}), torch::randn({2, channels, 2, 3}),
        torch::randn({1, channels, 56, 56})};
    expectMatchesJitOnOneThreadAndOwnWorkers(*module, inputs);
    expectRuntimesAgree(StaticModule(*module), inputs, oneThread());
  }
}

// Stride-2 3x3 convolutions of 16 input channels and more run in our polyphase Winograd loop
// (ops/conv/strided_winograd.h) or oneDNN's kernel, whichever measured faster for the weight and
// shape (stridedWinogradFaster): in a blocked chain (a ResNet downsampling block in small: the
// residual of a strided 1x1, ReLU; then hardswish, and SiLU applied after the loop; 40 -> 24 ->
// 20 -> 16 channels, padded blocks) and on channels-last images (the small CNN's chain: 16 -> 32
// -> 20 -> 24, the last block of 20 partial both as output and as input, the 20 adding another
// strided 3x3 as residual). Odd and even sizes (partial tiles, images smaller than a tile) and a
// batch of three, each twice against the JIT, on one thread and split by rows of tiles over the
// runtime's own workers; two runtimes of one module compute alike (the choice is shared).
TEST(Conv2dOneDnn, StridedConvolutionsRunInThePolyphaseWinogradLoopWhereItIsFaster) {
  const torch::jit::Module blocked = convModule({{"expand", torch::randn({40, 16, 1, 1}) * 0.2},
                                                 {"down", torch::randn({24, 40, 3, 3}) * 0.1},
                                                 {"down_bias", torch::randn({24})},
                                                 {"skip", torch::randn({24, 40, 1, 1}) * 0.2},
                                                 {"down2", torch::randn({20, 24, 3, 3}) * 0.1},
                                                 {"down3", torch::randn({16, 20, 3, 3}) * 0.1},
                                                 {"down3_bias", torch::randn({16})},
                                                 {"project", torch::randn({8, 16, 1, 1}) * 0.2}},
                                                R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.expand))
    y = torch.relu(torch.conv2d(a, self.down, self.down_bias, 2, 1) + torch.conv2d(a, self.skip, None, 2))
    z = torch.hardswish(torch.conv2d(y, self.down2, None, 2, 1))
    w = torch.silu(torch.conv2d(z, self.down3, self.down3_bias, 2, 1))
    return torch.conv2d(w, self.project)
)JIT");
  const torch::jit::Module channels_last =
      convModule({{"stem", torch::randn({16, 3, 3, 3}) * 0.3},
                  {"down", torch::randn({32, 16, 3, 3}) * 0.1},
                  {"down2", torch::randn({20, 32, 3, 3}) * 0.1},
                  {"down2_bias", torch::randn({20})},
                  {"skip2", torch::randn({20, 32, 3, 3}) * 0.1},
                  {"down3", torch::randn({24, 20, 3, 3}) * 0.1}},
                 R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    b = torch.relu(torch.conv2d(a, self.down, None, 2, 1))
    c = torch.relu(torch.conv2d(b, self.down2, self.down2_bias, 2, 1) + torch.conv2d(b, self.skip2, None, 2, 1))
    return torch.adaptive_avg_pool2d(torch.relu(torch.conv2d(c, self.down3, None, 2, 1)), [1, 1])
)JIT");
  for (const auto& [module, channels] : {std::pair{&blocked, 16}, std::pair{&channels_last, 3}}) {
    const std::vector<at::Tensor> inputs = {
        torch::randn({1, channels, 33, 31}), torch::randn({3, channels, 16, 16}),
        torch::randn({1, channels, 9, 13}), torch::randn({2, channels, 2, 3})};
    expectMatchesJitOnOneThreadAndOwnWorkers(*module, inputs);
    expectRuntimesAgree(StaticModule(*module), inputs, oneThread());
  }
}

// The stem loop (ops/conv/stem_conv.h) itself, against ATen's convolution: 1 to 4 input channels,
// strides 1 and 2, padding 0 to 2, output channels that leave a block partial (20, 40, 24),
// blocked and channels-last outputs, images smaller than the kernel's reach and wider than a run
// of pixels (stride 1: than a segment of Winograd tiles, ops/conv/cpu/stem_winograd_loops.cpp);
// bias and activations (ReLU, hardswish); whole images and two ranges of rows. The kernel runs it
// only where it measured faster than oneDNN's (stemConvFaster), which depends on the CPU, so it is
// tested here on its own.
TEST(StemConvLoop, MatchesAtenConvolution) {
  if (!ops::stem_conv::stemConvAvailable()) {
    GTEST_SKIP() << "the loop is built for AVX-512 only";
  }
  ops::pointwise::PointwiseActivation relu;
  relu.lo = 0.f;
  ops::pointwise::PointwiseActivation hardswish;
  hardswish.shift = 3.f;
  hardswish.lo = 0.f;
  hardswish.hi = 6.f;
  hardswish.scale = 1.f / 6.f;
  hardswish.times_input = true;
  const ops::pointwise::PointwiseActivation identity;
  struct Case {
    int64_t in_channels, out_channels, height, width, stride, padding;
    bool channels_last_out, bias;
    const ops::pointwise::PointwiseActivation* activation;
  };
  const std::vector<Case> cases = {
      {3, 16, 64, 64, 1, 1, false, true, &relu},
      {3, 32, 37, 45, 2, 1, false, true, &hardswish},
      {3, 20, 33, 31, 2, 1, true, false, &relu},
      {1, 24, 5, 3, 2, 0, false, true, &identity},
      {4, 40, 9, 13, 1, 2, true, true, &hardswish},
      {2, 16, 2, 1, 1, 1, true, true, &relu},
      {3, 8, 1, 40, 2, 2, false, false, &identity},
      // Stride 1 runs Winograd over segments of 64 tiles of 4 pixels: a row of 75 tiles, one of
      // 65 (a one-tile segment), one of a single tile.
      {3, 24, 7, 300, 1, 1, false, true, &hardswish},
      {1, 16, 6, 262, 1, 0, true, true, &relu},
      {3, 16, 4, 6, 1, 0, false, true, &identity}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.in_channels << " -> " << c.out_channels << " at " << c.height << "x"
                 << c.width << ", stride " << c.stride << ", padding " << c.padding
                 << (c.channels_last_out ? ", channels last" : ", blocked"));
    const at::Tensor x = torch::randn({1, c.in_channels, c.height, c.width});
    const at::Tensor weight = torch::randn({c.out_channels, c.in_channels, 3, 3}) * 0.3;
    const at::Tensor bias = c.bias ? torch::randn({c.out_channels}) : at::Tensor();
    at::Tensor expected = at::conv2d(x, weight, bias, c.stride, c.padding);
    const auto& a = *c.activation;
    const at::Tensor activated = at::clamp(expected + a.shift, a.lo, a.hi) * a.scale;
    expected = a.times_input ? activated * expected : activated;
    const at::Tensor packed =
        at::empty({ops::stem_conv::packedWeightFloats(c.in_channels, c.out_channels)});
    ops::stem_conv::packWeight(weight.data_ptr<float>(), c.out_channels, c.in_channels,
                               packed.data_ptr<float>());
    at::Tensor out =
        at::full_like(c.channels_last_out ? expected.contiguous(at::MemoryFormat::ChannelsLast)
                                          : toBlocked(expected),
                      std::nanf(""));
    ops::stem_conv::StemConv conv;
    conv.src = x.data_ptr<float>();
    conv.weight = packed.data_ptr<float>();
    conv.bias = c.bias ? bias.data_ptr<float>() : nullptr;
    conv.out = out.data_ptr<float>();
    conv.channels_last_out = c.channels_last_out;
    conv.in_channels = c.in_channels;
    conv.out_channels = c.out_channels;
    conv.height = c.height;
    conv.width = c.width;
    conv.stride = c.stride;
    conv.padding = c.padding;
    conv.activation = a;
    ASSERT_TRUE(ops::stem_conv::stemConvRuns(c.in_channels, c.stride, c.padding));
    // The rows in two ranges, as two workers would run them.
    const int64_t rows = ops::stem_conv::outputSize(conv, c.height);
    ASSERT_EQ(rows, expected.size(2));
    ops::stem_conv::runStemConv(conv, 0, rows / 2);
    ops::stem_conv::runStemConv(conv, rows / 2, rows);
    const at::Tensor result = c.channels_last_out ? out : fromBlocked(out, c.out_channels);
    EXPECT_TRUE(at::allclose(result, expected, 1e-4, 1e-4))
        << (result - expected).abs().max().item<float>();
  }
}

// 3x3 convolutions of RGB (and grayscale) images run in our stem loop (ops/conv/stem_conv.h) or
// oneDNN's kernel, whichever measured faster for the weight and shape (stemConvFaster): a
// mobilenet_v2-like stem (stride 2, ReLU6, into a blocked chain of a depthwise and a pointwise
// convolution), an efficientnet_b0-like one (SiLU applied after the loop) and a grayscale stem of
// stride 1 without bias into a channels-last classifier. Odd and even sizes and a batch of three,
// each twice against the JIT, on one thread and split by rows over the runtime's own workers; two
// runtimes of one module compute alike (the choice is shared).
TEST(Conv2dOneDnn, StemConvolutionsRunInOurLoopWhereItIsFaster) {
  const torch::jit::Module strided = convModule({{"stem", torch::randn({32, 3, 3, 3}) * 0.3},
                                                 {"stem_bias", torch::randn({32})},
                                                 {"depthwise", torch::randn({32, 1, 3, 3}) * 0.3},
                                                 {"project", torch::randn({24, 32, 1, 1}) * 0.2},
                                                 {"stem2", torch::randn({24, 3, 3, 3}) * 0.3}},
                                                R"JIT(
def forward(self, x):
    a = torch.clamp(torch.conv2d(x, self.stem, self.stem_bias, 2, 1), 0.0, 6.0)
    b = torch.relu(torch.conv2d(a, self.depthwise, None, 1, 1, 1, 32))
    c = torch.silu(torch.conv2d(x, self.stem2, None, 2, 1))
    return torch.conv2d(b, self.project) + c
)JIT");
  const torch::jit::Module grayscale = convModule(
      {{"stem", torch::randn({20, 1, 3, 3}) * 0.3}, {"down", torch::randn({32, 20, 3, 3}) * 0.1}},
      R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    return torch.adaptive_avg_pool2d(torch.relu(torch.conv2d(a, self.down, None, 2, 1)), [1, 1])
)JIT");
  for (const auto& [module, channels] : {std::pair{&strided, 3}, std::pair{&grayscale, 1}}) {
    const std::vector<at::Tensor> inputs = {
        torch::randn({1, channels, 33, 31}), torch::randn({3, channels, 16, 16}),
        torch::randn({1, channels, 64, 64}), torch::randn({2, channels, 2, 3})};
    expectMatchesJitOnOneThreadAndOwnWorkers(*module, inputs);
    expectRuntimesAgree(StaticModule(*module), inputs, oneThread());
  }
}

// r3d_18's convolutions and their arguments in 3-D: the stem's (3, 7, 7) kernel with stride
// (1, 2, 2), 3x3x3 blocks, the strided 1x1x1 downsample; odd sizes, grouped, dilated, no bias.
// wav2vec2's feature extractor in small: strided 1-D convolutions of its 512 channels over a
// signal, GELU fused, and a residual. For each shape the kernel times oneDNN's
// activation layout against the channel-blocked one (chooseLayout in ops/conv/onednn_conv.cpp;
// which wins depends on the CPU). Either must match the JIT, and every runtime of one module
// computes alike: the choice is made once per weight and shape, and shared.
TEST(Conv1dOneDnn, LayoutChoiceMatchesJitAndIsSharedByRuntimes) {
  const torch::jit::Module module = convModule({{"w1", torch::randn({512, 32, 3}) * 0.1},
                                                {"w2", torch::randn({512, 512, 3}) * 0.03},
                                                {"w3", torch::randn({512, 512, 3}) * 0.03},
                                                {"b3", torch::randn({512})}},
                                               R"JIT(
def forward(self, x):
    y = torch.gelu(torch.conv1d(x, self.w1, None, 2))
    z = torch.gelu(torch.conv1d(y, self.w2, None, 2))
    return torch.conv1d(z, self.w3, self.b3, 1, 1) + z
)JIT");
  const std::vector<at::Tensor> inputs = {torch::randn({1, 32, 801}), torch::randn({2, 32, 203})};
  expectMatchesJit(module, {{{inputs[0]}, {}}, {{inputs[1]}, {}}}, {}, 1e-4);
  StaticModule shared(module);
  expectRuntimesAgree(shared, inputs);
  const auto kinds = kernelKinds(shared);
  EXPECT_EQ(kinds.count("aten::gelu"), 0u);
  EXPECT_EQ(kinds.count("aten::conv1d"), 0u);
}

TEST(Conv3dOneDnn, EveryArgumentMatchesJit) {
  const torch::jit::Module module =
      convModule({{"stem", torch::randn({16, 3, 3, 7, 7}) * 0.1},
                  {"dense", torch::randn({24, 16, 3, 3, 3}) * 0.1},
                  {"grouped", torch::randn({24, 4, 3, 3, 3}) * 0.1},
                  {"pointwise", torch::randn({24, 16, 1, 1, 1}) * 0.2},
                  {"bias", torch::randn({24})},
                  {"stem_bias", torch::randn({16})}},
                 R"JIT(
def forward(self, x):
    stem = torch.conv3d(x, self.stem, self.stem_bias, [1, 2, 2], [1, 3, 3])
    padded = torch.conv3d(stem, self.dense, self.bias, 1, 1)
    strided = torch.conv3d(stem, self.dense, None, [2, 1, 2], [1, 2, 0], [1, 1, 1], 1)
    dilated = torch.conv3d(stem, self.dense, self.bias, 1, 2, [1, 2, 2], 1)
    grouped = torch.conv3d(stem, self.grouped, self.bias, 1, 1, 1, 4)
    downsample = torch.conv3d(stem, self.pointwise, None, 2)
    return stem, padded, strided, dilated, grouped, downsample
)JIT");
  expectMatchesJit(
      module,
      {{{torch::randn({1, 3, 5, 15, 13})}, {}},
       {{torch::randn({2, 3, 4, 12, 12})}, {}},
       {{torch::randn({1, 3, 6, 11, 9}).contiguous(at::MemoryFormat::ChannelsLast3d)}, {}},
       // Neither layout: ATen's result, copied into the planned output.
       {{torch::randn({1, 3, 4, 10, 9}).transpose(3, 4)}, {}}},
      {}, 1e-4);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.count("aten::conv3d"), 0u);
  EXPECT_EQ(kinds.at("srt::packed_conv3d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

// r3d_18's basic block: conv3d + relu, conv3d + residual add + relu, fused into
// the convolutions (passes/conv_fusion.cpp) and run as oneDNN post-ops.
TEST(Conv3dOneDnn, BasicBlockWithFusedEpilogues) {
  const torch::jit::Module module = convModule({{"w1", torch::randn({8, 8, 3, 3, 3}) * 0.1},
                                                {"w2", torch::randn({8, 8, 3, 3, 3}) * 0.1},
                                                {"b1", torch::randn({8})},
                                                {"b2", torch::randn({8})}},
                                               R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv3d(x, self.w1, self.b1, 1, 1))
    return torch.relu(torch.conv3d(y, self.w2, self.b2, 1, 1) + x)
)JIT");
  expectMatchesJit(
      module,
      {{{torch::randn({1, 8, 4, 7, 7})}, {}},
       {{torch::randn({2, 8, 3, 6, 5})}, {}},
       {{torch::randn({1, 8, 4, 6, 6}).contiguous(at::MemoryFormat::ChannelsLast3d)}, {}}},
      {}, 1e-4);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.count("aten::relu"), 0u);
  EXPECT_EQ(kinds.count("aten::add"), 0u);
  EXPECT_EQ(kinds.at("srt::packed_conv3d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

TEST(Conv3dOneDnn, BadInputsAreAtenErrorsAndTheRuntimeRecovers) {
  const torch::jit::Module module = convModule({{"weight", torch::randn({8, 4, 3, 3, 3})}}, R"JIT(
def forward(self, x):
    return torch.conv3d(x, self.weight, None)
)JIT");
  StaticModule prepared(module);
  StaticRuntime runtime(prepared);
  EXPECT_THROW(runtime({torch::randn({1, 3, 5, 5, 5})}), c10::Error); // wrong channel count
  EXPECT_THROW(runtime({torch::randn({1, 4, 2, 5, 5})}), c10::Error); // smaller than the kernel
  EXPECT_THROW(runtime({torch::randn({1, 4, 5, 5})}), c10::Error);    // 4-D: [C, D, H, W]
  const at::Tensor x = torch::randn({1, 4, 5, 6, 7});
  EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(),
                              at::conv3d(x, module.attr("weight").toTensor()), 1e-4, 1e-4));
}

// Transposed convolutions (decoders, upsampling, conv_tasnet's 1-D decoder) on oneDNN's
// deconvolution: PyTorch's [C, OC / groups, k...] weight, output_padding, groups, dilation.
TEST(ConvTransposeOneDnn, EveryArgumentMatchesJit) {
  const torch::jit::Module module = convModule({{"dense", torch::randn({16, 12, 3, 3}) * 0.1},
                                                {"grouped", torch::randn({16, 3, 3, 2}) * 0.1},
                                                {"upsample", torch::randn({16, 8, 4, 4}) * 0.1},
                                                {"bias", torch::randn({12})},
                                                {"small_bias", torch::randn({8})}},
                                               R"JIT(
def forward(self, x):
    plain = torch.conv_transpose2d(x, self.dense, self.bias)
    padded = torch.conv_transpose2d(x, self.dense, None, 1, 1)
    strided = torch.conv_transpose2d(x, self.dense, self.bias, [2, 3], [1, 0], [1, 2], 1, 1)
    dilated = torch.conv_transpose2d(x, self.dense, self.bias, 2, 2, 1, 1, [2, 1])
    grouped = torch.conv_transpose2d(x, self.grouped, self.bias, 2, [0, 1], 0, 4, 1)
    upsample = torch.conv_transpose2d(x, self.upsample, self.small_bias, 2, 1)
    return plain, padded, strided, dilated, grouped, upsample
)JIT");
  expectMatchesJit(module,
                   {{{torch::randn({1, 16, 7, 9})}, {}},
                    {{torch::randn({2, 16, 5, 4})}, {}},
                    {{torch::randn({1, 16, 6, 6}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
                    // Neither layout: ATen's result, copied into the planned output.
                    {{torch::randn({1, 6, 5, 16}).permute({0, 3, 1, 2})}, {}}},
                   {}, 1e-4);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.at("aten::conv_transpose2d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

TEST(ConvTransposeOneDnn, ThreeDimensional) {
  const torch::jit::Module module =
      convModule({{"weight", torch::randn({8, 3, 3, 2, 3}) * 0.1}, {"bias", torch::randn({6})}},
                 R"JIT(
def forward(self, x):
    return (torch.conv_transpose3d(x, self.weight, self.bias, [1, 2, 2], 1, [0, 1, 1], 2),
            torch.conv_transpose3d(x, self.weight, None, 1, 0, 0, 2, [2, 1, 1]))
)JIT");
  expectMatchesJit(
      module,
      {{{torch::randn({1, 8, 3, 5, 4})}, {}},
       {{torch::randn({2, 8, 4, 3, 3})}, {}},
       {{torch::randn({1, 8, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast3d)}, {}}},
      {}, 1e-4);
  const auto kinds = kernelKinds(StaticModule(module));
  EXPECT_EQ(kinds.at("aten::conv_transpose3d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

// A traced transposed convolution, aten::_convolution(transposed=True), which freezing turns into
// conv_transpose2d.
TEST(ConvTransposeOneDnn, TracedConvolution) {
  const torch::jit::Module module =
      convModule({{"weight", torch::randn({8, 6, 3, 3}) * 0.1}, {"bias", torch::randn({6})}},
                 R"JIT(
def forward(self, x):
    return torch._convolution(x, self.weight, self.bias, [2, 2], [1, 1], [1, 1], True, [1, 1], 1,
                              False, False, True, True)
)JIT");
  expectMatchesJit(module, {{{torch::randn({1, 8, 5, 7})}, {}}, {{torch::randn({2, 8, 4, 4})}, {}}},
                   {}, 1e-4);
  const StaticModule prepared(module);
  const auto kinds = kernelKinds(prepared);
  EXPECT_EQ(kinds.count("aten::_convolution"), 0u) << prepared.graph();
  EXPECT_EQ(kinds.at("aten::conv_transpose2d"), std::set<KernelKind>{KernelKind::kOutVariant});
}

// Ungrouped, undilated transposed convolutions run as one matmul (oneDNN's log: a matmul, no
// deconvolution) whose blocks are copied into place where the kernel equals the stride (2x2 with a
// bias, 3x3 without, 2x3) and added up where they overlap (DCGAN's 4x4 stride 2 padding 1, one
// with output padding, a 3x3 stride 1 "same", a 5x3 stride 2x1): channels-last inputs, NCHW ones
// (transposed before and after), a [N, C, 1, 1] latent, batches of 1 and 3, twice each, on one
// thread, two OpenMP threads and two own workers; a wrong channel count is ATen's error and the
// runtime goes on.
TEST(ConvTransposeOneDnn, UngroupedOnesRunAsOneMatmul) {
  const torch::jit::Module module = convModule({{"up2", torch::randn({16, 8, 2, 2}) * 0.1},
                                                {"up3", torch::randn({16, 4, 3, 3}) * 0.1},
                                                {"up23", torch::randn({16, 5, 2, 3}) * 0.1},
                                                {"gan", torch::randn({16, 6, 4, 4}) * 0.1},
                                                {"tall", torch::randn({16, 3, 5, 3}) * 0.1},
                                                {"bias", torch::randn({8})},
                                                {"gan_bias", torch::randn({6})}},
                                               R"JIT(
def forward(self, x):
    return (torch.conv_transpose2d(x, self.up2, self.bias, 2),
            torch.conv_transpose2d(x, self.up3, None, 3),
            torch.conv_transpose2d(x, self.up23, None, [2, 3]),
            torch.conv_transpose2d(x, self.gan, self.gan_bias, 2, 1),
            torch.conv_transpose2d(x, self.gan, None, 2, 1, 1),
            torch.conv_transpose2d(x, self.up3, None, 1, 1),
            torch.conv_transpose2d(x, self.tall, None, [2, 1], [2, 0], [1, 0]))
)JIT");
  const auto channels_last = [](at::IntArrayRef shape) {
    return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
  };
  const std::vector<at::Tensor> inputs{channels_last({1, 16, 7, 9}), channels_last({3, 16, 5, 4}),
                                       torch::randn({2, 16, 4, 6}), torch::randn({2, 16, 1, 1})};
  for (const IntraOpWorkers workers : {IntraOpWorkers::kOpenMp, IntraOpWorkers::kOwn}) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      RuntimeOptions options;
      options.intra_op_threads = threads;
      options.workers = workers;
      expectRuntimeMatchesJit(module, inputs, {}, options, 1e-4);
    }
  }
  StaticModule prepared(module);
  EXPECT_EQ(kernelKinds(prepared).at("aten::conv_transpose2d"),
            std::set<KernelKind>{KernelKind::kOutVariant});
  StaticRuntime runtime(prepared);
  for (const at::Tensor& x : {inputs[0], inputs[2]}) {
    static_cast<void>(runtime({x})); // builds the primitives
    const std::string log = oneDnnLog([&] { static_cast<void>(runtime({x})); });
    EXPECT_NE(log.find("matmul"), std::string::npos) << log;
    EXPECT_EQ(log.find("deconvolution"), std::string::npos) << log;
  }
  EXPECT_THROW(runtime({channels_last({1, 8, 5, 5})}), c10::Error); // wrong channel count
  const auto outputs = runtime({inputs[1]}).toTuple()->elements();
  EXPECT_TRUE(torch::allclose(outputs[3].toTensor(),
                              at::conv_transpose2d(inputs[1], module.attr("gan").toTensor(),
                                                   module.attr("gan_bias").toTensor(), 2, 1),
                              1e-4, 1e-4));
}

// Blocks of more than 4 MB of input rows run in bands (here 4 rows of 64 pixels, each 4096
// floats of blocks): bands that end inside an image and one that spans two, a shorter last one,
// overlapping blocks added across band edges; disjoint ones copied the same way.
TEST(ConvTransposeOneDnn, LargeImagesRunInBandsOfRows) {
  const torch::jit::Module module = convModule({{"gan", torch::randn({16, 256, 4, 4}) * 0.1},
                                                {"up", torch::randn({16, 256, 4, 4}) * 0.1},
                                                {"bias", torch::randn({256})}},
                                               R"JIT(
def forward(self, x):
    return (torch.conv_transpose2d(x, self.gan, self.bias, 2, 1),
            torch.conv_transpose2d(x, self.up, self.bias, 4))
)JIT");
  expectMatchesJit(
      module,
      {{{torch::randn({2, 16, 10, 64}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
       {{torch::randn({1, 16, 9, 64}).contiguous(at::MemoryFormat::ChannelsLast)}, {}}},
      {}, 1e-4);
}

TEST(ConvTransposeOneDnn, BadInputsAreAtenErrorsAndTheRuntimeRecovers) {
  const torch::jit::Module module = convModule({{"weight", torch::randn({8, 4, 3, 3})}}, R"JIT(
def forward(self, x):
    return torch.conv_transpose2d(x, self.weight, None, 1, 3)
)JIT");
  StaticModule prepared(module);
  StaticRuntime runtime(prepared);
  EXPECT_THROW(runtime({torch::randn({1, 4, 5, 5})}), c10::Error); // wrong channel count
  EXPECT_THROW(runtime({torch::randn({1, 8, 2, 2})}), c10::Error); // empty output
  const at::Tensor x = torch::randn({1, 8, 6, 7});
  EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(),
                              at::conv_transpose2d(x, module.attr("weight").toTensor(), {}, 1, 3),
                              1e-4, 1e-4));
}

// An inverted residual block's expansion and depthwise convolutions (srt::blocked_conv2d_dw): a
// 24 -> C 1x1 whose one reader is a depthwise 3x3 or 5x5, stride 1 or 2, with the activations
// mobile networks use on each; then a projection (with a residual at stride 1). Against the JIT at
// 1 and 2 threads (OpenMP's, and the runtime's own workers), each input twice: small images run the
// two convolutions on their own kernels, the intermediate in the node's scratch; a batch whose
// expanded image is large (4 x 80 channels x 112 x 112: 16 MB) runs oneDNN's fused primitive, the
// one convolution its log shows (the 1x1 with a depthwise post-op). For 72 channels (a padded last
// block) oneDNN has only its reference fusion, which runs them apart anyway: the parts run.
TEST(Conv2dOneDnn, ExpansionAndDepthwiseFuseWhereTheExpandedImageIsLarge) {
  struct Case {
    const char* expand_activation;
    const char* depthwise_activation;
    int kernel;
    int stride;
    int channels;
  };
  for (const Case& c : {Case{"torch.clamp(b, 0.0, 6.0)", "torch.clamp(d, 0.0, 6.0)", 3, 2, 80},
                        Case{"torch.silu(b)", "torch.silu(d)", 5, 1, 80},
                        Case{"torch.hardswish(b)", "torch.relu(d)", 3, 1, 72}}) {
    const std::string channels = std::to_string(c.channels);
    SCOPED_TRACE(std::string(c.expand_activation) + ", k" + std::to_string(c.kernel) + " s" +
                 std::to_string(c.stride) + ", " + channels + " channels");
    const std::string residual = c.stride == 1 ? " + a" : "";
    torch::jit::Module module =
        convModule({{"stem", torch::randn({24, 3, 3, 3}) * 0.3},
                    {"expand", torch::randn({c.channels, 24, 1, 1}) * 0.2},
                    {"expand_bias", torch::randn({c.channels})},
                    {"depthwise", torch::randn({c.channels, 1, c.kernel, c.kernel}) * 0.3},
                    {"project", torch::randn({24, c.channels, 1, 1}) * 0.2}},
                   "def forward(self, x):\n"
                   "    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))\n"
                   "    b = torch.conv2d(a, self.expand, self.expand_bias)\n"
                   "    b = " +
                       std::string(c.expand_activation) + "\n" +
                       "    d = torch.conv2d(b, self.depthwise, None, " + std::to_string(c.stride) +
                       ", " + std::to_string(c.kernel / 2) + ", 1, " + channels + ")\n" +
                       "    d = " + c.depthwise_activation + "\n" +
                       "    return torch.conv2d(d, self.project, None)" + residual + "\n");
    const std::vector<at::Tensor> inputs = {
        torch::randn({1, 3, 20, 18}), torch::randn({4, 3, 112, 112}), torch::randn({2, 3, 9, 9})};
    // The runtime's own workers each fuse a slab of the batch's images.
    for (const auto& [threads, workers] :
         {std::pair{1, IntraOpWorkers::kOpenMp}, std::pair{2, IntraOpWorkers::kOpenMp},
          std::pair{2, IntraOpWorkers::kOwn}}) {
      RuntimeOptions options;
      options.intra_op_threads = threads;
      options.workers = workers;
      expectRuntimeMatchesJit(module, inputs, {}, options, 1e-4);
    }
    StaticModule prepared(module);
    EXPECT_EQ(kernelKinds(prepared).at("srt::blocked_conv2d_dw"),
              std::set<KernelKind>{KernelKind::kOutVariant});
    RuntimeOptions one_thread;
    one_thread.intra_op_threads = 1;
    StaticRuntime runtime(prepared, one_thread);
    const std::string large = steadyStateLog(runtime, {inputs[1]});
    const std::string fused = "dw:k" + std::to_string(c.kernel) + "s" + std::to_string(c.stride);
    const std::string depthwise_alone = "g" + channels + "mb4";
    if (c.channels % 16 == 0) {
      EXPECT_NE(large.find(fused), std::string::npos) << large;
      EXPECT_EQ(large.find(depthwise_alone), std::string::npos) << large;
    } else {
      EXPECT_EQ(large.find("dw:k"), std::string::npos) << large;
      EXPECT_NE(large.find(depthwise_alone), std::string::npos) << large;
    }
    const std::string small = steadyStateLog(runtime, {inputs[0]});
    EXPECT_EQ(small.find("dw:k"), std::string::npos) << small;
  }
}

// A network's first layers fused (the model's NCHW input into the expansion): a bad input is
// the 1x1's ATen error, naming the fused node, and the runtime keeps working, on both paths.
TEST(Conv2dOneDnn, AFusedExpansionReportsBadInputsAndKeepsWorking) {
  torch::jit::Module module = convModule({{"expand", torch::randn({96, 16, 1, 1}) * 0.2},
                                          {"depthwise", torch::randn({96, 1, 3, 3}) * 0.3},
                                          {"project", torch::randn({16, 96, 1, 1}) * 0.2}},
                                         R"JIT(
def forward(self, x):
    b = torch.relu(torch.conv2d(x, self.expand, None))
    d = torch.relu(torch.conv2d(b, self.depthwise, None, 1, 1, 1, 96))
    return torch.conv2d(d, self.project, None) + x
)JIT");
  StaticModule prepared(module);
  EXPECT_EQ(kernelKinds(prepared).count("srt::blocked_conv2d_dw"), 1u);
  StaticRuntime runtime(prepared);
  for (const at::Tensor& x : {torch::randn({1, 16, 9, 9}), torch::randn({2, 16, 120, 120})}) {
    try {
      static_cast<void>(runtime({torch::randn({1, 15, 9, 9})}));
      ADD_FAILURE() << "a 15-channel input ran";
    } catch (const c10::Error& error) {
      EXPECT_NE(std::string(error.what()).find("srt::blocked_conv2d_dw"), std::string::npos)
          << error.what();
      EXPECT_NE(std::string(error.what()).find("16 channels"), std::string::npos) << error.what();
    }
    at::Tensor expected;
    {
      torch::NoGradGuard no_grad;
      expected = module.forward({x}).toTensor();
    }
    EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), expected, 1e-4, 1e-4));
  }
}

// An expansion read by more than its depthwise convolution (kept for a residual) stays a
// convolution of its own: the fused node has no output for it.
TEST(Conv2dOneDnn, AnExpansionWithAnotherReaderIsNotFused) {
  torch::jit::Module module = convModule({{"stem", torch::randn({16, 3, 3, 3}) * 0.3},
                                          {"expand", torch::randn({32, 16, 1, 1}) * 0.2},
                                          {"depthwise", torch::randn({32, 1, 3, 3}) * 0.3}},
                                         R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 1, 1))
    b = torch.relu(torch.conv2d(a, self.expand, None))
    return torch.relu(torch.conv2d(b, self.depthwise, None, 1, 1, 1, 32)) + b
)JIT");
  expectMatchesJit(module, {{{torch::randn({1, 3, 12, 12})}, {}}}, {}, 1e-4);
  EXPECT_EQ(kernelKinds(StaticModule(module)).count("srt::blocked_conv2d_dw"), 0u);
}

} // namespace
} // namespace srt::testing
