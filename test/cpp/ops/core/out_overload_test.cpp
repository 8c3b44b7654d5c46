// The out-overload tier (ops/core/out_overload.cpp): ATen ops no factory takes but that have an
// `out=` overload run as out-variant kernels, with the functional op's values and dtypes, over
// shape and dtype changes, results the caller keeps, several results and every option set.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

// Activations, rounding, reductions with dims and dtypes, and rearrangements that have no kernel
// of their own: all by the out overload.
constexpr const char* kUnaryAndReductions = R"JIT(
def forward(self, x):
    a = torch.elu(x, 0.7) + torch.softplus(x, 2.0, 10.0)
    b = torch.mish(x) * torch.erf(x) + torch.sign(x) + torch.floor(x * 3.0)
    c = torch.std(x, [1], True, True) + torch.logsumexp(x, [-1], True)
    d = torch.prod(x, -1, False, dtype=7)  # float64
    e = torch.cumprod(x, 1)
    return a, b, c, d, e
)JIT";

TEST(OutOverload, UnaryOpsAndReductionsMatchJit) {
  expectMatchesJit(kUnaryAndReductions, {{{torch::randn({2, 5, 7})}},
                                         {{torch::randn({3, 4, 9})}},
                                         {{torch::randn({4, 7, 2}).transpose(1, 2)}}});
  StaticModule module(scriptModule(kUnaryAndReductions));
  const auto kinds = kernelKinds(module);
  for (const char* op :
       {"aten::elu", "aten::softplus", "aten::mish", "aten::erf", "aten::sign", "aten::floor",
        "aten::std", "aten::logsumexp", "aten::prod", "aten::cumprod"}) {
    ASSERT_TRUE(kinds.count(op)) << op << " not in\n" << module.graph();
    EXPECT_EQ(kinds.at(op), std::set<KernelKind>{KernelKind::kOutVariant}) << op;
  }
  EXPECT_EQ(module.stats().fallback_nodes, 0u) << module.graph();
}

// Two results (values and indices), image rearrangements and upsampling.
constexpr const char* kImageOps = R"JIT(
def forward(self, x):
    pooled, indices = torch.adaptive_max_pool2d(x, [2, 3])
    shuffled = torch.pixel_shuffle(torch.cat([x, x * 2.0], 1), 2)
    unshuffled = torch.pixel_unshuffle(x[:, :, :4, :4], 2)
    linear = torch.upsample_linear1d(x.flatten(2), None, False, [1.5])
    median, where = torch.median(x, -1)
    return pooled, indices, shuffled, unshuffled, linear, median, where
)JIT";

TEST(OutOverload, SeveralResultsAndImageOpsMatchJit) {
  expectMatchesJit(kImageOps, {{{torch::randn({1, 2, 6, 8})}}, {{torch::randn({2, 2, 5, 9})}}});
  StaticModule module(scriptModule(kImageOps));
  const auto kinds = kernelKinds(module);
  for (const char* op : {"aten::adaptive_max_pool2d", "aten::pixel_shuffle",
                         "aten::pixel_unshuffle", "aten::upsample_linear1d", "aten::median"}) {
    ASSERT_TRUE(kinds.count(op)) << op << " not in\n" << module.graph();
    EXPECT_EQ(kinds.at(op), std::set<KernelKind>{KernelKind::kOutVariant}) << op;
  }
}

// The functional op decides the result's dtype: a call whose inputs change dtype (or an int
// scalar turning float) gets the functional op's dtype again, never the last call's.
TEST(OutOverload, ResultDtypesFollowTheInputs) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x, s: float):
    return torch.sign(x), torch.remainder(x, s), torch.square(x)
)JIT"));
  const std::vector<torch::Tensor> inputs = {
      torch::randn({3, 4}), torch::randn({3, 4}, torch::kFloat64),
      torch::randint(-5, 5, {2, 6}, torch::kInt64), torch::randn({5})};
  for (int round = 0; round < 2; ++round) {
    for (const torch::Tensor& x : inputs) {
      const auto result = module({x, 0.75}).toTuple()->elements();
      const std::vector<torch::Tensor> expected = {torch::sign(x), torch::remainder(x, 0.75),
                                                   torch::square(x)};
      for (size_t i = 0; i < expected.size(); ++i) {
        const torch::Tensor actual = result[i].toTensor();
        EXPECT_EQ(actual.scalar_type(), expected[i].scalar_type()) << i << " " << x.scalar_type();
        EXPECT_TRUE(torch::equal(actual, expected[i])) << i << " " << x.scalar_type();
      }
    }
  }
}

// A result the caller holds is never written again; an intermediate's memory is reused.
TEST(OutOverload, ReturnedResultsAreTheCallers) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return torch.celu(torch.erf(x) * 2.0, 0.5)
)JIT"));
  const torch::Tensor first_input = torch::randn({4, 8});
  const torch::Tensor first = module({first_input}).toTensor();
  const torch::Tensor expected = torch::celu(torch::erf(first_input) * 2.0, 0.5);
  for (int call = 0; call < 3; ++call) {
    const torch::Tensor x = torch::randn({4 + call, 8});
    EXPECT_TRUE(torch::allclose(module({x}).toTensor(), torch::celu(torch::erf(x) * 2.0, 0.5)));
  }
  EXPECT_TRUE(torch::equal(first, expected));
}

// An operator's error reaches the caller, and the next call computes right: the kernel's reused
// stack keeps nothing from the failed call.
TEST(OutOverload, ErrorsLeaveTheRuntimeWorking) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x, d: int):
    return torch.logsumexp(torch.erf(x), [d], False)
)JIT"));
  const torch::Tensor x = torch::randn({3, 5});
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(
        torch::allclose(module({x, int64_t{1}}).toTensor(), torch::logsumexp(torch::erf(x), {1})));
    EXPECT_THROW(module({x, int64_t{5}}), c10::Error);
  }
  EXPECT_TRUE(
      torch::allclose(module({x, int64_t{0}}).toTensor(), torch::logsumexp(torch::erf(x), {0})));
}

// With out variants off, the same ops run as the JIT operator.
TEST(OutOverload, DisabledOutVariantsFallBack) {
  StaticModuleOptions options;
  options.enable_out_variant = false;
  options.optimize_memory = false;
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return torch.erf(x)
)JIT"),
                      options);
  EXPECT_EQ(module.stats().fallback_ops.at("aten::erf"), 1u);
}

} // namespace
} // namespace srt::testing
