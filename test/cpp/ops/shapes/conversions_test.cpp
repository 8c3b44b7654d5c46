// Out-variant to / type_as / clone / contiguous (ops/shapes/conversions.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// The C++ TorchScript frontend has no torch.float64 etc.: dtypes and memory formats are
// spelled as their enum values (float32 6, float64 7, int64 4; contiguous 0, channels_last 2).
TEST(Conversions, ToDtype) {
  const char* source = R"JIT(
def forward(self, x):
    return x.to(7), x.to(6), x.to(4), x.to(6, copy=True)
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3}) * 10}},
                            {{torch::randn({4, 3}).t()}},
                            {{torch::arange(5)}},
                            {{torch::zeros({0, 2}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::to", KernelKind::kOutVariant}});
}

// The JIT returns the input itself for a same-dtype to(); we copy. Later in-place-free ops
// must see equal values either way, including when the result is returned twice.
TEST(Conversions, SameDtypeToReturnsEqualValues) {
  const char* source = R"JIT(
def forward(self, x):
    y = x.to(6)
    return y, y + x, x
)JIT";
  expectMatchesJit(source, {{{torch::randn({3})}}, {{torch::randn({2, 2})}}});
}

// to.prim_dtype (to(self, int? dtype, non_blocking, copy)): a None dtype keeps the input's.
TEST(Conversions, ToPrimDtype) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %float64 : int = prim::Constant[value=7]()
  %false : bool = prim::Constant[value=0]()
  %same : Tensor = aten::to(%x, %none, %false, %false)
  %wide : Tensor = aten::to(%x, %float64, %false, %false)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%same, %wide)
  return (%r))IR",
                      graph.get());
  StaticModule module(graph);
  EXPECT_EQ(kernelKinds(module).at("aten::to"), std::set<KernelKind>{KernelKind::kOutVariant});
  for (auto x : {torch::randn({2, 3}), torch::arange(4), torch::randn({3, 2}).t()}) {
    auto result = module({x}).toTupleRef().elements();
    EXPECT_TRUE(torch::equal(result[0].toTensor(), x));
    EXPECT_TRUE(torch::equal(result[1].toTensor(), x.to(torch::kFloat64)));
  }
}

TEST(Conversions, ToOtherAndTypeAs) {
  const char* source = R"JIT(
def forward(self, x, other):
    return x.to(other), x.type_as(other), other.type_as(x) * 2
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3}), torch::arange(2)}},
                    {{torch::arange(6).view({2, 3}).t(), torch::randn({1}, torch::kFloat64)}},
                    {{torch::randn({0}), torch::randn({3})}}});
  expectKinds(source,
              {{"aten::to", KernelKind::kOutVariant}, {"aten::type_as", KernelKind::kOutVariant}});
}

TEST(Conversions, CloneAndContiguous) {
  const char* source = R"JIT(
def forward(self, x):
    a = x.clone()
    b = torch.clone(x, memory_format=0)
    c = x.contiguous()
    return a, b, c, c.view(-1)
)JIT";
  expectMatchesJit(source, {{{torch::randn({4, 3}).t()}},
                            {{torch::randn({2, 5})}},
                            {{torch::arange(6).view({3, 2}).t()}},
                            {{torch::zeros({0, 4}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::clone", KernelKind::kOutVariant},
                       {"aten::contiguous", KernelKind::kOutVariant}});
}

// channels_last and channels_last_3d (what passes/channels_last.cpp inserts before 2-D and 3-D
// convolutions) copy into the node's own tensor with NHWC / NDHWC strides.
TEST(Conversions, ChannelsLast) {
  const char* source = R"JIT(
def forward(self, x):
    return x.contiguous(memory_format=2), x.clone(memory_format=2), x.to(7, memory_format=2)
)JIT";
  expectKinds(source, {{"aten::contiguous", KernelKind::kOutVariant},
                       {"aten::clone", KernelKind::kOutVariant},
                       {"aten::to", KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({1, 3, 2, 2})}}, {{torch::randn({2, 2, 3, 1})}}});
  StaticModule module(scriptModule(source));
  const c10::IValue outputs = module({torch::randn({2, 3, 4, 5})});
  for (const c10::IValue& output : outputs.toTupleRef().elements()) {
    EXPECT_TRUE(output.toTensor().is_contiguous(at::MemoryFormat::ChannelsLast));
  }
}

// Images of 2-4 channels (RGB inputs) take an interleaving copy: the same bytes as ATen's, for
// one and several images, odd sizes, run after run; 5 channels and a float64 image ATen's copy.
TEST(Conversions, FewChannelImagesToChannelsLast) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return x.contiguous(memory_format=2)
)JIT"));
  for (const auto& x : {torch::randn({1, 3, 224, 224}), torch::randn({2, 3, 5, 7}),
                        torch::randn({3, 2, 1, 9}), torch::randn({1, 4, 6, 6}),
                        torch::randn({1, 5, 3, 3}), torch::randn({2, 3, 4, 4}, torch::kFloat64)}) {
    for (int run = 0; run < 2; ++run) {
      const at::Tensor y = module({x}).toTensor();
      EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast)) << x.sizes();
      EXPECT_TRUE(torch::equal(y, x)) << x.sizes();
    }
  }
}

// The interleaving copy split over two threads, the runtime's own and OpenMP's: ranges that start
// and end inside an image, and that cross from one image to the next.
TEST(Conversions, FewChannelImagesToChannelsLastOnTwoThreads) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return x.contiguous(memory_format=2)
)JIT"));
  for (const IntraOpWorkers workers : {IntraOpWorkers::kOwn, IntraOpWorkers::kOpenMp}) {
    RuntimeOptions options;
    options.intra_op_threads = 2;
    options.workers = workers;
    StaticRuntime runtime(module, options);
    for (const auto& x : {torch::randn({1, 3, 224, 224}), torch::randn({3, 3, 97, 101}),
                          torch::randn({2, 4, 130, 129})}) {
      for (int run = 0; run < 2; ++run) {
        const at::Tensor y = runtime({x}).toTensor();
        EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast)) << x.sizes();
        EXPECT_TRUE(torch::equal(y, x)) << x.sizes();
      }
    }
  }
}

// Many channels between channels last (or a 1-D convolution's [N, C, L] with channel stride 1)
// and contiguous take the tiled transpose (ops/shapes/transpose_copy.h): the same values as ATen's
// copy, both ways, sizes that are and are not multiples of its tiles, size-1 dims, one and two
// threads;
// what is neither layout ATen's copy.
TEST(Conversions, ManyChannelsTransposeBetweenLayouts) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return x.contiguous(), x.contiguous(memory_format=2) if x.dim() == 4 else x.clone()
)JIT"));
  const std::vector<at::Tensor> inputs = {
      torch::randn({1, 512, 1, 77}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({3, 40, 33, 7}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({2, 70, 5, 9}),
      torch::randn({1, 45, 1, 1}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({2, 300, 48}).transpose(1, 2),
      torch::randn({1, 37, 3, 50}).transpose(1, 3), // [1, 50, 3, 37]: neither layout
      torch::randn({4, 1, 6, 5}).contiguous(at::MemoryFormat::ChannelsLast),
      // Whole 16 x 16 tiles only (transposed in registers on AVX-512), and enough of them to
      // split over the threads.
      torch::randn({1, 64, 16, 16}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({2, 48, 40, 40})};
  for (const IntraOpWorkers workers : {IntraOpWorkers::kOwn, IntraOpWorkers::kOpenMp}) {
    RuntimeOptions options;
    options.intra_op_threads = 2;
    options.workers = workers;
    StaticRuntime runtime(module, options);
    for (const at::Tensor& x : inputs) {
      for (int run = 0; run < 2; ++run) {
        const auto outputs = runtime({x}).toTupleRef().elements();
        const at::Tensor plain = outputs[0].toTensor();
        EXPECT_TRUE(plain.is_contiguous()) << x.sizes();
        EXPECT_TRUE(torch::equal(plain, x)) << x.sizes() << " " << x.strides();
        EXPECT_TRUE(torch::equal(outputs[1].toTensor(), x)) << x.sizes() << " " << x.strides();
      }
    }
  }
}

TEST(Conversions, ChannelsLast3d) {
  const char* source = R"JIT(
def forward(self, x):
    return x.contiguous(memory_format=3)
)JIT";
  expectKinds(source, {{"aten::contiguous", KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({1, 3, 2, 4, 5})}}, {{torch::randn({2, 2, 3, 1, 3})}}});
  StaticModule module(scriptModule(source));
  for (int run = 0; run < 2; ++run) {
    const at::Tensor x = torch::randn({2, 3, 4, 5, 6});
    const at::Tensor y = module({x}).toTensor();
    EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast3d));
    EXPECT_TRUE(torch::equal(y, x));
  }
  EXPECT_THROW(module({torch::randn({2, 3, 4, 5})}), c10::Error); // 4-D, as ATen refuses it
}

// memory_format=preserve (the default of to, type_as and clone) keeps a dense input's strides, as
// the JIT does: a transposed bfloat16 operand must reach a later matmul transposed, or ATen's
// bfloat16 GEMM rounds differently. A non-dense input gets its suggested layout, also as the JIT.
// Run twice per layout, so the second run restrides the reused output.
TEST(Conversions, PreserveKeepsTheJitsStrides) {
  const char* source = R"JIT(
def forward(self, x):
    return x.to(7), x.to(6, copy=True), x.clone(), x.type_as(x.to(7)), x.contiguous()
)JIT";
  expectKinds(source, {{"aten::to", KernelKind::kOutVariant},
                       {"aten::clone", KernelKind::kOutVariant},
                       {"aten::type_as", KernelKind::kOutVariant}});
  torch::jit::Module jit = scriptModule(source);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const std::vector<torch::Tensor> layouts = {
      torch::randn({4, 3}).t(), torch::randn({2, 3, 4}).permute({2, 0, 1}),
      torch::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast),
      torch::randn({6, 4}).slice(0, 0, 6, 2), // not dense
      torch::randn({3, 5})};
  for (const torch::Tensor& x : layouts) {
    for (int run = 0; run < 2; ++run) {
      auto expected = jit.forward({x}).toTupleRef().elements();
      auto actual = runtime({x}).toTupleRef().elements();
      ASSERT_EQ(expected.size(), actual.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        const at::Tensor& want = expected[i].toTensor();
        const at::Tensor& got = actual[i].toTensor();
        EXPECT_EQ(want.strides(), got.strides())
            << "output " << i << ", input strides " << x.strides();
        EXPECT_TRUE(torch::equal(want, got)) << "output " << i;
      }
    }
  }
}

// The output of an out-variant conversion that is not returned is reused from run to run.
TEST(Conversions, IntermediateOutputIsReused) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    y = x.to(7)
    return y.sum()
)JIT"));
  StaticRuntime runtime(module);
  for (int i = 0; i < 3; ++i) {
    auto x = torch::randn({8});
    EXPECT_TRUE(torch::allclose(runtime({x}).toTensor(), x.to(torch::kFloat64).sum()));
  }
}

// to(device, dtype) on the CPU (Emformer's `torch.empty(0).to(dtype=x.dtype, device=x.device)`)
// copies like to(dtype); cpu() and as_tensor(t) hand a CPU tensor of the wanted dtype on
// (ops/shapes/aliasing_conversions.cpp), and prim::type names the device's type.
TEST(Conversions, ToDeviceCpuAndAsTensor) {
  const char* source = R"JIT(
def forward(self, x, y):
    a = x.to(y.device, 7)
    b = (x * 2.0).to(device=y.device)
    c = (x + 1.0).cpu()
    d = torch.as_tensor(x + 2.0, dtype=y.dtype, device=y.device)
    e = torch.as_tensor(x * 3.0)
    f = torch.empty([0]).to(dtype=y.dtype, device=y.device)
    return a, b, c, d, e, f, y.device.type == "cpu"
)JIT";
  expectKinds(source, {{"aten::to", KernelKind::kOutVariant},
                       {"aten::cpu", KernelKind::kNative},
                       {"aten::as_tensor", KernelKind::kNative},
                       {"prim::type", KernelKind::kNative}});
  expectMatchesJit(source, {{{torch::randn({2, 3}), torch::randn({1}, torch::kDouble)}},
                            {{torch::randn({4}), torch::randn({2})}},
                            {{torch::randn({3, 2}).t(), torch::randint(0, 3, {1})}}});
}

} // namespace
} // namespace srt::testing
