// passes/channels_last.cpp: where a convolution network's activations change format, that every
// reader that can tell strides apart still gets NCHW, and that results and outputs' layouts are
// the JIT's.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/onednn_log.h"
#include "harness/pass_testing.h"
#include "ops/conv/onednn_conv.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

torch::jit::Module network(const std::string& source, int64_t channels = 96) {
  torch::jit::Module module("ChannelsLastModule");
  module.register_parameter("stem", torch::randn({channels, 3, 3, 3}) * 0.3, false);
  module.register_parameter("body", torch::randn({channels, channels, 3, 3}) * 0.05, false);
  module.register_parameter("bias", torch::randn({channels}), false);
  module.register_parameter("head", torch::randn({10, channels}) * 0.1, false);
  module.define(source);
  module.eval();
  return module;
}

constexpr const char* kResidualNetwork = R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.stem, self.bias, 1, 1))
    y = torch.max_pool2d(y, [2, 2], [2, 2], [0, 0], [1, 1], False)
    z = torch.relu(torch.conv2d(y, self.body, self.bias, 1, 1) + y)
    features = torch.adaptive_avg_pool2d(z, [1, 1])
    return torch.linear(torch.flatten(features, 1), self.head), z
)JIT";

class ChannelsLastPass : public ::testing::Test {
protected:
  void SetUp() override {
    if (!ops::oneDnnConvPrefersChannelsLast(2)) {
      GTEST_SKIP() << "oneDNN's convolutions on this CPU do not want NHWC";
    }
  }
};

TEST_F(ChannelsLastPass, ConvertsAtTheInputAndRestoresAtTheOutputs) {
  const torch::jit::Module module = network(kResidualNetwork);
  StaticModule prepared(module);
  // One conversion into channels last (the input), one back (the returned activation).
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 16, 16})}, {}}, {{torch::randn({2, 3, 9, 12})}, {}}}, {},
                   1e-4);
  const auto outputs = prepared({torch::randn({1, 3, 8, 8})}).toTupleRef().elements();
  EXPECT_TRUE(outputs[1].toTensor().is_contiguous()) << "the caller gets NCHW, as from eager";
}

// A residual that is the network's input (a global skip, `x + body(x)`): converted to channels
// last once, for the convolution and its residual both, and added in the convolution's kernel.
// Given an NCHW residual, the kernel handed the node to ATen, the weight repacked on every call.
TEST_F(ChannelsLastPass, AGlobalSkipIsConvertedOnceForTheResidualToo) {
  const torch::jit::Module module = network(R"JIT(
def forward(self, x):
    return torch.relu(torch.conv2d(x, self.body, self.bias, 1, 1) + x)
)JIT");
  StaticModule prepared(module);
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  const std::vector<InputSet> inputs = {{{torch::randn({1, 96, 20, 20})}, {}},
                                        {{torch::randn({2, 96, 24, 18})}, {}}};
  expectMatchesJit(module, inputs, {}, 1e-4);
  StaticRuntime runtime(prepared);
  for (const InputSet& input : inputs) {
    const std::string log = steadyStateLog(runtime, input.args);
    EXPECT_NE(log.find("convolution"), std::string::npos) << log;
    EXPECT_EQ(log.find("forward_training"), std::string::npos) << log; // ATen's convolution
  }
}

// A feature pyramid's top-down step: the coarse map upsampled (nearest and bilinear, as
// F.interpolate calls them, after its check that reads the shape in the branch that raises) and
// added to the fine one. Upsampling keeps channels last and a shape read in a block sees no
// layout, so the activations are converted once in and once out, not around each upsampling.
TEST_F(ChannelsLastPass, UpsamplingKeepsTheLayout) {
  const torch::jit::Module module = network(R"JIT(
def forward(self, x):
    fine = torch.relu(torch.conv2d(x, self.stem, self.bias, 1, 1))
    coarse = torch.conv2d(fine, self.body, self.bias, 2, 1)
    scale = 1.0
    if bool(coarse.sum() > 1e30):
        scale = float(coarse.size(1))
    near = torch.upsample_nearest2d(coarse, [fine.size(2), fine.size(3)], None)
    smooth = torch.upsample_bilinear2d(coarse, None, False, [2.0, 2.0])
    a = torch.conv2d(near, self.body, self.bias, 1, 1)
    b = torch.conv2d(smooth, self.body, self.bias, 1, 1)
    return a * b, scale
)JIT",
                                            32);
  StaticModule prepared(module);
  // Into channels last at the input, back at the returned product: none for the upsampled
  // maps' convolutions, none for the size read in the branch.
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 16, 16})}, {}}, {{torch::randn({2, 3, 12, 20})}, {}}}, {},
                   1e-4);
}

// A chain of element-wise ops between convolutions, fused into one node, keeps the layout too:
// its kernel writes the layout its operands agree on, so no conversion runs around it.
TEST_F(ChannelsLastPass, FusedElementwiseChainsKeepTheLayout) {
  const torch::jit::Module module = network(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.stem, self.bias, 1, 1)
    z = torch.conv2d(y, self.body, self.bias, 1, 1)
    h = (torch.abs(z) - y) * y + 0.5
    return torch.conv2d(h, self.body, self.bias, 1, 1)
)JIT",
                                            32);
  // The blocked layout would take this chain (its group is lane-wise): the pass alone here.
  StaticModuleOptions options;
  options.disabled_passes = {"blocked_layout"};
  StaticModule prepared(module, options);
  EXPECT_EQ(countKind(prepared.graph(), "srt::fused_elementwise"), 1u) << prepared.graph();
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 16, 16})}, {}}, {{torch::randn({2, 3, 12, 20})}, {}}}, {},
                   1e-4);
}

// F.interpolate as TorchScript compiles it: the kernel chosen by the input's rank in nested If
// branches. The layout is followed through the branches: the If's result is channels last, and
// no conversion runs around it. A view read in a branch still gets NCHW.
TEST_F(ChannelsLastPass, RankDispatchInBranchesKeepsTheLayout) {
  torch::jit::Module module("Decoder");
  module.register_parameter("stem", torch::randn({16, 3, 3, 3}) * 0.3, false);
  module.register_parameter("fuse", torch::randn({16, 32, 3, 3}) * 0.1, false);
  module.register_parameter("bias", torch::randn({16}), false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.stem, self.bias, 1, 1))
    if y.dim() == 3:
        u = torch.upsample_nearest1d(y, None, [2.0])
    elif y.dim() == 4:
        u = torch.upsample_nearest2d(y, None, [2.0, 2.0])
    else:
        u = torch.upsample_nearest3d(y, None, [2.0, 2.0, 2.0])
    z = torch.conv2d(torch.cat([u, u], 1), self.fuse, self.bias, 1, 1)
    if bool(z.sum() > 0.0):
        w = z.flatten(1)
    else:
        w = z.view(z.size(0), -1)
    return w, u
)JIT");
  module.eval();
  StaticModule prepared(module);
  // The stem reads the NCHW input into channels last itself; back to NCHW before the branches
  // that view z and for the returned u: none around the upsampling's branches.
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  expectMatchesJit(
      module, {{{torch::randn({1, 3, 10, 12})}, {}}, {{torch::randn({2, 3, 7, 5})}, {}}}, {}, 1e-4);
}

// A branch that raises returns prim::Uninitialized: it says nothing about the layout, and the
// If's result is channels last when the branches that return agree.
TEST_F(ChannelsLastPass, RaisingBranchesDoNotDecideTheLayout) {
  const auto graph = parsedGraph(R"IR(
graph(%x : Tensor, %weight : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %two : float = prim::Constant[value=2.]()
  %message : str = prim::Constant[value="expected a 4-D input"]()
  %ones : int[] = prim::ListConstruct(%one, %one)
  %scales : float[] = prim::ListConstruct(%two, %two)
  %y : Tensor = aten::conv2d(%x, %weight, %none, %ones, %ones, %ones, %one)
  %rank : int = aten::dim(%y)
  %four_dims : bool = aten::eq(%rank, %four)
  %u : Tensor = prim::If(%four_dims)
    block0():
      %up : Tensor = aten::upsample_nearest2d(%y, %none, %scales)
      -> (%up)
    block1():
      prim::RaiseException(%message, %none)
      %never : Tensor = prim::Uninitialized()
      -> (%never)
  %z : Tensor = aten::conv2d(%u, %weight, %none, %ones, %ones, %ones, %one)
  return (%z)
)IR");
  // The weight a constant, as in a frozen module.
  torch::jit::Value* weight = graph->inputs()[1];
  {
    torch::jit::WithInsertPoint start(graph->nodes().front());
    weight->replaceAllUsesWith(graph->insertConstant(torch::randn({16, 16, 3, 3}) * 0.1));
  }
  graph->eraseInput(1);
  const auto rewritten =
      expectPassPreservesResults(passes::useChannelsLast, graph,
                                 {{torch::randn({1, 16, 8, 6})}, {torch::randn({2, 16, 5, 9})}},
                                 /*expect_changed=*/true, 1e-4);
  // Into channels last before the first convolution, back for the output: none around the If.
  EXPECT_EQ(countKind(*rewritten, "aten::contiguous"), 2u) << *rewritten;
}

// Conv-TasNet's block as torchaudio writes it: 1-D convolutions with PReLU and GroupNorm between
// them. Both keep the layout, so the activations stay channels last from the first convolution to
// the output; a view of the last group norm gets NCHW.
TEST_F(ChannelsLastPass, OneDimensionalBlocksWithPreluAndGroupNormStayChannelsLast) {
  torch::jit::Module module("TemporalBlock");
  module.register_parameter("expand", torch::randn({64, 16, 1}) * 0.2, false);
  module.register_parameter("depthwise", torch::randn({64, 1, 3}) * 0.3, false);
  module.register_parameter("project", torch::randn({16, 64, 1}) * 0.1, false);
  module.register_parameter("slopes", torch::rand({64}) * 0.3, false);
  module.register_parameter("gamma", torch::randn({64}), false);
  module.register_parameter("beta", torch::randn({64}), false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.group_norm(torch.prelu(torch.conv1d(x, self.expand), self.slopes), 1, self.gamma,
                         self.beta, 1e-8)
    y = torch.conv1d(y, self.depthwise, None, [1], [2], [2], 64)
    y = torch.group_norm(torch.prelu(y, self.slopes), 4, self.gamma, self.beta, 1e-8)
    return x + torch.conv1d(y, self.project), y.view(-1)
)JIT");
  module.eval();
  StaticModule prepared(module);
  // One conversion into channels last (the input), two back (the view's input, the output).
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 3u) << prepared.graph();
  expectMatchesJit(module, {{{torch::randn({1, 16, 300})}, {}}, {{torch::randn({2, 16, 77})}, {}}},
                   {}, 1e-4);
}

// A 1-D convolution's output is conv2d + squeeze; read by a view (Conv-TasNet's mask
// `.view(batch, sources, features, -1)`), it is converted once, before the squeeze, not again
// before the view.
TEST_F(ChannelsLastPass, AViewOfAViewIsConvertedOnce) {
  torch::jit::Module module("MaskHead");
  module.register_parameter("w", torch::randn({32, 16, 3}) * 0.2, false);
  module.register_parameter("head", torch::randn({64, 32, 1}) * 0.2, false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv1d(x, self.w, None, [1], [1]))
    masks = torch.sigmoid(torch.conv1d(y, self.head))
    return masks.view(x.size(0), 2, 32, -1)
)JIT");
  module.eval();
  StaticModule prepared(module);
  // The input's conversion, and one back for the view.
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  expectMatchesJit(module, {{{torch::randn({1, 16, 50})}, {}}, {{torch::randn({3, 16, 21})}, {}}},
                   {}, 1e-4);
}

// A view (which fails on channels-last strides), a stride query and a read inside a block see an
// NCHW tensor.
TEST_F(ChannelsLastPass, ReadersOfStridesGetNchw) {
  const torch::jit::Module module = network(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.stem, self.bias, 1, 1))
    flat = y.view(y.size(0), -1)
    if bool(y.is_contiguous()):
        flat = flat * 2.0
    if bool(x.sum() > 0.0):
        return flat + y.sum()
    return flat
)JIT");
  expectMatchesJit(module, {{{torch::randn({1, 3, 6, 6})}, {}}, {{torch::randn({2, 3, 5, 7})}, {}}},
                   {}, 1e-4);
}

// Channels-last strides travel through views and through element-wise ops whatever operand they
// are (conv_tasnet: a 1-D convolution squeezed back, times a mask, then .view()): the view still
// gets a tensor it can view.
TEST_F(ChannelsLastPass, StridesThroughViewsAndSecondOperandsReachNoView) {
  expectMatchesJit(network(R"JIT(
def forward(self, x, mask):
    y = torch.conv2d(x, self.stem, self.bias, 1, 1)
    t = y.transpose(2, 3)
    masked = mask * t
    return masked.view(masked.size(0), -1)
)JIT"),
                   {{{torch::randn({1, 3, 6, 5}), torch::rand({1, 1, 5, 6})}, {}},
                    {{torch::randn({2, 3, 4, 7}), torch::rand({2, 1, 7, 4})}, {}}},
                   {}, 1e-4);
}

// Small CNNs too: oneDNN's channels-last convolutions beat the NCHW ones with a reorder on each
// side (ops/conv/convolution.cpp).
TEST_F(ChannelsLastPass, ConvertsNetworksOfSmallConvolutions) {
  auto graph = passes::prepareModule(network(kResidualNetwork, 8)).graph;
  auto result =
      expectPassPreservesResults(passes::useChannelsLast, graph, {{torch::randn({1, 3, 8, 8})}},
                                 /*expect_changed=*/true, 1e-4);
  EXPECT_GE(countKind(*result, "aten::contiguous"), 2u) << *result;
}

// A stem of 16 output channels reads the NCHW input itself and writes channels last (the
// attribute on the convolution, no conversion before it); any other stem's input is converted.
// Whatever layout the caller's input has (NCHW, channels last, neither), results are the JIT's.
TEST_F(ChannelsLastPass, StemOfSixteenChannelsReadsNchwItself) {
  const c10::Symbol marked = c10::Symbol::attr(ops::kChannelsLastOutput);
  for (const int64_t channels : {16, 32}) {
    const torch::jit::Module module = network(kResidualNetwork, channels);
    auto result =
        expectPassPreservesResults(passes::useChannelsLast, passes::prepareModule(module).graph,
                                   {{torch::randn({1, 3, 8, 8})}, {torch::randn({2, 3, 7, 5})}},
                                   /*expect_changed=*/true, 1e-4);
    size_t marked_convolutions = 0;
    for (const torch::jit::Node* node : result->nodes()) {
      marked_convolutions += node->hasAttribute(marked) ? 1 : 0;
    }
    const bool reads_nchw = channels == 16;
    EXPECT_EQ(marked_convolutions, reads_nchw ? 1u : 0u) << *result;
    // The returned activation goes back to NCHW; the input is converted unless the stem reads it.
    EXPECT_EQ(countKind(*result, "aten::contiguous"), reads_nchw ? 1u : 2u) << *result;
    const torch::Tensor wide = torch::randn({2, 3, 12, 22});
    expectMatchesJit(
        module,
        {{{torch::randn({1, 3, 16, 16})}, {}},
         {{torch::randn({2, 3, 9, 12}).contiguous(at::MemoryFormat::ChannelsLast)}, {}},
         {{wide.slice(3, 0, 22, 2)}, {}},
         {{torch::randn({1, 3, 2, 2})}, {}}},
        {}, 1e-4);
  }
}

// DenseNet's dense block: a list of features, each layer's output appended to it, each layer
// reading their concatenation through BatchNorm + ReLU (one srt::cat_batch_norm_activation). The
// concatenation of channels-last features is channels last too, so no conversion runs before
// each layer's convolution; a list
// that also holds an NCHW tensor (the caller's input) is concatenated NCHW and converted.
TEST_F(ChannelsLastPass, ConcatenatedFeatureListsStayChannelsLast) {
  torch::jit::Module module("DenseBlock");
  module.register_parameter("stem", torch::randn({8, 3, 3, 3}) * 0.3, false);
  for (const int64_t layer : {0, 1}) {
    const int64_t in = 8 * (layer + 1);
    module.register_parameter("w" + std::to_string(layer), torch::randn({8, in, 3, 3}) * 0.1,
                              false);
    module.register_parameter("g" + std::to_string(layer), torch::rand({in}) + 0.5, false);
    module.register_parameter("b" + std::to_string(layer), torch::randn({in}), false);
    module.register_buffer("m" + std::to_string(layer), torch::randn({in}) * 0.1);
    module.register_buffer("v" + std::to_string(layer), torch::rand({in}) + 0.5);
  }
  module.register_parameter("wx", torch::randn({8, 14, 1, 1}) * 0.1, false);
  module.define(R"JIT(
def layer(self, features: List[Tensor], w, g, b, m, v):
    x = torch.cat(features, 1)
    return torch.conv2d(torch.relu(torch.batch_norm(x, g, b, m, v, False, 0.1, 1e-5, False)), w, None, 1, 1)

def forward(self, x):
    features = [torch.conv2d(x, self.stem, None, 1, 1)]
    features.append(self.layer(features, self.w0, self.g0, self.b0, self.m0, self.v0))
    features.append(self.layer(features, self.w1, self.g1, self.b1, self.m1, self.v1))
    dense = torch.cat(features, 1)
    features.append(x)
    mixed = torch.conv2d(torch.cat(features, 1)[:, 13:], self.wx)
    return dense, mixed
)JIT");
  module.eval();
  StaticModule prepared(module);
  // In: the input for the stem, the mixed list's concatenation; out: the two results.
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 4u) << prepared.graph();
  EXPECT_EQ(countKind(prepared.graph(), "srt::cat_batch_norm_activation"), 2u) << prepared.graph();
  expectMatchesJit(
      module, {{{torch::randn({1, 3, 10, 10})}, {}}, {{torch::randn({2, 3, 7, 9})}, {}}}, {}, 1e-4);
}

// Without a convolution there is nothing to keep channels last for.
// Eager's convolutions and pools take an unbatched [C, H, W] image too. The conversion the pass
// inserts (ATen's contiguous(x, channels_last) raises for 3-D tensors) leaves such an image as
// it is; batched calls on the same runtime stay channels last.
TEST_F(ChannelsLastPass, UnbatchedImagesRunAsEagerRunsThem) {
  const torch::jit::Module module = network(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.stem, self.bias, 1, 1))
    y = torch.max_pool2d(y, [2, 2], [2, 2], [0, 0], [1, 1], False)
    return torch.relu(torch.conv2d(y, self.body, self.bias, 1, 1) + y)
)JIT");
  StaticModule prepared(module);
  EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  expectMatchesJit(module,
                   {{{torch::randn({3, 16, 16})}, {}},
                    {{torch::randn({2, 3, 9, 12})}, {}},
                    {{torch::randn({3, 11, 7})}, {}}},
                   {}, 1e-4);
}

TEST_F(ChannelsLastPass, LeavesNetworksWithoutConvolutions) {
  auto graph = passes::prepareModule(network(R"JIT(
def forward(self, x):
    return torch.relu(torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False))
)JIT"))
                   .graph;
  auto result =
      expectPassPreservesResults(passes::useChannelsLast, graph, {{torch::randn({1, 3, 8, 8})}},
                                 /*expect_changed=*/false, 1e-4);
  EXPECT_EQ(countKind(*result, "aten::contiguous"), 0u) << *result;
}

// A video network (r3d_18's shape: conv3d, ReLU, residual, global pooling, linear head): 5-D
// activations become channels_last_3d where oneDNN's 3-D convolutions want NDHWC, never a 4-D
// format, and the results and the returned activation's layout are the JIT's.
TEST(ChannelsLastPass3d, VideoNetworkMatchesJit) {
  torch::jit::Module module("VideoModule");
  module.register_parameter("stem", torch::randn({32, 3, 3, 7, 7}) * 0.1, false);
  module.register_parameter("body", torch::randn({32, 32, 3, 3, 3}) * 0.05, false);
  module.register_parameter("bias", torch::randn({32}), false);
  module.register_parameter("head", torch::randn({10, 32}) * 0.1, false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv3d(x, self.stem, self.bias, [1, 2, 2], [1, 3, 3]))
    z = torch.relu(torch.conv3d(y, self.body, self.bias, 1, 1) + y)
    features = torch.adaptive_avg_pool3d(z, [1, 1, 1])
    return torch.linear(torch.flatten(features, 1), self.head), z
)JIT");
  module.eval();
  expectMatchesJit(
      module, {{{torch::randn({1, 3, 4, 16, 16})}, {}}, {{torch::randn({2, 3, 3, 9, 12})}, {}}}, {},
      1e-4);
  StaticModule prepared(module);
  const auto outputs = prepared({torch::randn({1, 3, 4, 8, 8})}).toTupleRef().elements();
  EXPECT_TRUE(outputs[1].toTensor().is_contiguous()) << "the caller gets NCDHW, as from eager";
  if (ops::oneDnnConvPrefersChannelsLast(3)) {
    // One conversion into channels last (the input), one back (the returned activation).
    EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 2u) << prepared.graph();
  } else {
    EXPECT_EQ(countKind(prepared.graph(), "aten::contiguous"), 0u) << prepared.graph();
  }
}

// 2-D and 3-D convolutions in one graph each get their own rank's format.
TEST(ChannelsLastPass3d, MixedRanksGetTheirOwnFormats) {
  torch::jit::Module module("MixedModule");
  module.register_parameter("w2", torch::randn({16, 3, 3, 3}) * 0.1, false);
  module.register_parameter("w3", torch::randn({16, 3, 3, 3, 3}) * 0.1, false);
  module.define(R"JIT(
def forward(self, image, clip):
    a = torch.relu(torch.conv2d(image, self.w2, None, 1, 1))
    b = torch.relu(torch.conv3d(clip, self.w3, None, 1, 1))
    return a.sum() + b.sum(), a, b
)JIT");
  module.eval();
  expectMatchesJit(module,
                   {{{torch::randn({1, 3, 8, 8}), torch::randn({1, 3, 4, 8, 8})}, {}},
                    {{torch::randn({2, 3, 5, 7}), torch::randn({2, 3, 3, 5, 6})}, {}}},
                   {}, 1e-3);
}

} // namespace
} // namespace srt::testing
