// passes/blocked_layout.cpp: a mobile block's convolutions keep their activations channel-blocked
// (srt::blocked_conv2d) across depthwise and 1x1 convolutions, a channel count that pads its
// last block (24), a residual, a squeeze-excitation (global pool, scale) and size queries; the
// stem reads the NCHW input itself; readers that want the plain tensor (a graph output, flatten)
// get srt::from_blocked. The results match the JIT through our kernels (layouts, batches, shapes,
// twice each, with the runtime's own workers too) and through the ops' JIT references; short
// chains and 3x3 convolutions of many channels stay channels last.
#include <limits>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/conv_weights.h"
#include "harness/differential.h"
#include "harness/onednn_log.h"
#include "harness/pass_testing.h"
#include "ops/conv/blocked_layout.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

// The graph as passes/blocked_layout.cpp leaves it: tests that count its convolutions and
// conversions build without the later fusion of 1x1 + depthwise pairs into one node
// (passes/pointwise_depthwise_fusion.cpp, tested with its kernel in onednn_conv_test.cpp).
StaticModuleOptions unfusedPairs() {
  StaticModuleOptions options;
  options.disabled_passes = {"pointwise_depthwise_fusion"};
  return options;
}

torch::jit::Module mobileBlockModule() {
  torch::jit::Module module("MobileBlock");
  module.register_parameter("stem", convWeight(16, 3, 3), false);
  module.register_parameter("stem_bias", torch::randn({16}) * 0.1, false);
  module.register_parameter("dw16", convWeight(16, 1, 3), false);
  module.register_parameter("narrow", convWeight(24, 16, 1), false);
  module.register_parameter("expand", convWeight(96, 24, 1), false);
  module.register_parameter("dw96", convWeight(96, 1, 3), false);
  module.register_parameter("squeeze", convWeight(8, 96, 1), false);
  module.register_parameter("excite", convWeight(96, 8, 1), false);
  module.register_parameter("project", convWeight(24, 96, 1), false);
  module.register_parameter("head", torch::randn({5, 24}) * 0.2, false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.clamp(torch.conv2d(x, self.stem, self.stem_bias, 2, 1), 0.0, 6.0)
    b = torch.relu(torch.conv2d(a, self.dw16, None, 1, 1, 1, 16))
    c = torch.conv2d(b, self.narrow)
    d = torch.hardswish(torch.conv2d(c, self.expand))
    e = torch.silu(torch.conv2d(d, self.dw96, None, 2, 1, 1, 96))
    s = torch.adaptive_avg_pool2d(e, 1)
    s = torch.sigmoid(torch.conv2d(torch.relu(torch.conv2d(s, self.squeeze)), self.excite))
    f = e * s
    g = torch.conv2d(f, self.project) + torch.max_pool2d(c, 2, 2, 0, 1, True)
    n = g.size(0)
    pooled = torch.adaptive_avg_pool2d(g, [1, 1]).view(n, -1)
    return torch.linear(pooled, self.head), g, g.size()
)JIT");
  module.eval();
  return module;
}

size_t countOp(const torch::jit::Graph& graph, const char* kind) {
  return countKind(graph, kind);
}

// Every input run twice on two threads, the runtime's own workers and OpenMP's, each output of
// the tuple the module returns matching the JIT's (tensors within 1e-4, sizes exactly).
void expectTwoThreadsMatchJit(torch::jit::Module& module, const StaticModule& built,
                              const std::vector<InputSet>& inputs) {
  for (const IntraOpWorkers workers : {IntraOpWorkers::kOwn, IntraOpWorkers::kOpenMp}) {
    RuntimeOptions options;
    options.intra_op_threads = 2;
    options.workers = workers;
    StaticRuntime runtime(built, options);
    for (const InputSet& input : inputs) {
      const auto expected = module.forward(input.args).toTupleRef().elements();
      for (int run = 0; run < 2; ++run) {
        const auto got = runtime(input.args).toTupleRef().elements();
        ASSERT_EQ(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
          if (expected[i].isTensor()) {
            EXPECT_TRUE(torch::allclose(got[i].toTensor(), expected[i].toTensor(), 1e-4, 1e-4))
                << i;
          } else {
            EXPECT_EQ(got[i], expected[i]) << i;
          }
        }
      }
    }
  }
}

TEST(BlockedLayout, KeepsTheBlockChannelBlocked) {
  StaticModule module(mobileBlockModule(), unfusedPairs());
  const torch::jit::Graph& graph = module.graph();
  // The projection takes the squeeze-excitation's scale (passes/conv_channel_scale.cpp).
  EXPECT_EQ(countOp(graph, "srt::blocked_conv2d"), 7u) << graph;
  EXPECT_EQ(countOp(graph, "srt::scaled_blocked_conv2d"), 1u) << graph;
  EXPECT_EQ(countOp(graph, "srt::packed_conv2d"), 0u) << graph;
  EXPECT_EQ(countOp(graph, "srt::scaled_packed_conv2d"), 0u) << graph;
  EXPECT_EQ(countOp(graph, "srt::blocked_global_avg_pool"), 2u) << graph;
  EXPECT_EQ(countOp(graph, "srt::blocked_sizes"), 1u) << graph; // g.size(); g.size(0) reads g
  // The stem reads the input as it is: no conversion to channels last before it.
  EXPECT_EQ(graph.inputs()[0]->uses().at(0).user->kind().toQualString(),
            std::string("srt::blocked_conv2d"))
      << graph;
  // g for the output and its size, the pooled g for view, nothing else: c is max-pooled blocked
  // (srt::blocked_max_pool2d) for the residual.
  EXPECT_EQ(countOp(graph, "srt::from_blocked"), 2u) << graph;
  EXPECT_EQ(countOp(graph, "srt::blocked_max_pool2d"), 1u) << graph;
  EXPECT_EQ(countOp(graph, "srt::to_blocked"), 0u) << graph;
  EXPECT_TRUE(module.stats().fallback_ops.empty()) << graph;
}

// SqueezeNet's fire modules: a squeeze 1x1, two expanding branches (1x1 and 3x3) concatenated
// along channels, max pooling between modules (3x3, stride 2, ceil mode). The concatenation of
// whole blocks and the pooling stay blocked; a concatenation whose first part pads its last block
// (24 channels) is plain, its parts converted.
torch::jit::Module fireModules() {
  torch::jit::Module module("Fire");
  module.register_parameter("stem", convWeight(32, 3, 3), false);
  module.register_parameter("squeeze1", convWeight(16, 32, 1), false);
  module.register_parameter("e1", convWeight(32, 16, 1), false);
  module.register_parameter("e3", convWeight(32, 16, 3), false);
  module.register_parameter("squeeze2", convWeight(16, 64, 1), false);
  module.register_parameter("f1", convWeight(24, 16, 1), false);
  module.register_parameter("f3", convWeight(24, 16, 3), false);
  module.register_parameter("head", torch::randn({5, 48}) * 0.2, false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 2, 1))
    s = torch.relu(torch.conv2d(a, self.squeeze1))
    y = torch.cat([torch.relu(torch.conv2d(s, self.e1)), torch.relu(torch.conv2d(s, self.e3, None, 1, 1))], 1)
    y = torch.max_pool2d(y, 3, 2, 0, 1, True)
    t = torch.relu(torch.conv2d(y, self.squeeze2))
    z = torch.cat([torch.relu(torch.conv2d(t, self.f1)), torch.relu(torch.conv2d(t, self.f3, None, 1, 1))], 1)
    return torch.linear(torch.flatten(torch.adaptive_avg_pool2d(z, 1), 1), self.head), y
)JIT");
  module.eval();
  return module;
}

TEST(BlockedLayout, ConcatenationsOfWholeBlocksAndMaxPoolingStayBlocked) {
  torch::jit::Module module = fireModules();
  StaticModule built(module);
  const torch::jit::Graph& graph = built.graph();
  EXPECT_EQ(countOp(graph, "srt::blocked_conv2d"), 7u) << graph;
  EXPECT_EQ(countOp(graph, "srt::blocked_max_pool2d"), 1u) << graph;
  EXPECT_EQ(countOp(graph, "aten::max_pool2d"), 0u) << graph;
  // y for the output; f1's and f3's 24 channels for their plain concatenation.
  EXPECT_EQ(countOp(graph, "srt::from_blocked"), 3u) << graph;
  EXPECT_EQ(countOp(graph, "srt::variadic_cat"), 2u) << graph;
  EXPECT_TRUE(built.stats().fallback_ops.empty()) << graph;
  std::vector<InputSet> inputs = {{{torch::randn({1, 3, 33, 29})}, {}},
                                  {{torch::randn({2, 3, 24, 24})}, {}},
                                  {{torch::randn({1, 3, 64, 80})}, {}}};
  expectMatchesJit(module, inputs, {}, 1e-4);
  expectTwoThreadsMatchJit(module, built, inputs);
  // The JIT runs the new op's reference on the rewritten graph.
  auto rewritten = passes::prepareModule(module).graph;
  passes::fuseConvEpilogues(rewritten);
  passes::useVariadicCatStack(rewritten);
  passes::useChannelsLast(rewritten);
  passes::packConvWeights(rewritten);
  expectPassPreservesResults(passes::useBlockedLayout, rewritten,
                             {{torch::randn({1, 3, 16, 16})}, {torch::randn({2, 3, 21, 13})}},
                             /*expect_changed=*/true, 1e-4);
}

TEST(BlockedLayout, DisabledPassesSwitchItOff) {
  StaticModuleOptions options;
  options.disabled_passes = {"blocked_layout"};
  StaticModule module(mobileBlockModule(), options);
  EXPECT_EQ(countOp(module.graph(), "srt::blocked_conv2d"), 0u) << module.graph();
  EXPECT_EQ(countOp(module.graph(), "srt::scaled_blocked_conv2d"), 0u) << module.graph();
  EXPECT_EQ(countOp(module.graph(), "srt::packed_conv2d"), 7u) << module.graph();
  EXPECT_EQ(countOp(module.graph(), "srt::scaled_packed_conv2d"), 1u) << module.graph();
}

// The blocked layout has no unbatched form: an unbatched image reaching a blocked chain is an
// error that says what to do, and the runtime keeps working for batched calls after it.
TEST(BlockedLayout, AnUnbatchedImageIsAClearError) {
  torch::jit::Module jit = mobileBlockModule();
  StaticModule module(jit, unfusedPairs());
  ASSERT_GT(countOp(module.graph(), "srt::blocked_conv2d"), 0u) << module.graph();
  StaticRuntime runtime(module);
  try {
    (void)runtime({torch::randn({3, 32, 32})});
    ADD_FAILURE() << "an unbatched image ran through the blocked chain";
  } catch (const c10::Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("x.unsqueeze(0)"), std::string::npos) << message;
    EXPECT_NE(message.find("disabled_passes=[\"blocked_layout\"]"), std::string::npos) << message;
  }
  const at::Tensor x = torch::randn({2, 3, 32, 32});
  const auto expected = jit.forward({x}).toTupleRef().elements();
  for (int run = 0; run < 2; ++run) {
    const auto got = runtime({x}).toTupleRef().elements();
    EXPECT_TRUE(torch::allclose(got[0].toTensor(), expected[0].toTensor(), 1e-4, 1e-4));
  }
}

// Dense convolutions of few channels alone (the issue's small CNN: 3 -> 16 -> 32 -> 64, strides
// 1, 2, 2) are faster channels last: their chain stays so, and still matches the JIT, also on
// the runtime's own workers, where the stem's batch of NCHW images splits into whole images, and
// one image into slabs of rows (each piece copying its rows of the three channel planes).
TEST(BlockedLayout, ChainsOfDenseConvolutionsAloneStayChannelsLast) {
  torch::jit::Module module("SmallCnn");
  module.register_parameter("first", convWeight(16, 3, 3), false);
  module.register_parameter("second", convWeight(32, 16, 3), false);
  module.register_parameter("third", convWeight(64, 32, 3), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.first, None, 1, 1))
    b = torch.relu(torch.conv2d(a, self.second, None, 2, 1))
    c = torch.relu(torch.conv2d(b, self.third, None, 2, 1))
    return torch.adaptive_avg_pool2d(c, 1)
)JIT");
  module.eval();
  StaticModule built(module);
  EXPECT_EQ(countOp(built.graph(), "srt::blocked_conv2d"), 0u) << built.graph();
  EXPECT_EQ(countOp(built.graph(), "srt::packed_conv2d"), 3u) << built.graph();
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 64, 64})}, {}}, {{torch::randn({2, 3, 30, 34})}, {}}}, {},
                   1e-4);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  StaticRuntime runtime(built, options);
  for (const int64_t batch : {3, 8, 1}) {
    const at::Tensor x = torch::randn({batch, 3, 64, 48});
    const at::Tensor expected = module.forward({x}).toTensor();
    for (int run = 0; run < 2; ++run) {
      EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), expected, 1e-4, 1e-4))
          << "batch " << batch << ", run " << run;
    }
  }
}

// A bottleneck of few channels (RAFT's 8, padded to one block) inside a blocked chain: oneDNN's
// blocked kernels refuse such a convolution on a blocked input and answer with its reference
// kernel, hundreds of times slower (68 ms for an 8 -> 8 3x3 at 64x64). Every convolution must
// run on an optimized kernel (checked in oneDNN's verbose log) and match the JIT.
TEST(BlockedLayout, FewChannelBottlenecksAvoidTheReferenceKernel) {
  for (const int64_t narrow : {8, 12}) {
    torch::jit::Module module("Bottleneck");
    module.register_parameter("reduce", convWeight(narrow, 32, 1), false);
    module.register_parameter("middle", convWeight(narrow, narrow, 3), false);
    module.register_parameter("restore", convWeight(32, narrow, 1), false);
    module.register_parameter("dw", convWeight(32, 1, 3), false);
    module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.reduce))
    b = torch.relu(torch.conv2d(a, self.middle, None, 1, 1))
    c = torch.relu(torch.conv2d(b, self.restore) + x)
    return torch.conv2d(c, self.dw, None, 1, 1, 1, 32)
)JIT");
    module.eval();
    StaticModule built(module);
    EXPECT_EQ(countOp(built.graph(), "srt::blocked_conv2d"), 4u) << built.graph();
    StaticRuntime runtime(built);
    const at::Tensor x = torch::randn({1, 32, 24, 20});
    const at::Tensor expected = module.forward({x}).toTensor();
    static_cast<void>(runtime({x})); // builds the primitives
    at::Tensor got;
    const std::string log = oneDnnLog([&] { got = runtime({x}).toTensor(); });
    EXPECT_TRUE(torch::allclose(got, expected, 1e-4, 1e-4)) << narrow << " channels";
    EXPECT_NE(log.find("exec,cpu,convolution"), std::string::npos) << log;
    EXPECT_EQ(log.find("convolution,ref"), std::string::npos) << narrow << " channels:\n" << log;
  }
}

std::vector<InputSet> imageInputs() {
  return {{{torch::randn({1, 3, 32, 32})}, {}},
          {{torch::randn({2, 3, 20, 28}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
          {{torch::randn({1, 3, 17, 9})}, {}},
          {{torch::randn({2, 3, 40, 40}).slice(3, 0, 40, 2)}, {}}};
}

// Our kernels, each input twice and the first again after the others.
TEST(BlockedLayout, KernelsMatchJit) {
  expectMatchesJit(mobileBlockModule(), imageInputs(), {}, 1e-4);
}

// Split over the runtime's own workers: pieces of images (batch 2), of one image's output
// channel blocks (the 24-channel layers' last block padded; depthwise ones with their input's),
// of its rows where the output is one block (the stem from NCHW, the 16-channel depthwise) and of
// its input channel blocks (the squeeze-excited projection, each piece's weight scaled by its
// share of the factors); images large enough that the squeeze-excitation's pooling and scaling
// split their blocks too.
TEST(BlockedLayout, PiecesOnTheRuntimesOwnWorkersMatchJit) {
  torch::jit::Module module = mobileBlockModule();
  StaticModule built(module);
  std::vector<InputSet> inputs = imageInputs();
  inputs.push_back({{torch::randn({2, 3, 96, 112})}, {}});
  inputs.push_back({{torch::randn({1, 3, 160, 160})}, {}});
  expectTwoThreadsMatchJit(module, built, inputs);
}

// The JIT runs the new ops' references on the rewritten graph.
TEST(BlockedLayout, JitReferencesMatch) {
  auto graph = passes::prepareModule(mobileBlockModule()).graph;
  passes::fuseConvEpilogues(graph);
  passes::useChannelsLast(graph);
  passes::packConvWeights(graph);
  expectPassPreservesResults(passes::useBlockedLayout, graph,
                             {{torch::randn({1, 3, 16, 16})}, {torch::randn({2, 3, 11, 13})}},
                             /*expect_changed=*/true, 1e-4);
}

// A stem followed by max pooling (resnet's, squeezenet's, googlenet's) joins the chain after the
// pool: the stem reads the NCHW input as it is, the pool runs on blocked planes and the pooled
// value is the residual of the block as it is, with no conversion anywhere.
TEST(BlockedLayout, AStemJoinsTheChainAfterItsPool) {
  torch::jit::Module module("PooledStem");
  module.register_parameter("stem", convWeight(32, 3, 3), false);
  module.register_parameter("expand", convWeight(64, 32, 1), false);
  module.register_parameter("dw", convWeight(64, 1, 3), false);
  module.register_parameter("project", convWeight(32, 64, 1), false);
  module.define(R"JIT(
def forward(self, x):
    p = torch.max_pool2d(torch.relu(torch.conv2d(x, self.stem, None, 2, 1)), 3, 2, 0, 1, True)
    a = torch.relu(torch.conv2d(p, self.expand))
    b = torch.relu(torch.conv2d(a, self.dw, None, 1, 1, 1, 64))
    return torch.relu(torch.conv2d(b, self.project) + p), x.size(0)
)JIT");
  module.eval();
  StaticModule built(module, unfusedPairs());
  const torch::jit::Graph& graph = built.graph();
  EXPECT_EQ(countOp(graph, "srt::blocked_conv2d"), 4u) << graph;
  EXPECT_EQ(countOp(graph, "srt::blocked_max_pool2d"), 1u) << graph;
  EXPECT_EQ(countOp(graph, "aten::max_pool2d"), 0u) << graph;
  EXPECT_EQ(countOp(graph, "srt::to_blocked"), 0u) << graph;
  // The stem reads the graph's input itself; one conversion back, for the output.
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::Symbol::fromQualString("srt::blocked_conv2d")) {
      EXPECT_EQ(node->input(0), graph.inputs().at(0)) << graph;
      break;
    }
  }
  EXPECT_EQ(countOp(graph, "srt::from_blocked"), 1u) << graph;
  const std::vector<InputSet> inputs = {{{torch::randn({1, 3, 64, 48})}, {}},
                                        {{torch::randn({2, 3, 37, 41})}, {}}};
  expectMatchesJit(module, inputs, {}, 1e-4);
  expectTwoThreadsMatchJit(module, built, inputs);
}

// A channels-last tensor read twice by a chain, as its first convolution's input and as the
// residual of its last (here the output of a stem of more channels than the blocked kernels run
// faster, which stays channels last): one srt::to_blocked serves both (the convolution does not
// convert the same tensor again inside), and the results match the JIT, on one thread and on
// the runtime's own workers (the conversion split into rows of one image, or into images).
TEST(BlockedLayout, APlainTensorReadTwiceIsConvertedOnce) {
  torch::jit::Module module("PooledResidual");
  module.register_parameter("stem", convWeight(160, 3, 3), false);
  module.register_parameter("expand", convWeight(64, 160, 1), false);
  module.register_parameter("dw", convWeight(64, 1, 3), false);
  module.register_parameter("project", convWeight(160, 64, 1), false);
  module.define(R"JIT(
def forward(self, x):
    p = torch.relu(torch.conv2d(x, self.stem, None, 2, 1))
    a = torch.relu(torch.conv2d(p, self.expand))
    b = torch.relu(torch.conv2d(a, self.dw, None, 1, 1, 1, 64))
    return torch.relu(torch.conv2d(b, self.project) + p)
)JIT");
  module.eval();
  StaticModule built(module, unfusedPairs());
  const torch::jit::Graph& graph = built.graph();
  ASSERT_EQ(countOp(graph, "srt::blocked_conv2d"), 3u) << graph;
  ASSERT_EQ(countOp(graph, "srt::to_blocked"), 1u) << graph;
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == c10::Symbol::fromQualString("srt::to_blocked")) {
      EXPECT_EQ(node->output()->uses().size(), 2u) << graph;
      for (const torch::jit::Use& use : node->output()->uses()) {
        EXPECT_EQ(use.user->kind().toQualString(), std::string("srt::blocked_conv2d")) << graph;
      }
    }
  }
  const std::vector<at::Tensor> inputs{torch::randn({1, 3, 96, 80}), torch::randn({3, 3, 64, 64})};
  for (const at::Tensor& x : inputs) {
    expectRuntimeMatchesJit(module, {x}, {}, {}, 1e-4);
    RuntimeOptions options;
    options.intra_op_threads = 2;
    options.workers = IntraOpWorkers::kOwn;
    expectRuntimeMatchesJit(module, {x}, {}, options, 1e-4);
  }
}

// A ShuffleNet block's branch: a channel half of an NCHW tensor (58 of 116 channels: the last
// block padded) into a chain of 1x1, depthwise 3x3 and 1x1 convolutions, concatenated with the
// other half. The first convolution converts its one-image input with tiled transposes
// (ops::planesIntoBlocks: no NCHW -> blocked reorder in oneDNN's log), two images (a slab whose
// images are the whole's apart) with oneDNN's reorder; both match the JIT twice, on one thread
// and on two own workers.
TEST(BlockedLayout, AnNchwChannelHalfEntersTheChainTransposed) {
  torch::jit::Module module("ShuffleBranch");
  module.register_parameter("first", convWeight(58, 58, 1), false);
  module.register_parameter("dw", convWeight(58, 1, 3), false);
  module.register_parameter("last", convWeight(58, 58, 1), false);
  module.define(R"JIT(
def forward(self, x):
    a, b = x.chunk(2, 1)
    c = torch.relu(torch.conv2d(b, self.first))
    d = torch.conv2d(c, self.dw, None, 1, 1, 1, 58)
    return torch.cat([a, torch.relu(torch.conv2d(d, self.last))], 1)
)JIT");
  module.eval();
  StaticModule built(module, unfusedPairs());
  ASSERT_EQ(countOp(built.graph(), "srt::blocked_conv2d"), 3u) << built.graph();
  RuntimeOptions own;
  own.intra_op_threads = 2;
  own.workers = IntraOpWorkers::kOwn;
  for (const at::Tensor& x : {torch::randn({1, 116, 14, 12}), torch::randn({2, 116, 9, 7})}) {
    expectRuntimeMatchesJit(module, {x}, {}, {}, 1e-4);
    expectRuntimeMatchesJit(module, {x}, {}, own, 1e-4);
  }
  StaticRuntime runtime(built);
  const at::Tensor x = torch::randn({1, 116, 14, 12});
  const std::string log = steadyStateLog(runtime, {x});
  EXPECT_EQ(log.find("src_f32::blocked:abcd"), std::string::npos) << log;
}

// The conversion itself, into memory holding NaNs: ATen's (toBlocked) exactly, the padding lanes
// zero, for a padded last block, whole blocks and fewer channels than a block.
TEST(BlockedLayout, PlanesIntoBlocksMatchesTheConversion) {
  for (const int64_t channels : {58, 32, 3}) {
    const at::Tensor x = torch::randn({2, channels, 7, 5});
    const at::Tensor expected = ops::toBlocked(x);
    at::Tensor out = at::full(expected.sizes(), std::numeric_limits<float>::quiet_NaN());
    ops::planesIntoBlocks(x.data_ptr<float>(), out.data_ptr<float>(), 2, channels, 35,
                          channels * 35);
    EXPECT_TRUE(torch::equal(out, expected)) << channels;
  }
}

// A RegNet's Y block: 1x1, grouped 3x3 (160 channels in groups of 16), squeeze-excitation, 1x1 +
// residual, then 1x1 and a strided grouped 3x3 (groups of 32). The grouped convolutions, wider
// than the dense ones a chain takes, join the 1x1s' chain: no conversion but the input's and the
// outputs'. Matches the JIT on one thread, two own workers and two OpenMP threads, on an
// optimized oneDNN kernel.
TEST(BlockedLayout, GroupedConvolutionsStayInTheChain) {
  torch::jit::Module module("RegNetBlock");
  module.register_parameter("expand", convWeight(160, 32, 1), false);
  module.register_parameter("grouped", convWeight(160, 16, 3), false);
  module.register_parameter("squeeze", convWeight(8, 160, 1), false);
  module.register_parameter("excite", convWeight(160, 8, 1), false);
  module.register_parameter("project", convWeight(32, 160, 1), false);
  module.register_parameter("down", convWeight(160, 32, 3), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.expand))
    b = torch.relu(torch.conv2d(a, self.grouped, None, 1, 1, 1, 10))
    s = torch.sigmoid(torch.conv2d(torch.relu(torch.conv2d(torch.adaptive_avg_pool2d(b, 1), self.squeeze)), self.excite))
    c = torch.relu(torch.conv2d(b * s, self.project) + x)
    d = torch.relu(torch.conv2d(torch.relu(torch.conv2d(c, self.expand)), self.down, None, 2, 1, 1, 5))
    return torch.flatten(torch.adaptive_avg_pool2d(d, 1), 1), d
)JIT");
  module.eval();
  StaticModule built(module);
  const torch::jit::Graph& graph = built.graph();
  EXPECT_EQ(countOp(graph, "srt::packed_conv2d"), 0u) << graph;
  EXPECT_EQ(countOp(graph, "srt::scaled_packed_conv2d"), 0u) << graph;
  EXPECT_EQ(countOp(graph, "srt::to_blocked"), 1u)
      << graph; // x, read by the first and the residual
  EXPECT_EQ(countOp(graph, "srt::from_blocked"), 2u) << graph; // the two outputs
  std::vector<InputSet> inputs = {{{torch::randn({1, 32, 20, 18})}, {}},
                                  {{torch::randn({2, 32, 15, 16})}, {}}};
  expectMatchesJit(module, inputs, {}, 1e-4);
  expectTwoThreadsMatchJit(module, built, inputs);
  StaticRuntime runtime(built);
  const at::Tensor x = torch::randn({1, 32, 14, 14});
  const std::string log = steadyStateLog(runtime, {x});
  EXPECT_EQ(log.find("convolution,ref"), std::string::npos) << log;
}

// x.mean([2, 3]) over a chain's blocked output pools it blocked, as adaptive_avg_pool2d(x, 1)
// does: keepdim false (MnasNet's head: the [N, C] result flattened for its plain reader), keepdim
// true with dims written negative (its [N, C, 1, 1] scales the image lane by lane, blocked), and
// a mean over other dims left to ATen on the plain tensor.
TEST(BlockedLayout, ImageMeansArePooledBlocked) {
  torch::jit::Module module("ImageMeans");
  module.register_parameter("stem", convWeight(32, 3, 3), false);
  module.register_parameter("dw", convWeight(32, 1, 3), false);
  module.register_parameter("project", convWeight(40, 32, 1), false);
  module.register_parameter("head", torch::randn({5, 40}) * 0.2, false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.stem, None, 2, 1))
    b = torch.relu(torch.conv2d(a, self.dw, None, 1, 1, 1, 32))
    c = torch.conv2d(b, self.project)
    logits = torch.linear(c.mean([2, 3]), self.head)
    scaled = c * torch.sigmoid(c.mean([-1, -2], True))
    return logits, scaled, c.mean([1])
)JIT");
  module.eval();
  StaticModule built(module);
  const torch::jit::Graph& graph = built.graph();
  EXPECT_EQ(countOp(graph, "srt::blocked_global_avg_pool"), 2u) << graph;
  EXPECT_EQ(countOp(graph, "aten::mean"), 1u) << graph; // over the channels
  EXPECT_EQ(countOp(graph, "aten::flatten"), 1u) << graph;
  EXPECT_TRUE(built.stats().fallback_ops.empty()) << graph;
  std::vector<InputSet> inputs = {{{torch::randn({1, 3, 32, 32})}, {}},
                                  {{torch::randn({2, 3, 20, 28})}, {}}};
  expectMatchesJit(module, inputs, {}, 1e-4);
  expectTwoThreadsMatchJit(module, built, inputs);
}

// Activations the convolutions do not fuse compute on the blocked tensors between them, 20
// channels (padding lanes): elu, mish and softplus (which the channels-last pass keeps in the
// chain too), and a fused element-wise group of lane-wise instructions (x * sigmoid(1.702 * x)
// plus the block's input); a group that divides reads a plain tensor.
TEST(BlockedLayout, ActivationsBetweenConvolutionsStayBlocked) {
  torch::jit::Module module("BlockedActivations");
  module.register_parameter("stem", convWeight(20, 3, 3), false);
  module.register_parameter("w", convWeight(20, 20, 3), false);
  module.register_parameter("dw", convWeight(20, 1, 3), false);
  module.define(R"JIT(
def forward(self, x):
    a = torch.elu(torch.conv2d(x, self.stem, None, 2, 1))
    b = torch.mish(torch.conv2d(a, self.w, None, 1, 1))
    c = torch.softplus(torch.conv2d(b, self.dw, None, 1, 1, 1, 20))
    d = torch.conv2d(c, self.w, None, 1, 1)
    e = d * torch.sigmoid(1.702 * d) + c
    f = torch.conv2d(e, self.w, None, 1, 1)
    g = torch.conv2d(f / (1.0 + torch.abs(f)), self.dw, None, 1, 1, 1, 20)
    return torch.conv2d(g, self.w, None, 1, 1), c
)JIT");
  module.eval();
  StaticModule built(module);
  const torch::jit::Graph& graph = built.graph();
  // The chain ends at f, which the dividing group reads plain (the two convolutions after it are
  // too short a chain), and c for the output.
  EXPECT_EQ(countOp(graph, "srt::blocked_conv2d"), 5u) << graph;
  EXPECT_EQ(countOp(graph, "srt::packed_conv2d"), 2u) << graph;
  EXPECT_EQ(countOp(graph, "srt::fused_elementwise"), 2u) << graph;
  EXPECT_EQ(countOp(graph, "srt::from_blocked"), 2u) << graph;
  EXPECT_TRUE(built.stats().fallback_ops.empty()) << graph;
  std::vector<InputSet> inputs = {{{torch::randn({1, 3, 30, 26})}, {}},
                                  {{torch::randn({2, 3, 17, 21})}, {}}};
  expectMatchesJit(module, inputs, {}, 1e-4);
  expectTwoThreadsMatchJit(module, built, inputs);
}

// Two convolutions are no chain; a 3x3 of 256 channels is left to brgconv's channels-last kernel.
TEST(BlockedLayout, ShortChainsAndWideConvolutionsStayChannelsLast) {
  torch::jit::Module module("Short");
  module.register_parameter("first", convWeight(32, 16, 1), false);
  module.register_parameter("second", convWeight(32, 1, 3), false);
  module.register_parameter("wide", convWeight(256, 256, 3), false);
  module.define(R"JIT(
def forward(self, x, y):
    a = torch.conv2d(torch.conv2d(x, self.first), self.second, None, 1, 1, 1, 32)
    b = torch.conv2d(torch.conv2d(torch.conv2d(y, self.wide, None, 1, 1), self.wide, None, 1, 1), self.wide, None, 1, 1)
    return a, b
)JIT");
  module.eval();
  StaticModule built(module);
  EXPECT_EQ(countOp(built.graph(), "srt::blocked_conv2d"), 0u) << built.graph();
}

} // namespace
} // namespace srt::testing
