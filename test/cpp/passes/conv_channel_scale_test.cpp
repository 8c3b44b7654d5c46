// passes/conv_channel_scale.cpp and the scaled convolutions' kernel (ops/conv/onednn_conv.h):
// squeeze-excitation scalings fold into the convolution they feed, whose kernel scales the
// weight's input channels where the weight is the smaller, and the image where not.
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/conv_weights.h"
#include "harness/differential.h"
#include "harness/onednn_log.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

// torchvision's SqueezeExcitation (pool, 1x1 convolutions, sigmoid, scale * input) before a
// 48 -> 16 projection; one written with mean, linears, a view and expand_as, the scale second,
// before a 3x3 of 16 -> 64 (its weight larger than small images); a spatial attention map (one
// factor per pixel, from no pooling), and a scaling read by a cat, which stay multiplications
// (the second aten::mul's channel-scale loop, on a broadcast scale).
torch::jit::Module squeezeExcitationModule() {
  torch::jit::Module module("SqueezeExcitationModule");
  module.register_parameter("expand", convWeight(48, 8, 1), false);
  module.register_parameter("dw", convWeight(48, 1, 3), false);
  module.register_parameter("fc1", convWeight(12, 48, 1), false);
  module.register_parameter("fc1_bias", torch::randn({12}) * 0.1, false);
  module.register_parameter("fc2", convWeight(48, 12, 1), false);
  module.register_parameter("fc2_bias", torch::randn({48}) * 0.1, false);
  module.register_parameter("project", convWeight(16, 48, 1), false);
  module.register_parameter("l1", torch::randn({4, 16}) * 0.25, false);
  module.register_parameter("l2", torch::randn({16, 4}) * 0.5, false);
  module.register_parameter("wide", convWeight(64, 16, 3), false);
  module.register_parameter("spatial", convWeight(1, 64, 1), false);
  module.register_parameter("last", convWeight(32, 64, 1), false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.expand))
    y = torch.conv2d(y, self.dw, None, 1, 1, 1, 48)
    s = torch.adaptive_avg_pool2d(y, [1, 1])
    s = torch.relu(torch.conv2d(s, self.fc1, self.fc1_bias))
    s = torch.sigmoid(torch.conv2d(s, self.fc2, self.fc2_bias))
    z = torch.conv2d(s * y, self.project)
    t = torch.mean(z, [2, 3])
    t = torch.sigmoid(torch.linear(torch.relu(torch.linear(t, self.l1)), self.l2))
    w = torch.relu(torch.conv2d(z * t.view(t.size(0), 16, 1, 1).expand_as(z), self.wide, None, 1, 1))
    a = torch.sigmoid(torch.conv2d(w, self.spatial))
    u = torch.sigmoid(torch.mean(w, [2, 3], True))
    return torch.conv2d(w * a, self.last), torch.cat([w * u.expand_as(w), w], 1)
)JIT");
  module.eval();
  return module;
}

size_t countNodes(const torch::jit::Graph& graph, const char* kind) {
  size_t count = 0;
  for (const torch::jit::Node* node : graph.nodes()) {
    count += node->kind() == c10::Symbol::fromQualString(kind) ? 1 : 0;
  }
  return count;
}

// Channel-blocked (the default on AVX-512: the chain is depthwise and 1x1 convolutions), channels
// last, NCHW.
std::vector<StaticModuleOptions> layouts() {
  StaticModuleOptions blocked;
  StaticModuleOptions channels_last;
  channels_last.disabled_passes = {"blocked_layout"};
  StaticModuleOptions plain;
  plain.disabled_passes = {"blocked_layout", "channels_last"};
  return {blocked, channels_last, plain};
}

TEST(ConvChannelScale, FoldsPooledScalesIntoTheConvolutionTheyFeed) {
  for (const StaticModuleOptions& options : layouts()) {
    StaticModule module(squeezeExcitationModule(), options);
    const torch::jit::Graph& graph = module.graph();
    EXPECT_EQ(countNodes(graph, "srt::scaled_blocked_conv2d") +
                  countNodes(graph, "srt::scaled_packed_conv2d"),
              2u)
        << graph;
    EXPECT_EQ(countNodes(graph, "aten::mul"), 2u) << graph; // the spatial map's, the add's
  }
  StaticModuleOptions disabled;
  disabled.disabled_passes = {"conv_channel_scale"};
  StaticModule module(squeezeExcitationModule(), disabled);
  EXPECT_EQ(countNodes(module.graph(), "aten::mul"), 4u) << module.graph();
}

// Each layout: one image (the projection's weight scaled; the 3x3's too from 40x40 up, the image
// below), batches whose images are large enough to convolve one by one with their own weights
// and small ones (the images scaled), each input twice and the first again after the others.
// Without out variants the scaled ops' JIT reference runs.
TEST(ConvChannelScale, KernelsMatchJit) {
  std::vector<StaticModuleOptions> all = layouts();
  all.emplace_back().enable_out_variant = false;
  all.back().optimize_memory = false;
  for (const StaticModuleOptions& options : all) {
    SCOPED_TRACE(describe(options));
    expectMatchesJit(squeezeExcitationModule(),
                     {{{torch::randn({1, 8, 40, 44})}, {}},
                      {{torch::randn({1, 8, 12, 10})}, {}},
                      {{torch::randn({3, 8, 48, 48})}, {}},
                      {{torch::randn({2, 8, 9, 11})}, {}}},
                     options, 1e-4);
  }
}

// On the runtime's own workers (2 threads): one image splits by output channel blocks or rows,
// each piece scaling its slice of the weight; batches split by images, each piece convolving its
// images with their own weights.
TEST(ConvChannelScale, PiecesOnOwnWorkersMatchJit) {
  RuntimeOptions options;
  options.intra_op_threads = 2;
  options.workers = IntraOpWorkers::kOwn;
  std::vector<at::Tensor> inputs;
  for (const int64_t batch : {1, 4, 3, 1}) {
    inputs.push_back(torch::randn({batch, 8, 56, 52}));
  }
  for (const StaticModuleOptions& layout : layouts()) {
    expectRuntimeMatchesJit(squeezeExcitationModule(), inputs, layout, options, 1e-4);
  }
}

// At batch 1 the projection's 768 weights are scaled, not the image's 48 x 40 x 44 numbers: a
// reorder with per-input-channel factors runs every call, and no multiplication of the image.
TEST(ConvChannelScale, OneImageScalesTheWeight) {
  StaticModule module(squeezeExcitationModule());
  const at::Tensor x = torch::randn({1, 8, 40, 44});
  static_cast<void>(module({x}));
  const std::string log = oneDnnLog([&] { static_cast<void>(module({x})); });
  EXPECT_NE(log.find("attr-oscale:2"), std::string::npos) << log;
}

} // namespace
} // namespace srt::testing
