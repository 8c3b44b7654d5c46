// passes/channel_shuffle_fusion.cpp and aten::channel_shuffle's kernel
// (ops/shapes/rearrangements.cpp): ShuffleNet's channel shuffle written out becomes one
// aten::channel_shuffle, which matches the JIT on NCHW, channels-last and other inputs; forms
// that are not exactly a channel shuffle stay as written.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"

namespace srt::testing {
namespace {

// torchvision's shufflenetv2.channel_shuffle, as ShuffleNetV2's blocks call it.
constexpr const char* kShuffle = R"JIT(
def forward(self, x, y):
    z = torch.relu(x + y)
    batchsize, num_channels, height, width = z.size()
    channels_per_group = num_channels // 2
    z = z.view(batchsize, 2, channels_per_group, height, width)
    z = torch.transpose(z, 1, 2).contiguous()
    z = z.view(batchsize, -1, height, width)
    a, b = z.chunk(2, dim=1)
    return a * 2.0, b
)JIT";

at::Tensor channelsLast(at::IntArrayRef shape) {
  return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
}

TEST(ChannelShuffleFusion, TorchvisionsShuffleBecomesOneNode) {
  const std::vector<GraphInputs> inputs = {
      {torch::randn({1, 8, 5, 6}), torch::randn({1, 8, 5, 6})},
      {torch::randn({2, 6, 3, 4}), torch::randn({2, 6, 3, 4})}};
  auto rewritten = expectPassPreservesResults(passes::fuseChannelShuffles, preparedGraph(kShuffle),
                                              inputs, true);
  EXPECT_EQ(countKind(*rewritten, "aten::channel_shuffle"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::transpose"), 0u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::view"), 0u) << *rewritten;
  expectKinds(kShuffle, {{"aten::channel_shuffle", ops::KernelKind::kOutVariant}});
  // NCHW, channels last (our kernel's transposes), a batch; twice each.
  expectMatchesJit(kShuffle, {{{torch::randn({1, 8, 5, 6}), torch::randn({1, 8, 5, 6})}},
                              {{channelsLast({2, 12, 7, 3}), channelsLast({2, 12, 7, 3})}},
                              {{channelsLast({1, 116, 28, 28}), channelsLast({1, 116, 28, 28})}},
                              {{torch::randn({3, 4, 2, 9}), torch::randn({3, 4, 2, 9})}}});
  // Channels that do not divide into the groups: the view's error in the JIT, channel_shuffle's
  // here; an error either way, and the runtime works after it.
  StaticModule module(scriptModule(kShuffle));
  EXPECT_THROW(module({torch::randn({1, 7, 2, 2}), torch::randn({1, 7, 2, 2})}), c10::Error);
  EXPECT_NO_THROW(module({torch::randn({1, 8, 2, 2}), torch::randn({1, 8, 2, 2})}));
}

TEST(ChannelShuffleFusion, OtherPermutationsStayAsWritten) {
  for (const char* source : {R"JIT(
def forward(self, x):
    b, c, h, w = x.size()
    y = x.view(b, 2, c // 2, h, w)
    return torch.transpose(y, 2, 3).contiguous().view(b, -1, h, w)
)JIT",
                             R"JIT(
def forward(self, x):
    b, c, h, w = x.size()
    y = x.view(b, 2, c // 2, h, w)
    t = torch.transpose(y, 1, 2)
    return t.contiguous().view(b, -1, h, w), t
)JIT",
                             R"JIT(
def forward(self, x):
    b, c, h, w = x.size()
    y = x.view(b, 2, c // 4, h, w * 2)
    return torch.transpose(y, 1, 2).contiguous().view(b, -1, h, w)
)JIT"}) {
    SCOPED_TRACE(source);
    const std::vector<GraphInputs> inputs = {{torch::randn({1, 8, 3, 4})}};
    auto rewritten = expectPassPreservesResults(passes::fuseChannelShuffles, preparedGraph(source),
                                                inputs, false);
    EXPECT_EQ(countKind(*rewritten, "aten::channel_shuffle"), 0u) << *rewritten;
  }
}

// The kernel on the op itself: contiguous planes of any dtype, channels innermost, other strides
// and 3-D input through ATen's op.
TEST(ChannelShuffleKernel, MatchesTheJit) {
  const std::string source = "def forward(self, x):\n    return torch.channel_shuffle(x, 3)\n";
  expectKinds(source, {{"aten::channel_shuffle", ops::KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({2, 6, 4, 5})}},
                            {{channelsLast({1, 12, 3, 7})}},
                            {{torch::randn({2, 9, 5}).transpose(1, 2).transpose(1, 2)}},
                            {{torch::randn({1, 5, 6, 6}).transpose(1, 3)}},
                            {{torch::randn({2, 6, 3}, torch::kDouble)}},
                            {{torch::randint(0, 9, {1, 3, 2, 2})}},
                            {{channelsLast({0, 6, 2, 2})}}});
}

} // namespace
} // namespace srt::testing
