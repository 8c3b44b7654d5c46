// Native scalar kernels (ops/containers/scalar_ops.cpp): sizes, int/float arithmetic and
// comparisons, casts, identity checks, against the JIT.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

TEST(Scalars, SizesAndIntArithmetic) {
  const char* source = R"JIT(
def forward(self, x):
    n = x.size(0)
    m = x.size(-1)
    k = x.numel()
    d = x.dim()
    s = x.size()
    return (n + m, n - m, n * m, k // (m + 1), (-7) // (m + 1), (-7) % (m + 1), k / (m + 1), -n,
            n == m, n != m, n < m, n <= m, n > m, n >= m, d, s, min(n, m), max(n, m))
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3, 4})}},
                            {{torch::randn({5, 5})}},
                            {{torch::zeros({0, 1})}},
                            {{torch::randn({4, 3}).t()}}});
  expectKinds(source, {{"aten::size", KernelKind::kNative},
                       {"aten::numel", KernelKind::kNative},
                       {"aten::dim", KernelKind::kNative},
                       {"aten::add", KernelKind::kNative},
                       {"aten::sub", KernelKind::kNative},
                       {"aten::mul", KernelKind::kNative},
                       {"aten::floordiv", KernelKind::kNative},
                       {"aten::remainder", KernelKind::kNative},
                       {"aten::div", KernelKind::kNative},
                       {"aten::neg", KernelKind::kNative},
                       {"aten::eq", KernelKind::kNative},
                       {"aten::ne", KernelKind::kNative},
                       {"aten::lt", KernelKind::kNative},
                       {"aten::le", KernelKind::kNative},
                       {"aten::gt", KernelKind::kNative},
                       {"aten::ge", KernelKind::kNative},
                       {"prim::min", KernelKind::kNative},
                       {"prim::max", KernelKind::kNative}});
}

TEST(Scalars, FloatArithmeticAndComparisons) {
  const char* source = R"JIT(
def forward(self, a: float, b: float, i: int):
    return (a + b, a - b, a * b, a / b, a // b, -a, a == b, a != b, a < b, a <= b, a > b, a >= b,
            torch.sqrt(b * b), torch.sqrt(i), i / (i + 1), float(i), int(a), bool(i), bool(a),
            max(a, b), min(a, b), max(i, a), min(a, i))
)JIT";
  expectMatchesJit(
      source, {{{2.5, -1.5, int64_t{4}}}, {{-7.25, 2.0, int64_t{9}}}, {{0.0, 3.0, int64_t{0}}}});
  expectKinds(source, {{"aten::add", KernelKind::kNative},
                       {"aten::floordiv", KernelKind::kNative},
                       {"aten::sqrt", KernelKind::kNative},
                       {"aten::Float", KernelKind::kNative},
                       {"aten::Int", KernelKind::kNative},
                       {"aten::Bool", KernelKind::kNative},
                       {"prim::max", KernelKind::kNative},
                       {"prim::min", KernelKind::kNative}});
}

TEST(Scalars, IntegerDivisionByZeroIsAnError) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, a: int, b: int):
    return a // b
)JIT"));
  EXPECT_EQ(module({int64_t{-7}, int64_t{2}}).toInt(), -4);
  EXPECT_THROW(module({int64_t{1}, int64_t{0}}), c10::Error);
  EXPECT_EQ(module({int64_t{7}, int64_t{-2}}).toInt(), -4); // the runtime is usable after an error
}

TEST(Scalars, TensorToNumberCasts) {
  const char* source = R"JIT(
def forward(self, x, i):
    return int(i.sum()), float(x.sum()), bool(x.abs().sum() > 0), int(x.max()), float(i[0])
)JIT";
  expectMatchesJit(source, {{{torch::randn({3}), torch::arange(4)}},
                            {{torch::randn({2, 2}, torch::kFloat64), torch::arange(1, 3)}}});
  expectKinds(source, {{"aten::Int", KernelKind::kNative},
                       {"aten::Float", KernelKind::kNative},
                       {"aten::Bool", KernelKind::kNative}});
}

TEST(Scalars, Item) {
  const char* source = R"JIT(
def forward(self, x, i):
    return x.sum().item(), i.max().item(), (x.sum() > 0).item()
)JIT";
  expectMatchesJit(source, {{{torch::randn({3}), torch::arange(4)}},
                            {{torch::randn({2, 2}, torch::kFloat64), torch::tensor({-3})}}});
  expectKinds(source, {{"aten::item", KernelKind::kNative}});
}

// prim::NumToTensor comes from traced models; the IR is written out here.
TEST(Scalars, NumToTensor) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %t : Tensor = prim::NumToTensor(%n)
  %flag : bool = prim::Constant[value=1]()
  %b : Tensor = prim::NumToTensor(%flag)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%t, %b)
  return (%r))IR",
                      graph.get());
  StaticModule module(graph);
  EXPECT_EQ(module.stats().fallback_nodes, 0u);
  for (int64_t rows : {3, 0, 7}) {
    auto result = module({torch::zeros({rows, 2})}).toTupleRef().elements();
    EXPECT_TRUE(torch::equal(result[0].toTensor(), torch::scalar_tensor(rows, torch::kLong)));
    EXPECT_EQ(result[0].toTensor().dim(), 0);
    EXPECT_TRUE(torch::equal(result[1].toTensor(), torch::scalar_tensor(true, torch::kBool)));
  }
}

TEST(Scalars, ScalarCastsAndBoolOps) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%f : float, %i : int, %a : bool, %b : bool):
  %fi : int = aten::Int(%f)
  %ii : int = aten::Int(%i)
  %fl : float = aten::Float(%i)
  %both : bool = aten::__and__(%a, %b)
  %either : bool = aten::__or__(%a, %b)
  %eq : bool = aten::eq(%a, %b)
  %ne : bool = aten::ne(%a, %b)
  %r : (int, int, float, bool, bool, bool, bool) = prim::TupleConstruct(%fi, %ii, %fl, %both, %either, %eq, %ne)
  return (%r))IR",
                      graph.get());
  StaticModule module(graph);
  EXPECT_EQ(module.stats().fallback_nodes, 0u);
  auto result = module({-2.75, int64_t{7}, true, false}).toTupleRef().elements();
  EXPECT_EQ(result[0].toInt(), -2);
  EXPECT_EQ(result[1].toInt(), 7);
  EXPECT_EQ(result[2].toDouble(), 7.0);
  EXPECT_FALSE(result[3].toBool());
  EXPECT_TRUE(result[4].toBool());
  EXPECT_FALSE(result[5].toBool());
  EXPECT_TRUE(result[6].toBool());
}

TEST(Scalars, OptionalChecksAndTensorMetadata) {
  const char* source = R"JIT(
def forward(self, x, y: Optional[Tensor] = None):
    if y is not None:
        x = x + y
    none_given = y is None
    floating = x.is_floating_point()
    is_float = x.dtype == 6
    on_cpu = x.device == torch.device("cpu")
    return x, none_given, floating, is_float, on_cpu, x.is_cuda, x.requires_grad, not floating
)JIT";
  expectMatchesJit(source,
                   {{{torch::randn({2, 3})}},
                    {{torch::randn({2, 3}), torch::randn({3})}},
                    {{torch::arange(3)}},
                    {{torch::randn({1}, torch::kFloat64), torch::randn({1}, torch::kFloat64)}}});
  expectKinds(source, {{"aten::__isnot__", KernelKind::kNative},
                       {"aten::__is__", KernelKind::kNative},
                       {"aten::__not__", KernelKind::kNative},
                       {"prim::unchecked_cast", KernelKind::kNative},
                       {"aten::is_floating_point", KernelKind::kNative},
                       {"prim::dtype", KernelKind::kNative},
                       {"prim::device", KernelKind::kNative},
                       {"prim::is_cuda", KernelKind::kNative},
                       {"prim::requires_grad", KernelKind::kNative}});
}

// An early return inside a loop leaves the not-yet-computed result prim::Uninitialized.
TEST(Scalars, UninitializedFromEarlyReturn) {
  const char* source = R"JIT(
def forward(self, x, n: int):
    for i in range(n):
        if i * 2 > x.size(0):
            return x * i
    return x
)JIT";
  expectMatchesJit(source, {{{torch::randn({3}), int64_t{5}}}, {{torch::randn({8}), int64_t{2}}}});
  StaticModule module(scriptModule(source));
  const auto kinds = kernelKinds(module);
  ASSERT_TRUE(kinds.count("prim::Uninitialized"));
  EXPECT_EQ(kinds.at("prim::Uninitialized"), std::set<KernelKind>{KernelKind::kNative});
}

TEST(Scalars, GradAndAutocastQueries) {
  const char* source = R"JIT(
def forward(self, x):
    return torch.is_grad_enabled(), torch.is_autocast_enabled(), x.size(0)
)JIT";
  expectMatchesJit(source, {{{torch::randn({2})}}, {{torch::randn({3})}}});
  expectKinds(source, {{"aten::is_grad_enabled", KernelKind::kNative},
                       {"aten::is_autocast_enabled", KernelKind::kNative}});
}

// `**` on numbers and math.ceil / math.floor of them (torch.ceil in TorchScript) (Swin's and
// Emformer's size arithmetic).
TEST(Scalars, PowersCeilAndFloor) {
  const char* source = R"JIT(
def forward(self, x, a: float):
    n = x.size(0)
    m = x.size(-1)
    return (a ** 2, a ** 0.5 if a >= 0 else a ** 3, n ** m, n ** 0.5, 2.0 ** n,
            torch.ceil(a), torch.floor(a), torch.ceil(n / (m + 1)), torch.floor(-n / (m + 1)))
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3}), 2.5}},
                            {{torch::randn({5, 1}), -1.25}},
                            {{torch::randn({0, 4}), 0.0}}});
  expectKinds(source, {{"aten::pow", KernelKind::kNative},
                       {"aten::ceil", KernelKind::kNative},
                       {"aten::floor", KernelKind::kNative}});
}

TEST(Scalars, ZeroToANegativePowerIsAClearError) {
  StaticModule module(scriptModule("def forward(self, a: float):\n    return a ** -1\n"));
  StaticRuntime runtime(module);
  EXPECT_THROW(static_cast<void>(runtime({0.0})), c10::Error);
  EXPECT_EQ(runtime({2.0}).toDouble(), 0.5);
}

} // namespace
} // namespace srt::testing
