// Out-variant zeros / ones / full / eye / linspace with run-time sizes and the *_like forms
// (ops/creation/filled_tensors.cpp, arange.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// Dtypes spelled as enum values (float64 7, int32 3, bool 11); full's dtype otherwise follows
// its fill value (int -> int64, float -> the default dtype).
const char* const kFilled = R"JIT(
def forward(self, x, fill: float, count: int):
    n = x.size(0)
    return (torch.zeros(n, 3), torch.zeros([n, count], dtype=7), torch.ones(count),
            torch.ones([n], dtype=11), torch.full([n, 2], fill), torch.full([count], 4),
            torch.full([2, n], count, dtype=3), x + torch.zeros(x.size()))
)JIT";

TEST(FilledTensors, MatchTheJitForRunTimeSizesAndDtypes) {
  expectMatchesJit(kFilled, {{{torch::randn({4, 2}), 1.5, 3}},
                             {{torch::randn({1, 5}), -2.0, 0}},
                             {{torch::randn({0, 1}), 0.25, 2}}});
  expectKinds(kFilled, {{"aten::zeros", KernelKind::kOutVariant},
                        {"aten::ones", KernelKind::kOutVariant},
                        {"aten::full", KernelKind::kOutVariant}});
}

// Identity matrices and evenly spaced values of a run-time size, with and without a dtype;
// ATen's errors for negative sizes, the runtime working on after them.
TEST(FilledTensors, EyeAndLinspaceOfRunTimeSizes) {
  const char* source = R"JIT(
def forward(self, x, count: int):
    n = x.size(-1)
    return (torch.eye(n), torch.eye(n, count, dtype=4), x @ torch.eye(n),
            torch.linspace(0, 1, count), torch.linspace(-2.5, n, n, dtype=7),
            torch.linspace(3, 0, count, dtype=3))
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3}), int64_t{4}}},
                            {{torch::randn({1, 1}), int64_t{1}}},
                            {{torch::randn({3, 5}), int64_t{0}}}});
  expectKinds(source, {{"aten::eye", KernelKind::kOutVariant},
                       {"aten::linspace", KernelKind::kOutVariant}});
  StaticModule module(scriptModule(source));
  try {
    static_cast<void>(module({torch::randn({2, 3}), int64_t{-1}}));
    ADD_FAILURE() << "a negative size ran";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find("0, got -1"), std::string::npos) << error.what();
  }
  EXPECT_EQ(
      module({torch::randn({2, 3}), int64_t{2}}).toTupleRef().elements()[3].toTensor().numel(), 2);
}

// dtype and device arguments of run-time value (nn.LSTM's initial state, torchaudio's
// `torch.zeros(..., device=x.device, dtype=x.dtype)`) are read per run.
TEST(FilledTensors, RunTimeDtypeAndDeviceArgumentsAreOutVariants) {
  const char* source = R"JIT(
def forward(self, x):
    n = x.size(0)
    return (torch.zeros(n, 2, device=x.device, dtype=x.dtype),
            torch.ones([n], dtype=x.dtype, layout=0, pin_memory=False),
            torch.full([2, n], 3, device=x.device))
)JIT";
  expectKinds(source, {{"aten::zeros", KernelKind::kOutVariant},
                       {"aten::ones", KernelKind::kOutVariant},
                       {"aten::full", KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({3})}},
                            {{torch::randn({1}, torch::kDouble)}},
                            {{torch::randint(0, 5, {4})}}});
}

// rand / randn / randint and their *_like forms (torchaudio's masking, a VAE's sampling) draw
// what the JIT draws from the same seed, with their dtypes and run-time sizes; a second run draws
// anew (nothing folded or kept); ATen's error for an empty range, the runtime working on after it.
TEST(FilledTensors, RandomTensorsDrawWhatTheJitDraws) {
  const char* source = R"JIT(
def forward(self, x, high: int):
    n = x.size(0)
    return (torch.rand(n, 3), torch.randn([2, n], dtype=7), torch.rand_like(x),
            torch.randn_like(x, dtype=7), torch.randint(high, [n, 2]),
            torch.randint(-3, high, [n], dtype=3), torch.randint_like(x, high),
            torch.randint_like(x, 1, high), x * torch.rand(1))
)JIT";
  expectKinds(source, {{"aten::rand", KernelKind::kOutVariant},
                       {"aten::randn", KernelKind::kOutVariant},
                       {"aten::rand_like", KernelKind::kOutVariant},
                       {"aten::randn_like", KernelKind::kOutVariant},
                       {"aten::randint", KernelKind::kOutVariant},
                       {"aten::randint_like", KernelKind::kOutVariant}});
  torch::jit::Module module = scriptModule(source);
  StaticModule ours(module);
  const std::vector<std::vector<c10::IValue>> input_sets = {{torch::randn({4, 2}), int64_t{7}},
                                                            {torch::randn({1, 5}).t(), int64_t{2}}};
  for (size_t set = 0; set < input_sets.size(); ++set) {
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE("input set " + std::to_string(set) + ", run " + std::to_string(run));
      torch::manual_seed(run);
      const auto expected = module.forward(input_sets[set]).toTupleRef().elements().vec();
      torch::manual_seed(run);
      const auto actual = ours(input_sets[set]).toTupleRef().elements().vec();
      const auto again = ours(input_sets[set]).toTupleRef().elements().vec();
      ASSERT_EQ(expected.size(), actual.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        const at::Tensor& want = expected[i].toTensor();
        const at::Tensor& got = actual[i].toTensor();
        EXPECT_EQ(want.scalar_type(), got.scalar_type()) << "output " << i;
        EXPECT_EQ(want.strides(), got.strides()) << "output " << i;
        EXPECT_TRUE(torch::equal(want, got)) << "output " << i;
        // rand and randn (randint_like of a float tensor is float too, but may repeat).
        if (want.is_floating_point() && !torch::equal(got, got.round())) {
          EXPECT_FALSE(torch::equal(got, again[i].toTensor())) << "output " << i << " drawn once";
        }
      }
    }
  }
  try {
    static_cast<void>(ours({torch::randn({2, 2}), int64_t{-3}}));
    ADD_FAILURE() << "an empty range drew";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find("random_ expects 'from' to be less than 'to'"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(ours({torch::randn({3, 2}), int64_t{5}})
                    .toTupleRef()
                    .elements()[4]
                    .toTensor()
                    .max()
                    .item<int64_t>() < 5,
            true);
}

// x.new_zeros / new_ones / new_full take x's dtype unless told otherwise (Swin's attention mask).
TEST(FilledTensors, NewFilledTensorsMatchTheJit) {
  const char* source = R"JIT(
def forward(self, x, fill: float):
    n = x.size(0)
    return (x.new_zeros((n, 3)), x.new_ones([2, n], dtype=7), x.new_full([n], fill),
            x.new_zeros([n, n], device=x.device), x.new_empty([n, 2]).shape)
)JIT";
  expectKinds(source, {{"aten::new_zeros", KernelKind::kOutVariant},
                       {"aten::new_ones", KernelKind::kOutVariant},
                       {"aten::new_full", KernelKind::kOutVariant},
                       {"aten::new_empty", KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({4, 2}), 1.5}},
                            {{torch::randn({2}, torch::kDouble), -2.0}},
                            {{torch::randint(0, 5, {3}), 0.5}},
                            {{torch::randn({0, 1}), 0.25}}});
}

// torch.empty: only its shape and dtype are defined.
TEST(FilledTensors, EmptyHasTheJitsShapeAndDtype) {
  const char* source = R"JIT(
def forward(self, x):
    e = torch.empty([x.size(0), 3], dtype=x.dtype)
    return e.shape, e.dtype
)JIT";
  expectKinds(source, {{"aten::empty", KernelKind::kOutVariant}});
  expectMatchesJit(source, {{{torch::randn({4})}}, {{torch::randn({2}, torch::kDouble)}}});
}

// A negative size is refused with ATen's message, and the runtime keeps working.
TEST(FilledTensors, NegativeSizeIsAClearErrorAndTheRuntimeRecovers) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, n: int):
    return torch.ones(n, 2)
)JIT"));
  StaticRuntime runtime(module);
  EXPECT_TRUE(torch::equal(runtime({3}).toTensor(), torch::ones({3, 2})));
  try {
    static_cast<void>(runtime({-1}));
    ADD_FAILURE() << "a negative size ran";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find("negative dimension -1"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(torch::equal(runtime({2}).toTensor(), torch::ones({2, 2})));
}

// *_like: self's sizes and layout (channels-last stays), self's dtype unless one is given, the
// fill value's kind not deciding it; empty_like's sizes and dtype (its bytes are undefined).
TEST(FilledTensors, LikeFormsWithAndWithoutDtype) {
  const char* source = R"JIT(
def forward(self, x):
    return (torch.zeros_like(x), torch.zeros_like(x, dtype=7), torch.ones_like(x),
            torch.full_like(x, -3), torch.full_like(x, 2.5, dtype=7), torch.empty_like(x).size())
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3})}},
                    {{torch::randint(0, 5, {4})}},
                    {{torch::randn({0, 2})}},
                    {{torch::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast)}}});
  StaticModule module(scriptModule(source));
  for (const char* op :
       {"aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like"}) {
    EXPECT_EQ(kernelKinds(module).at(op), std::set<KernelKind>{KernelKind::kOutVariant}) << op;
  }
  const at::Tensor image = torch::randn({1, 3, 2, 2}).contiguous(at::MemoryFormat::ChannelsLast);
  for (int call = 0; call < 2; ++call) {
    const auto outputs = module({image}).toTupleRef().elements();
    EXPECT_EQ(outputs[3].toTensor().strides(), torch::full_like(image, -3).strides());
    EXPECT_EQ(outputs[3].toTensor().scalar_type(), at::kFloat);
  }
}

// memory_format=torch.contiguous_format (which torch.legacy_contiguous_format also is: the
// invert_permutation of nn.utils.rnn) makes a contiguous tensor whatever self's layout.
TEST(FilledTensors, LikeFormsInTheContiguousFormat) {
  const char* source = R"JIT(
def forward(self, x):
    return torch.zeros_like(x, memory_format=0), torch.full_like(x, 2.0, memory_format=0), torch.empty_like(x, memory_format=0).stride()
)JIT";
  const at::Tensor transposed = torch::randn({3, 4}).t();
  expectMatchesJit(
      source,
      {{{transposed}}, {{torch::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast)}}});
  StaticModule module(scriptModule(source));
  for (const char* op : {"aten::zeros_like", "aten::full_like", "aten::empty_like"}) {
    EXPECT_EQ(kernelKinds(module).at(op), std::set<KernelKind>{KernelKind::kOutVariant}) << op;
  }
  for (int call = 0; call < 2; ++call) {
    const auto outputs = module({transposed}).toTupleRef().elements();
    EXPECT_TRUE(outputs[0].toTensor().is_contiguous());
    EXPECT_TRUE(outputs[1].toTensor().is_contiguous());
  }
}

// A device, layout or another memory format is not this runtime's to make: the JIT operator runs
// it.
// A device argument (a constant, or x.device as torchvision's detection heads pass it) is read per
// run; another memory format still falls back.
TEST(FilledTensors, LikeFormsWithADeviceRunAnotherFormatFallsBack) {
  const char* source = R"JIT(
def forward(self, x):
    return (torch.zeros_like(x, device=torch.device("cpu")), torch.ones_like(x, memory_format=2),
            torch.full_like(x, 7, dtype=4, device=x.device))
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3, 1, 1})}}, {{torch::randn({1, 3, 2, 2})}}});
  StaticModule module(scriptModule(source));
  EXPECT_EQ(module.stats().fallback_ops.count("aten::zeros_like"), 0u);
  EXPECT_EQ(module.stats().fallback_ops.count("aten::full_like"), 0u);
  EXPECT_EQ(module.stats().fallback_ops.at("aten::ones_like"), 1u);
}

// A traced graph passes every placement argument (`zeros_like(x, 6, 0, "cpu", False, None)`):
// the default ones run the out variant; a pinned result is ATen's fresh tensor, as the JIT's.
TEST(FilledTensors, LikeFormsWithEveryPlacementArgumentAsATraceWritesThem) {
  const char* source = R"JIT(
def forward(self, x):
    return (torch.zeros_like(x, dtype=6, layout=0, device=torch.device("cpu"), pin_memory=False),
            torch.full_like(x, 2.0, dtype=7, layout=0, device=torch.device("cpu"), pin_memory=False, memory_format=0))
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3})}},
                    {{torch::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast)}}});
  StaticModule module(scriptModule(source));
  EXPECT_TRUE(module.stats().fallback_ops.empty());
  for (const char* op : {"aten::zeros_like", "aten::full_like"}) {
    EXPECT_EQ(kernelKinds(module).at(op), std::set<KernelKind>{KernelKind::kOutVariant}) << op;
  }
}

} // namespace
} // namespace srt::testing
