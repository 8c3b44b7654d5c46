// conv2d with its weight as an input (native, ops/conv/convolution.cpp), max_pool2d, avg_pool2d and
// adaptive_avg_pool2d (out-variant, ops/conv/pooling.cpp), their 3-D forms
// (ops/conv/pooling3d.cpp), against the JIT.
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

TEST(ConvPool, Conv2dArguments) {
  const char* source = R"JIT(
def forward(self, x, w, b, wg):
    plain = torch.conv2d(x, w, b)
    strided = torch.conv2d(x, w, None, [2, 1], [1, 2], [1, 1], 1)
    dilated = torch.conv2d(x, w, b, 1, 2, 2, 1)
    grouped = torch.conv2d(x, wg, None, 1, 1, 1, 2)
    return plain, strided, dilated, grouped
)JIT";
  auto set = [](int64_t n, int64_t h, int64_t w, torch::Dtype dtype) {
    auto options = torch::TensorOptions().dtype(dtype);
    return InputSet{{torch::randn({n, 4, h, w}, options), torch::randn({6, 4, 3, 3}, options),
                     torch::randn({6}, options), torch::randn({6, 2, 3, 3}, options)}};
  };
  expectMatchesJit(source,
                   {set(1, 8, 8, torch::kFloat32), set(2, 10, 7, torch::kFloat32),
                    set(1, 6, 6, torch::kFloat64)},
                   1e-4);
  expectKinds(source, {{"aten::conv2d", KernelKind::kNative}});
}

TEST(ConvPool, Conv2dNonContiguousInput) {
  expectMatchesJit(
      R"JIT(
def forward(self, x, w):
    return torch.conv2d(x, w, None, 1, 1)
)JIT",
      {{{torch::randn({1, 5, 5, 3}).permute({0, 3, 1, 2}), torch::randn({2, 3, 3, 3})}},
       {{torch::randn({2, 3, 4, 6}), torch::randn({2, 3, 3, 3})}}},
      1e-4);
}

// Inputs that require grad: the runtime runs without autograd, and conv2d's inner ops skip the
// autograd layers (ops/core/inference_dispatch.h); results must not differ.
TEST(ConvPool, Conv2dWithInputsRequiringGrad) {
  auto requiring = [](torch::Tensor t) { return t.requires_grad_(true); };
  expectMatchesJit(
      R"JIT(
def forward(self, x, w, b):
    return torch.conv2d(x, w, b, 1, 1).view(-1)
)JIT",
      {{{requiring(torch::randn({1, 3, 6, 6})), requiring(torch::randn({4, 3, 3, 3})),
         requiring(torch::randn({4}))}},
       {{torch::randn({2, 3, 5, 5}), requiring(torch::randn({4, 3, 3, 3})), torch::randn({4})}}},
      1e-4);
}

TEST(ConvPool, MaxPool2d) {
  const char* source = R"JIT(
def forward(self, x):
    a = torch.max_pool2d(x, 2)
    b = torch.max_pool2d(x, [3, 2], [2, 1], [1, 0])
    c = torch.max_pool2d(x, 3, 2, 1, 1, True)
    d = torch.max_pool2d(x, 2, 1, 0, 2)
    return a, b, c, d
)JIT";
  expectMatchesJit(source, {{{torch::randn({1, 3, 8, 8})}},
                            {{torch::randn({2, 2, 7, 9})}},
                            {{torch::randn({1, 8, 8, 2}).permute({0, 3, 1, 2})}},
                            {{torch::randn({3, 6, 5}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::max_pool2d", KernelKind::kOutVariant}});
}

// The contiguous and channels-last float32 loops against ATen's kernel: NaN wins its window, -inf
// stays, padding never wins, 3-D input, ceil mode's partial windows; channel counts of whole
// vectors and a tail (37 = 2 x 16 + 5); windows of 2, 3 and more rows and columns (the unrolled
// and the general maximum), rows skipped by a stride above the kernel, a window of more rows
// than the ring of row maxima takes (17: the window loop), a dilated one; rows of more channels
// than the ring holds for all their output columns at once (96 x 130: pooled in column chunks,
// NaN at a chunk's edge and at the row's end).
TEST(ConvPool, MaxPool2dLoopMatchesAtenWithNanAndInf) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return (torch.max_pool2d(x, 2), torch.max_pool2d(x, 3, 2, 1, 1, True),
            torch.max_pool2d(x, [2, 3], [1, 2], [1, 1], [2, 1]),
            torch.max_pool2d(x, [5, 4], [3, 3], [2, 1], 1, True),
            torch.max_pool2d(x, [1, 2], [3, 2]), torch.max_pool2d(x, [17, 1], 1, [8, 0]))
)JIT"));
  at::Tensor x = -torch::rand({2, 3, 9, 11}) - 1; // all negative: a padded zero would win
  x[0][1][2][3] = std::nanf("");
  x[1][2][8][10] = std::nanf("");
  x[1][0].fill_(-std::numeric_limits<float>::infinity());
  at::Tensor wide = -torch::rand({2, 37, 7, 10}) - 1;
  wide[1][20][3][4] = std::nanf("");
  wide[0][36][6][9] = std::nanf("");
  wide[0][33].fill_(-std::numeric_limits<float>::infinity());
  at::Tensor long_rows = -torch::rand({1, 96, 9, 130}) - 1;
  long_rows[0][5][4][41] = std::nanf("");
  long_rows[0][17][3][42] = std::nanf("");
  long_rows[0][40][5][84] = std::nanf(""); // 3x3 stride 2: the first window of the second chunk
  long_rows[0][95][8][129] = std::nanf("");
  const auto expected_of = [](const at::Tensor& input) {
    return std::vector<at::Tensor>{at::max_pool2d(input, {2}),
                                   at::max_pool2d(input, {3}, {2}, {1}, {1}, true),
                                   at::max_pool2d(input, {2, 3}, {1, 2}, {1, 1}, {2, 1}),
                                   at::max_pool2d(input, {5, 4}, {3, 3}, {2, 1}, {1}, true),
                                   at::max_pool2d(input, {1, 2}, {3, 2}),
                                   at::max_pool2d(input, {17, 1}, {1}, {8, 0})};
  };
  for (const at::Tensor& input : {x, x[1], x.contiguous(at::MemoryFormat::ChannelsLast),
                                  wide.contiguous(at::MemoryFormat::ChannelsLast),
                                  long_rows.contiguous(at::MemoryFormat::ChannelsLast)}) {
    const std::vector<at::Tensor> expected = expected_of(input);
    for (int run = 0; run < 2; ++run) {
      const auto outputs = module({input}).toTupleRef().elements();
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(torch::equal(outputs[i].toTensor().isnan(), expected[i].isnan())) << i;
        EXPECT_TRUE(torch::allclose(outputs[i].toTensor(), expected[i], 0, 0, /*equal_nan=*/true))
            << i;
      }
    }
  }
}

TEST(ConvPool, InvalidMaxPoolArgumentsAreErrors) {
  for (const char* arguments : {"x, 5", "x, 2, 0", "x, [2, 2, 2]", "x, 2, 2, 2", "x, 2, 2, 0, 0"}) {
    StaticModule module(scriptModule(
        std::string("\ndef forward(self, x):\n    return torch.max_pool2d(") + arguments + ")\n"));
    EXPECT_THROW(module({torch::randn({1, 2, 4, 4})}), c10::Error) << arguments;
    EXPECT_THROW(module({torch::randn({2, 4, 4})}), c10::Error) << arguments;
  }
}

TEST(ConvPool, AdaptiveAvgPool2d) {
  const char* source = R"JIT(
def forward(self, x):
    return torch.adaptive_avg_pool2d(x, [1, 1]), torch.adaptive_avg_pool2d(x, [2, 3])
)JIT";
  expectMatchesJit(source, {{{torch::randn({1, 3, 8, 8})}},
                            {{torch::randn({2, 4, 5, 7})}},
                            {{torch::randn({2, 6, 6, 3}).permute({0, 3, 1, 2})}},
                            {{torch::randn({3, 4, 4}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::adaptive_avg_pool2d", KernelKind::kOutVariant}});
}

// Global average pooling of channels-last images (squeeze-excitation blocks) within rounding of
// ATen's mean, one or several images, odd sizes, run after run, channels-last [N, C, 1, 1] out.
TEST(ConvPool, GlobalAvgPoolChannelsLast) {
  const std::string source = R"JIT(
def forward(self, x):
    return torch.adaptive_avg_pool2d(x, [1, 1])
)JIT";
  StaticModule module(scriptModule(source));
  const int threads = at::get_num_threads();
  // A large image is summed in one range of pixels per thread, a large batch in one range of
  // images per thread (3 over 2: one and two).
  for (const auto& x : {torch::randn({1, 96, 56, 56}), torch::randn({2, 19, 7, 5}),
                        torch::randn({3, 1152, 1, 1}) * 3, torch::randn({3, 64, 28, 28})}) {
    const at::Tensor input = x.contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor expected = at::adaptive_avg_pool2d(input, {1, 1});
    for (int run = 0; run < 4; ++run) {
      at::set_num_threads(run % 2 + 1);
      const at::Tensor ours = module({input}).toTensor();
      EXPECT_TRUE(torch::allclose(ours, expected, 1e-6, 1e-6)) << x.sizes();
      EXPECT_EQ(ours.sizes(), expected.sizes());
      EXPECT_TRUE(ours.is_contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
  at::set_num_threads(threads);
}

// DenseNet's transitions (2x2, stride 2), Inception's branches (3x3, stride 1, padded) and the
// rarer arguments (ceil mode without the padding counted, a divisor override).
TEST(ConvPool, AvgPool2d) {
  const char* source = R"JIT(
def forward(self, x):
    return (torch.avg_pool2d(x, [2, 2], [2, 2]), torch.avg_pool2d(x, [3, 3], [1, 1], [1, 1]),
            torch.avg_pool2d(x, [3, 3], [2, 2], [1, 1], True, False),
            torch.avg_pool2d(x, [2, 2], [1, 1], [0, 0], False, True, 3),
            torch.avg_pool2d(x, [17, 1], [1, 1], [8, 0]))
)JIT";
  // Channels last (our ring loop): few channels, a vector tail (37), rows pooled in column chunks
  // (96 x 130), a batch, a window of more rows than the ring takes (17: ATen's kernel); and the
  // rest through ATen's kernel.
  const auto channels_last = [](at::IntArrayRef shape) {
    return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
  };
  expectMatchesJit(source, {{{torch::randn({1, 3, 8, 8})}},
                            {{torch::randn({2, 4, 5, 7})}},
                            {{torch::randn({2, 6, 6, 3}).permute({0, 3, 1, 2})}},
                            {{channels_last({1, 37, 9, 11})}},
                            {{channels_last({1, 96, 9, 130})}},
                            {{channels_last({2, 64, 7, 7})}},
                            {{torch::randn({3, 4, 4}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::avg_pool2d", KernelKind::kOutVariant}});
}

// The small CNN pattern: conv, relu, pool, global pool, flatten, with a batch-size change.
TEST(ConvPool, ConvPoolFlattenChain) {
  expectMatchesJit(R"JIT(
def forward(self, x, w):
    y = torch.max_pool2d(torch.relu(torch.conv2d(x, w, None, 1, 1)), 2)
    return torch.flatten(torch.adaptive_avg_pool2d(y, [1, 1]), 1)
)JIT",
                   {{{torch::randn({1, 3, 16, 16}), torch::randn({8, 3, 3, 3})}},
                    {{torch::randn({4, 3, 12, 10}), torch::randn({8, 3, 3, 3})}}},
                   1e-4);
}

// r3d_18's global pooling and uneven grids (overlapping windows), on NCDHW, channels_last_3d,
// unbatched and float64 input.
TEST(ConvPool, AdaptiveAvgPool3d) {
  const char* source = R"JIT(
def forward(self, x):
    return torch.adaptive_avg_pool3d(x, [1, 1, 1]), torch.adaptive_avg_pool3d(x, [2, 3, 4])
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({1, 3, 4, 8, 8})}},
                    {{torch::randn({2, 5, 3, 7, 5})}},
                    {{torch::randn({2, 6, 3, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast3d)}},
                    {{torch::randn({1, 4, 5, 6, 7}).transpose(2, 4)}},
                    {{torch::randn({3, 4, 5, 6})}},
                    {{torch::randn({2, 3, 4, 4, 5}, torch::kFloat64)}}},
                   1e-5);
  expectKinds(source, {{"aten::adaptive_avg_pool3d", KernelKind::kOutVariant}});
}

// A channels_last_3d input keeps its format (what passes/channels_last.cpp counts on), with the
// values ATen computes.
TEST(ConvPool, AdaptiveAvgPool3dKeepsChannelsLast) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return torch.adaptive_avg_pool3d(x, [2, 2, 3]) * 1.0
)JIT"));
  const at::Tensor x = torch::randn({2, 16, 3, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast3d);
  for (int run = 0; run < 2; ++run) {
    const at::Tensor y = module({x}).toTensor();
    EXPECT_TRUE(torch::allclose(y, at::adaptive_avg_pool3d(x, {2, 2, 3}), 1e-5, 1e-6));
  }
}

TEST(ConvPool, AvgAndMaxPool3d) {
  const char* source = R"JIT(
def forward(self, x):
    return (torch.avg_pool3d(x, [2, 2, 2]), torch.avg_pool3d(x, [3, 3, 3], [1, 2, 2], [1, 1, 1], True, False),
            torch.max_pool3d(x, [2, 2, 2]), torch.max_pool3d(x, [1, 3, 3], [1, 2, 2], [0, 1, 1]),
            torch.max_pool3d(x, 3, 2, 1, [1, 2, 1], True))
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({1, 3, 4, 8, 8})}},
                    {{torch::randn({2, 4, 5, 7, 9})}},
                    {{torch::randn({2, 3, 4, 6, 7}).contiguous(at::MemoryFormat::ChannelsLast3d)}},
                    {{torch::randn({3, 4, 6, 6})}}});
  expectKinds(source, {{"aten::avg_pool3d", KernelKind::kOutVariant},
                       {"aten::max_pool3d", KernelKind::kOutVariant}});
  StaticModule module(scriptModule("\ndef forward(self, x):\n    return torch.max_pool3d(x, 5)\n"));
  EXPECT_THROW(module({torch::randn({1, 2, 4, 4, 4})}), c10::Error); // output would be empty
}

} // namespace
} // namespace srt::testing
