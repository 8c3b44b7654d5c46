// The float32 fast path on its own: ops/elementwise/vectorized_loops.h against ATen's functions,
// and how out-variant kernels reuse (and must not reuse) their output tensor.
#include <cmath>
#include <limits>
#include <string>
#include <torch/csrc/jit/ir/irparser.h>
#include <utility>
#include <vector>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/worker_pool.h"
#include "ops/elementwise/vectorized_loops.h"
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

using ops::vec::BinaryOp;
using ops::vec::Params;
using ops::vec::UnaryOp;

at::Tensor mapUnary(UnaryOp op, const at::Tensor& x, Params params = {}) {
  at::Tensor out = torch::empty_like(x);
  ops::vec::map(op, x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), params);
  return out;
}

// Lengths that exercise the partial-vector tail, one vector exactly, and the split over threads.
const std::vector<int64_t> kLengths = {1, 7, 16, 19, 100003};

void expectClose(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-6, 1e-6, /*equal_nan=*/true))
      << what << ": max difference " << (actual - expected).abs().nan_to_num(0).max().item<float>();
}

TEST(ElementwiseFastPath, UnaryLoopsMatchAten) {
  const std::vector<std::tuple<std::string, UnaryOp, Params, std::function<at::Tensor(at::Tensor)>>>
      cases = {
          {"relu", UnaryOp::kRelu, {}, [](at::Tensor x) { return torch::relu(x); }},
          {"sigmoid", UnaryOp::kSigmoid, {}, [](at::Tensor x) { return torch::sigmoid(x); }},
          {"tanh", UnaryOp::kTanh, {}, [](at::Tensor x) { return torch::tanh(x); }},
          {"gelu", UnaryOp::kGelu, {}, [](at::Tensor x) { return at::gelu(x); }},
          {"gelu_tanh", UnaryOp::kGeluTanh, {}, [](at::Tensor x) { return at::gelu(x, "tanh"); }},
          {"silu", UnaryOp::kSilu, {}, [](at::Tensor x) { return at::silu(x); }},
          {"hardswish", UnaryOp::kHardswish, {}, [](at::Tensor x) { return at::hardswish(x); }},
          {"hardsigmoid",
           UnaryOp::kHardsigmoid,
           {},
           [](at::Tensor x) { return at::hardsigmoid(x); }},
          {"leaky_relu",
           UnaryOp::kLeakyRelu,
           {0.1f},
           [](at::Tensor x) { return at::leaky_relu(x, 0.1); }},
          {"clamp",
           UnaryOp::kClamp,
           {-0.5f, 0.5f},
           [](at::Tensor x) { return x.clamp(-0.5, 0.5); }},
          {"clamp_min",
           UnaryOp::kClampMin,
           {-0.5f},
           [](at::Tensor x) { return x.clamp_min(-0.5); }},
          {"clamp_max",
           UnaryOp::kClampMax,
           {0.f, 0.5f},
           [](at::Tensor x) { return x.clamp_max(0.5); }},
          {"exp", UnaryOp::kExp, {}, [](at::Tensor x) { return x.exp(); }},
          {"log", UnaryOp::kLog, {}, [](at::Tensor x) { return x.log(); }},
          {"sqrt", UnaryOp::kSqrt, {}, [](at::Tensor x) { return x.sqrt(); }},
          {"rsqrt", UnaryOp::kRsqrt, {}, [](at::Tensor x) { return x.rsqrt(); }},
          {"reciprocal", UnaryOp::kReciprocal, {}, [](at::Tensor x) { return x.reciprocal(); }},
          {"pow2", UnaryOp::kSquare, {}, [](at::Tensor x) { return x.pow(2); }},
          {"pow3", UnaryOp::kCube, {}, [](at::Tensor x) { return x.pow(3); }},
          {"pow-2", UnaryOp::kInverseSquare, {}, [](at::Tensor x) { return x.pow(-2); }},
          {"pow1.7", UnaryOp::kPow, {1.7f}, [](at::Tensor x) { return x.pow(1.7); }},
          {"add_scalar",
           UnaryOp::kAddScalar,
           {0.3f, 2.f},
           [](at::Tensor x) { return x.add(0.3, 2); }},
          {"mul_scalar", UnaryOp::kMulScalar, {1.3f}, [](at::Tensor x) { return x.mul(1.3); }},
          {"div_scalar", UnaryOp::kDivScalar, {1.3f}, [](at::Tensor x) { return x.div(1.3); }},
          {"affine", UnaryOp::kAffine, {1.5f, -0.25f}, [](at::Tensor x) { return x * 1.5 - 0.25; }},
      };
  for (const int64_t n : kLengths) {
    const at::Tensor x = torch::randn({n}) * 3;
    const at::Tensor positive = x.abs() + 0.01;
    for (const auto& [name, op, params, reference] : cases) {
      const bool needs_positive =
          name == "log" || name == "sqrt" || name == "rsqrt" || name == "pow1.7";
      const at::Tensor& input = needs_positive ? positive : x;
      expectClose(mapUnary(op, input, params), reference(input), name + " n=" + std::to_string(n));
    }
  }
}

TEST(ElementwiseFastPath, BinaryLoopsMatchAten) {
  for (const int64_t n : kLengths) {
    const at::Tensor x = torch::randn({n});
    const at::Tensor y = torch::randn({n});
    const at::Tensor positive = x.abs() + 0.01;
    auto run = [&](BinaryOp op, const at::Tensor& a, Params params) {
      at::Tensor out = torch::empty_like(a);
      ops::vec::map(op, a.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n, params);
      return out;
    };
    expectClose(run(BinaryOp::kAdd, x, {1.f}), x + y, "add");
    expectClose(run(BinaryOp::kAdd, x, {-0.3f}), x.sub(y, 0.3), "sub alpha");
    expectClose(run(BinaryOp::kMul, x, {}), x * y, "mul");
    expectClose(run(BinaryOp::kDiv, x, {}), x / y, "div");
    expectClose(run(BinaryOp::kPow, positive, {}), positive.pow(y), "pow");
    at::Tensor out = torch::empty_like(x);
    ops::vec::map(ops::vec::TernaryOp::kMulAdd, x.data_ptr<float>(), y.data_ptr<float>(),
                  positive.data_ptr<float>(), out.data_ptr<float>(), n);
    expectClose(out, x * y + positive, "mul_add");
  }
}

// On the runtime's own workers (two and three threads) the loops split into ranges whose results
// are the whole's, bit for bit, for every arity and for the channel scaling rows.
TEST(ElementwiseFastPath, LoopsOnOwnWorkersAreTheWhole) {
  for (int threads : {2, 3}) {
    ops::WorkerPool workers;
    workers.resize(threads);
    for (const int64_t n : {int64_t{19}, int64_t{100003}, int64_t{1} << 20}) {
      const at::Tensor x = torch::randn({n});
      const at::Tensor y = torch::randn({n});
      at::Tensor whole = torch::empty_like(x);
      at::Tensor split = torch::full_like(x, std::numeric_limits<float>::quiet_NaN());
      ops::vec::map(UnaryOp::kSigmoid, x.data_ptr<float>(), whole.data_ptr<float>(), n);
      ops::vec::map(UnaryOp::kSigmoid, x.data_ptr<float>(), split.data_ptr<float>(), n, {},
                    &workers);
      EXPECT_TRUE(torch::equal(whole, split)) << "sigmoid, " << n << " on " << threads;
      split.fill_(std::numeric_limits<float>::quiet_NaN());
      ops::vec::map(BinaryOp::kMul, x.data_ptr<float>(), y.data_ptr<float>(),
                    split.data_ptr<float>(), n, {}, &workers);
      EXPECT_TRUE(torch::equal(x * y, split)) << "mul, " << n << " on " << threads;
      split.fill_(std::numeric_limits<float>::quiet_NaN());
      ops::vec::map(ops::vec::TernaryOp::kMulAdd, x.data_ptr<float>(), y.data_ptr<float>(),
                    x.data_ptr<float>(), split.data_ptr<float>(), n, &workers);
      ops::vec::map(ops::vec::TernaryOp::kMulAdd, x.data_ptr<float>(), y.data_ptr<float>(),
                    x.data_ptr<float>(), whole.data_ptr<float>(), n);
      EXPECT_TRUE(torch::equal(whole, split)) << "mul_add, " << n << " on " << threads;
    }
    // Blocks of rows, each with its scale row (three images, per-image factors), or sharing
    // scale rows (four blocks of three images, factors shared by the images): split points fall
    // inside blocks.
    const at::Tensor image = torch::randn({3, 1365, 96});
    const at::Tensor scale = torch::randn({3, 1, 96});
    at::Tensor scaled = torch::empty_like(image);
    ops::vec::scaleRows(image.data_ptr<float>(), scale.data_ptr<float>(), 3,
                        scaled.data_ptr<float>(), 3, 1365, 96, &workers);
    EXPECT_TRUE(torch::equal(scaled, image * scale)) << "scale rows on " << threads;
    const at::Tensor blocked = torch::randn({3, 4, 1000, 16});
    const at::Tensor shared = torch::randn({1, 4, 1, 16});
    at::Tensor blocked_scaled = torch::empty_like(blocked);
    ops::vec::scaleRows(blocked.data_ptr<float>(), shared.data_ptr<float>(), 4,
                        blocked_scaled.data_ptr<float>(), 12, 1000, 16, &workers);
    EXPECT_TRUE(torch::equal(blocked_scaled, blocked * shared)) << "shared rows on " << threads;
  }
}

// Dense rows, and rows of a wider stride (attention's score rows, padded to whole cache lines)
// whose padding stays untouched.
TEST(RowKernels, SoftmaxRowsMatchesAten) {
  for (const int64_t n : {1, 7, 16, 33, 300}) {
    for (const int64_t pad : {0, 11}) {
      SCOPED_TRACE(::testing::Message() << n << " floats, " << pad << " of padding");
      at::Tensor x = torch::randn({5, n}) * 4;
      if (n > 1) {
        x[1][0] = -std::numeric_limits<float>::infinity(); // a masked key
      }
      at::Tensor stored = torch::full({5, n + pad}, 7.f);
      stored.slice(1, 0, n).copy_(x);
      ops::vec::softmaxRows(stored.data_ptr<float>(), 5, n, n + pad);
      const at::Tensor rows = stored.slice(1, 0, n);
      EXPECT_TRUE(torch::allclose(rows, torch::softmax(x, -1), 1e-6, 1e-7));
      EXPECT_TRUE(torch::equal(stored.slice(1, n), torch::full({5, pad}, 7.f)));
      if (n > 1) {
        EXPECT_EQ(rows[1][0].item<float>(), 0.f) << "a masked key weighs exactly nothing";
      }
    }
  }
}

TEST(RowKernels, SoftmaxRowsKeepsNanAndWideRanges) {
  // Scores far apart (exp underflows for all but the largest), a NaN, and a fully masked row;
  // twice, so that they go through the loop that takes four rows at once and the single rows'.
  const float inf = std::numeric_limits<float>::infinity();
  const at::Tensor three = torch::tensor({0.f, -50.f, -90.f, -200.f,    //
                                          1.f, std::nanf(""), 2.f, 3.f, //
                                          -inf, -inf, -inf, -inf})
                               .reshape({3, 4});
  const at::Tensor x = torch::cat({three, three});
  at::Tensor rows = x.clone();
  ops::vec::softmaxRows(rows.data_ptr<float>(), 6, 4, 4);
  const at::Tensor expected = torch::softmax(x, -1);
  for (const int64_t first : {0, 3}) {
    // exp(-90) is subnormal: ours flushes it to 0.
    EXPECT_TRUE(torch::allclose(rows[first], expected[first], 1e-6, 1e-37))
        << rows[first] - expected[first];
    EXPECT_TRUE(rows[first + 1].isnan().all().item<bool>()) << rows[first + 1];
    EXPECT_TRUE(rows[first + 2].isnan().all().item<bool>()) << rows[first + 2];
  }
}

// mapFast's sigmoid and silu, which owe ATen no bits: within 2e-7 of ATen's (relative to the
// input's size for silu) over the whole float range, partial vectors included; NaN stays NaN and
// the infinities saturate.
TEST(ElementwiseFastPath, FastSigmoidAndSiluAreCloseToAtens) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const int64_t n : kLengths) {
    at::Tensor x = torch::linspace(-100.f, 100.f, n);
    for (const UnaryOp op : {UnaryOp::kSigmoid, UnaryOp::kSilu}) {
      ASSERT_TRUE(ops::vec::hasFastFormula(op));
      at::Tensor fast = x.clone();
      ops::vec::mapFast(op, fast.data_ptr<float>(), n);
      const at::Tensor expected = op == UnaryOp::kSigmoid ? torch::sigmoid(x) : torch::silu(x);
      const at::Tensor scale = op == UnaryOp::kSigmoid ? torch::ones_like(x) : x.abs() + 1;
      EXPECT_LE(((fast - expected).abs() / scale).max().item<float>(), 2e-7f) << n;
    }
  }
  at::Tensor edges = torch::tensor({std::nanf(""), inf, -inf, 0.f, -88.5f, 88.5f});
  ops::vec::mapFast(UnaryOp::kSigmoid, edges.data_ptr<float>(), edges.numel());
  EXPECT_TRUE(std::isnan(edges[0].item<float>()));
  EXPECT_EQ(edges[1].item<float>(), 1.f);
  EXPECT_LT(edges[2].item<float>(), 1e-37f);
  EXPECT_EQ(edges[3].item<float>(), 0.5f);
  EXPECT_LT(edges[4].item<float>(), 1e-37f);
  EXPECT_EQ(edges[5].item<float>(), 1.f);
}

// mapFast's tanh (2 sigmoid(2x) - 1) and gelu (Abramowitz and Stegun's erf, within 1.5e-7 of
// erf): within 3e-7 of ATen's (relative to the input's size plus one for gelu), partial vectors
// included; the negative tail of gelu stays negative and within 1e-7; NaN stays NaN,
// gelu(inf) = inf.
TEST(ElementwiseFastPath, FastTanhAndGeluAreCloseToAtens) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const int64_t n : kLengths) {
    const at::Tensor x = torch::linspace(-30.f, 30.f, n);
    at::Tensor tanh = x.clone();
    ops::vec::mapFast(UnaryOp::kTanh, tanh.data_ptr<float>(), n);
    EXPECT_LE((tanh - torch::tanh(x)).abs().max().item<float>(), 3e-7f) << n;
    at::Tensor gelu = x.clone();
    ops::vec::mapFast(UnaryOp::kGelu, gelu.data_ptr<float>(), n);
    EXPECT_LE(((gelu - torch::gelu(x)).abs() / (x.abs() + 1)).max().item<float>(), 3e-7f) << n;
  }
  at::Tensor tail = torch::tensor({-5.f, -3.f, -8.f});
  const at::Tensor expected_tail = torch::gelu(tail);
  ops::vec::mapFast(UnaryOp::kGelu, tail.data_ptr<float>(), tail.numel());
  EXPECT_TRUE(torch::allclose(tail, expected_tail, 0.05, 1e-7)) << tail << expected_tail;
  EXPECT_TRUE((tail <= 0).all().item<bool>()) << tail;
  at::Tensor edges = torch::tensor({std::nanf(""), inf, 0.f});
  ops::vec::mapFast(UnaryOp::kGelu, edges.data_ptr<float>(), edges.numel());
  EXPECT_TRUE(std::isnan(edges[0].item<float>()));
  EXPECT_EQ(edges[1].item<float>(), inf);
  EXPECT_EQ(edges[2].item<float>(), 0.f);
}

TEST(RowKernels, DotMatchesAten) {
  for (const int64_t n : {0, 1, 7, 16, 33, 300}) {
    SCOPED_TRACE(n);
    const at::Tensor x = torch::randn({n});
    const at::Tensor y = torch::randn({n});
    const float expected = n == 0 ? 0.f : torch::dot(x, y).item<float>();
    EXPECT_NEAR(ops::vec::dot(x.data_ptr<float>(), y.data_ptr<float>(), n), expected,
                1e-5 * (1 + std::abs(expected)));
  }
}

TEST(RowKernels, RowTimesMatrixMatchesAten) {
  for (const auto& [k, n] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {7, 3}, {51, 1}, {64, 128}, {128, 10}, {33, 70}, {16, 100}}) {
    SCOPED_TRACE(std::to_string(k) + " x " + std::to_string(n));
    const at::Tensor x = torch::randn({k});
    const at::Tensor w = torch::randn({k, n});
    const at::Tensor bias = torch::randn({n});
    const int64_t ld = (n + 15) / 16 * 16;
    ASSERT_EQ(ld % ops::vec::kRowTimesMatrixAlignment, 0);
    at::Tensor padded = torch::zeros({k, ld});
    padded.narrow(1, 0, n).copy_(w);
    for (const bool with_bias : {true, false}) {
      // One float past the end must stay untouched.
      at::Tensor y = torch::full({n + 1}, 7.f);
      ops::vec::rowTimesMatrix(x.data_ptr<float>(), padded.data_ptr<float>(), ld,
                               with_bias ? bias.data_ptr<float>() : nullptr, y.data_ptr<float>(), k,
                               n);
      const at::Tensor expected = with_bias ? at::addmv(bias, w.t(), x) : at::mv(w.t(), x);
      EXPECT_TRUE(torch::allclose(y.narrow(0, 0, n), expected, 1e-5, 1e-5)) << with_bias;
      EXPECT_EQ(y[n].item<float>(), 7.f);
    }
  }
}

// What threads split a single-row product into: column slices starting at multiples of the
// alignment, each computing exactly its columns of the whole.
TEST(RowKernels, RowTimesMatrixColumnSlicesAreTheWhole) {
  constexpr int64_t k = 37;
  constexpr int64_t n = 1000;
  constexpr int64_t ld = 1008;
  const at::Tensor x = torch::randn({k});
  const at::Tensor bias = torch::randn({n});
  at::Tensor padded = torch::zeros({k, ld});
  padded.narrow(1, 0, n).copy_(torch::randn({k, n}));
  const float* w = padded.data_ptr<float>();
  at::Tensor whole = torch::full({n + 1}, 7.f);
  ops::vec::rowTimesMatrix(x.data_ptr<float>(), w, ld, bias.data_ptr<float>(),
                           whole.data_ptr<float>(), k, n);
  at::Tensor sliced = torch::full({n + 1}, 7.f);
  const std::vector<int64_t> bounds{0, 112, 512, 992, n};
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int64_t begin = bounds[i];
    ops::vec::rowTimesMatrix(x.data_ptr<float>(), w + begin, ld, bias.data_ptr<float>() + begin,
                             sliced.data_ptr<float>() + begin, k, bounds[i + 1] - begin);
  }
  EXPECT_TRUE(torch::equal(sliced, whole));
  EXPECT_EQ(sliced[n].item<float>(), 7.f);
}

TEST(RowKernels, LayerNormRowsMatchesAten) {
  for (const int64_t n : {1, 7, 16, 64, 300}) {
    SCOPED_TRACE(n);
    const at::Tensor x = torch::randn({9, n}) * 3 + 5; // an offset mean tests the two passes
    const at::Tensor gamma = torch::randn({n});
    const at::Tensor beta = torch::randn({n});
    for (const bool affine : {true, false}) {
      at::Tensor out = torch::empty_like(x);
      ops::vec::layerNormRows(x.data_ptr<float>(), affine ? gamma.data_ptr<float>() : nullptr,
                              affine ? beta.data_ptr<float>() : nullptr, 1e-5f,
                              out.data_ptr<float>(), 9, n);
      const at::Tensor expected =
          affine ? at::layer_norm(x, {n}, gamma, beta, 1e-5) : at::layer_norm(x, {n}, {}, {}, 1e-5);
      if (n == 1) {
        // One element is its own mean: exactly beta (or 0). ATen's x * rstd - mean * rstd, its
        // multiply fused into an FMA, leaves up to ~1e-4 of rounding there (rstd = 316).
        const at::Tensor exact = affine ? beta.expand({9, 1}) : torch::zeros({9, 1});
        EXPECT_TRUE(torch::equal(out, exact)) << "affine " << affine << "\n" << out;
        EXPECT_TRUE(torch::allclose(out, expected, 0, 1e-3)) << "affine " << affine;
        continue;
      }
      EXPECT_TRUE(torch::allclose(out, expected, 1e-5, 1e-5)) << "affine " << affine;
    }
  }
}

TEST(ElementwiseFastPath, OutputMayBeTheInput) {
  at::Tensor x = torch::randn({1003});
  const at::Tensor expected = mapUnary(UnaryOp::kSigmoid, x);
  ops::vec::map(UnaryOp::kSigmoid, x.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  EXPECT_TRUE(torch::equal(x, expected));
}

TEST(ElementwiseFastPath, UsesAtensCpuCapability) {
  const std::string report = at::show_config();
  EXPECT_NE(report.find(std::string("CPU capability usage: ") + ops::vec::capability()),
            std::string::npos)
      << "ours: " << ops::vec::capability();
}

// One aten::add node run by hand, to see which tensor it writes.
class ElementwiseOneAddNode : public ::testing::Test {
protected:
  void SetUp() override {
    torch::jit::parseIR(R"IR(
graph(%a : Tensor, %b : Tensor):
  %alpha : int = prim::Constant[value=1]()
  %c : Tensor = aten::add(%a, %b, %alpha)
  return (%c))IR",
                        graph_.get());
    for (const torch::jit::Node* node : graph_->nodes()) {
      if (node->kind() == c10::aten::add) {
        info_.node = node;
      }
    }
    auto kernel = ops::Registry::global().select(info_.node, {});
    ASSERT_TRUE(kernel.has_value());
    ASSERT_EQ(kernel->kind, ops::KernelKind::kOutVariant);
    info_.kernel = *kernel;
    info_.inputs = {0, 1, 2};
    info_.first_output = 3;
    info_.num_outputs = 1;
    values_[2] = int64_t{1};
  }

  const at::Tensor& run(const at::Tensor& a, const at::Tensor& b) {
    values_[0] = a;
    values_[1] = b;
    ops::ProcessedNode(info_, values_.data(), &scratch_).run();
    values_[0] = c10::IValue();
    values_[1] = c10::IValue();
    return values_[3].toTensor();
  }

  std::shared_ptr<torch::jit::Graph> graph_ = std::make_shared<torch::jit::Graph>();
  ops::StaticNodeInfo info_;
  std::array<c10::IValue, 4> values_;
  ops::Scratch scratch_;
};

TEST_F(ElementwiseOneAddNode, KeepsMemoryWhileItFits) {
  const at::Tensor a = torch::randn({4, 8});
  const void* memory = run(a, a).data_ptr();
  EXPECT_EQ(run(a, a).data_ptr(), memory); // fast path, same shape
  const at::Tensor small = torch::randn({3, 5});
  EXPECT_EQ(run(small, small).data_ptr(), memory); // smaller: same memory
  EXPECT_TRUE(torch::equal(values_[3].toTensor(), small + small));
  const at::Tensor strided = torch::randn({8, 4}).t();
  EXPECT_EQ(run(strided, strided).data_ptr(), memory); // at::cpu::add_out into the same memory
  EXPECT_TRUE(torch::equal(values_[3].toTensor(), strided + strided));
  const at::Tensor large = torch::randn({64, 64});
  EXPECT_TRUE(torch::equal(run(large, large), large + large)); // grows
}

TEST_F(ElementwiseOneAddNode, NeverOverwritesAValueInUse) {
  const at::Tensor a = torch::randn({4, 8});
  const at::Tensor first = run(a, a); // someone holds last run's output
  const at::Tensor first_copy = first.clone();
  const at::Tensor second = run(a, torch::ones({4, 8}));
  EXPECT_NE(second.data_ptr(), first.data_ptr());
  EXPECT_TRUE(torch::equal(first, first_copy));
  // Last run's output as this run's input, as a loop-carried `x = x + b` feeds it.
  values_[0] = values_[3];
  values_[1] = torch::ones({4, 8});
  const at::Tensor previous = values_[3].toTensor().clone();
  ops::ProcessedNode(info_, values_.data(), &scratch_).run();
  EXPECT_TRUE(torch::equal(values_[3].toTensor(), previous + 1));
}

TEST(ElementwiseOutputReuse, LoopCarriedValues) {
  const std::string source = R"JIT(
def forward(self, x, n: int):
    for i in range(n):
        x = torch.sigmoid(x) * 2.0 + x
    return x
)JIT";
  expectMatchesJit(source, {inputs({randnFloat({2, 3}), int64_t{3}}),
                            inputs({randnFloat({4, 3}).t(), int64_t{4}})});
}

TEST(ElementwiseOutputReuse, LoopAppendingToAList) {
  const std::string source = R"JIT(
def forward(self, x, n: int):
    values: List[Tensor] = []
    for i in range(n):
        y = torch.relu(x * float(i))
        values.append(y + 1)
    return values
)JIT";
  expectMatchesJit(
      source, {inputs({randnFloat({2, 3}), int64_t{3}}), inputs({randnFloat({5}), int64_t{4}})});
}

} // namespace
} // namespace srt::testing
