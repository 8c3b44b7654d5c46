// The GEMM family (ops/gemm/) on every backend, against the JIT: ranks, odd and empty sizes,
// shape changes between runs, strided inputs, alpha/beta, constant (pre-packed) and input weights.
#include <cblas.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "ops/core/kernel_options.h"
#include "ops/core/processed_node.h"
#include "static_runtime/program.h"

namespace srt::testing {
namespace {

using srt::GemmBackend;

// fp32 GEMMs of the backends sum in different orders (oneDNN's blocked kernels, OpenBLAS's, ATen's
// reduction for mv/dot): with K up to 64 and N(0, 1) data the results differ by ~1e-6 relative,
// above the harness's default 1e-5 absolute on sums of magnitude ~10.
constexpr double kTolerance = 1e-4;

const std::vector<GemmBackend> kBackends{GemmBackend::kOneDnn, GemmBackend::kOpenBlas,
                                         GemmBackend::kAten};

StaticModuleOptions withBackend(GemmBackend backend) {
  StaticModuleOptions options;
  options.gemm_backend = backend;
  return options;
}

// A module whose parameters become constants when the StaticModule freezes it: the weights the
// oneDNN backend pre-packs.
torch::jit::Module moduleWith(const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                              const std::string& source) {
  torch::jit::Module module("GemmModule");
  for (const auto& [name, value] : parameters) {
    module.register_parameter(name, value, /*is_buffer=*/false);
  }
  module.define(source);
  module.eval();
  return module;
}

std::vector<InputSet> sets(std::vector<std::vector<c10::IValue>> args) {
  std::vector<InputSet> result;
  for (auto& a : args) {
    result.push_back({std::move(a), {}});
  }
  return result;
}

// Every backend, and every GEMM node must be an out-variant.
void expectAllBackendsMatchJit(const torch::jit::Module& module,
                               const std::vector<InputSet>& inputs, double tolerance = kTolerance) {
  for (GemmBackend backend : kBackends) {
    SCOPED_TRACE(std::string("gemm_backend=") + toString(backend));
    const ModuleStats stats = StaticModule(module, withBackend(backend)).stats();
    EXPECT_GE(stats.out_variant_nodes, 1u);
    for (const char* op : {"aten::linear", "aten::addmm", "aten::mm", "aten::matmul", "aten::bmm",
                           "aten::baddbmm"}) {
      EXPECT_EQ(stats.fallback_ops.count(op), 0u) << op << " runs through the JIT fallback";
    }
    expectMatchesJit(module, inputs, withBackend(backend), tolerance);
  }
}

at::Tensor randn(at::IntArrayRef sizes, at::ScalarType dtype = at::kFloat) {
  return torch::randn(sizes, torch::TensorOptions().dtype(dtype));
}

// Runs the first node of a module's program directly, as a runtime does, so a test can watch the
// node's output tensor across runs (a runtime hands graph outputs to the caller instead).
class SingleNode {
public:
  explicit SingleNode(const StaticModule& module)
      : program_(module.program()), values_(program_.num_values) {
    std::copy(program_.constants.begin(), program_.constants.end(),
              values_.begin() + program_.num_inputs);
    node_ = std::make_unique<ops::ProcessedNode>(program_.blocks.at(0).nodes.at(0), values_.data(),
                                                 &scratch_);
  }

  ops::KernelKind kind() const { return node_->kind(); }

  const at::Tensor& run(const std::vector<at::Tensor>& tensors,
                        const std::vector<c10::IValue>& more = {}) {
    size_t i = 0;
    for (const at::Tensor& tensor : tensors) {
      values_[i++] = tensor;
    }
    for (const c10::IValue& value : more) {
      values_[i++] = value;
    }
    node_->run();
    return node_->output(0).toTensor();
  }

private:
  const Program& program_;
  std::vector<c10::IValue> values_;
  ops::Scratch scratch_;
  std::unique_ptr<ops::ProcessedNode> node_;
};

constexpr const char* kLinear = R"JIT(
def forward(self, x):
    return torch.linear(x, self.weight, self.bias)
)JIT";

constexpr const char* kLinearNoBias = R"JIT(
def forward(self, x):
    return torch.linear(x, self.weight)
)JIT";

constexpr const char* kLinearInputs = R"JIT(
def forward(self, x, w, b: Optional[Tensor]):
    return torch.linear(x, w, b)
)JIT";

// M = 7, K = 13, N = 5, and the shapes around it: one row, no rows, 3-D and 1-D inputs.
std::vector<InputSet> linearInputs(at::ScalarType dtype = at::kFloat) {
  return sets({{randn({7, 13}, dtype)},
               {randn({1, 13}, dtype)},
               {randn({0, 13}, dtype)},
               {randn({2, 3, 13}, dtype)},
               {randn({13}, dtype)}});
}

TEST(GemmLinear, ConstantWeightAndBias) {
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({5, 13})}, {"bias", randn({5})}}, kLinear),
                            linearInputs());
}

TEST(GemmLinear, ConstantWeightWithoutBias) {
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({5, 13})}}, kLinearNoBias),
                            linearInputs());
}

TEST(GemmLinear, TransformerShapes) {
  expectAllBackendsMatchJit(
      moduleWith({{"weight", randn({192, 64})}, {"bias", randn({192})}}, kLinear),
      sets({{randn({16, 64})}, {randn({2, 8, 64})}, {randn({1, 64})}}));
}

TEST(GemmLinear, WeightAndBiasAsInputs) {
  expectAllBackendsMatchJit(moduleWith({}, kLinearInputs),
                            sets({{randn({7, 13}), randn({5, 13}), randn({5})},
                                  {randn({1, 13}), randn({5, 13}), c10::IValue()},
                                  {randn({4, 2, 6}), randn({3, 6}), randn({3})},
                                  {randn({0, 6}), randn({3, 6}), randn({3})}}));
}

TEST(GemmLinear, NonContiguousAndTransposedInputs) {
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({5, 13})}, {"bias", randn({5})}}, kLinear),
                            sets({{randn({13, 7}).t()},                   // column-major
                                  {randn({7, 26}).slice(1, 0, 26, 2)},    // strided columns
                                  {randn({3, 13, 2}).transpose(1, 2)},    // 3-D, folds with a copy
                                  {randn({7, 13}).expand({2, 7, 13})}})); // broadcast batch
  // Transposed weight and bias as inputs: BLAS reads the weight as stored.
  expectAllBackendsMatchJit(
      moduleWith({}, kLinearInputs),
      sets({{randn({7, 13}), randn({13, 5}).t(), randn({10}).slice(0, 0, 10, 2)},
            {randn({13, 7}).t(), randn({5, 13}), randn({5})}}));
}

TEST(GemmLinear, Float64RunsOnAten) {
  expectAllBackendsMatchJit(
      moduleWith({{"weight", randn({5, 13}, at::kDouble)}, {"bias", randn({5}, at::kDouble)}},
                 kLinear),
      linearInputs(at::kDouble), 1e-10);
  expectAllBackendsMatchJit(
      moduleWith({}, kLinearInputs),
      sets({{randn({7, 13}, at::kDouble), randn({5, 13}, at::kDouble), randn({5}, at::kDouble)}}),
      1e-10);
}

TEST(GemmLinear, CarriedThroughALoop) {
  // The loop feeds the node's output back as its input: the next iteration must not write into
  // the tensor it reads.
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({6, 6}) * 0.3}}, R"JIT(
def forward(self, x, n: int):
    for i in range(n):
        x = torch.linear(x, self.weight)
    return x
)JIT"),
                            sets({{randn({3, 6}), 4}, {randn({1, 6}), 3}}));
  // Last iteration's output is still read after the node ran again.
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({6, 6})}}, R"JIT(
def forward(self, x, n: int):
    previous = x
    total = x
    for i in range(n):
        current = torch.linear(x + i, self.weight)
        total = total + previous
        previous = current
    return total
)JIT"),
                            sets({{randn({3, 6}), 4}, {randn({1, 6}), 3}}));
}

TEST(GemmLinear, EveryOptionCombination) {
  const auto module = moduleWith({{"weight", randn({5, 13})}, {"bias", randn({5})}}, R"JIT(
def forward(self, x):
    y = torch.linear(x, self.weight, self.bias)
    return torch.relu(y) + 1
)JIT");
  for (GemmBackend backend : kBackends) {
    for (StaticModuleOptions options : allValidOptions()) {
      options.gemm_backend = backend;
      SCOPED_TRACE(describe(options) + " gemm_backend=" + toString(backend));
      expectMatchesJit(module, sets({{randn({7, 13})}, {randn({2, 13})}}), options, kTolerance);
    }
  }
}

TEST(GemmAddmm, ConstantWeightAndBiasUnitScalars) {
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({13, 5})}, {"bias", randn({5})}}, R"JIT(
def forward(self, a):
    return torch.addmm(self.bias, a, self.weight)
)JIT"),
                            sets({{randn({7, 13})}, {randn({1, 13})}, {randn({0, 13})}}));
}

TEST(GemmAddmm, ConstantWeightWithAlphaBetaAndBroadcastSelf) {
  const auto module = moduleWith({{"weight", randn({13, 5})}}, R"JIT(
def forward(self, s, a, beta: float, alpha: float):
    return torch.addmm(s, a, self.weight, beta=beta, alpha=alpha)
)JIT");
  expectAllBackendsMatchJit(module, sets({{randn({5}), randn({7, 13}), 0.5, 2.0},
                                          {randn({7, 5}), randn({7, 13}), 1.0, 1.0},
                                          {randn({7, 1}), randn({7, 13}), -1.5, 1.0},
                                          {randn({1, 5}), randn({1, 13}), 1.0, 0.25},
                                          {torch::tensor(1.5f), randn({7, 13}), 1.0, 1.0},
                                          {randn({5}), randn({13, 3}).t(), 2.0, 1.0}}));
}

TEST(GemmAddmm, ZeroBetaIgnoresNaNInSelf) {
  const auto module = moduleWith({{"weight", randn({13, 5})}}, R"JIT(
def forward(self, s, a, beta: float):
    return torch.addmm(s, a, self.weight, beta=beta)
)JIT");
  const at::Tensor nan_self = torch::full({7, 5}, std::numeric_limits<float>::quiet_NaN());
  expectAllBackendsMatchJit(
      module, sets({{nan_self, randn({7, 13}), 0.0}, {randn({5}), randn({7, 13}), 0.0}}));
}

TEST(GemmAddmm, AllInputs) {
  expectAllBackendsMatchJit(moduleWith({}, R"JIT(
def forward(self, s, a, b, beta: float, alpha: float):
    return torch.addmm(s, a, b, beta=beta, alpha=alpha)
)JIT"),
                            sets({{randn({5}), randn({7, 13}), randn({13, 5}), 1.0, 1.0},
                                  {randn({3, 3}), randn({4, 3}).t(), randn({4, 3}), 0.5, -2.0},
                                  {randn({1, 4}), randn({1, 3}), randn({4, 3}).t(), 1.0, 1.0},
                                  {randn({4}), randn({0, 3}), randn({3, 4}), 1.0, 1.0},
                                  {randn({2, 4}), randn({2, 0}), randn({0, 4}), 0.5, 1.0}}));
}

TEST(GemmAddmm, IntegerScalarsAndFloat64) {
  expectAllBackendsMatchJit(
      moduleWith({}, R"JIT(
def forward(self, s, a, b):
    return torch.addmm(s, a, b, beta=2, alpha=3)
)JIT"),
      sets({{randn({5}), randn({7, 13}), randn({13, 5})},
            {randn({5}, at::kDouble), randn({7, 13}, at::kDouble), randn({13, 5}, at::kDouble)}}));
}

TEST(GemmMm, ConstantAndInputWeights) {
  expectAllBackendsMatchJit(
      moduleWith({{"weight", randn({13, 5})}}, R"JIT(
def forward(self, a):
    return torch.mm(a, self.weight)
)JIT"),
      sets({{randn({7, 13})}, {randn({1, 13})}, {randn({0, 13})}, {randn({13, 7}).t()}}));
  expectAllBackendsMatchJit(moduleWith({}, R"JIT(
def forward(self, a, b):
    return torch.mm(a, b)
)JIT"),
                            sets({{randn({7, 13}), randn({13, 5})},
                                  {randn({13, 7}).t(), randn({5, 13}).t()},
                                  {randn({1, 4}), randn({4, 1})},
                                  {randn({3, 8}).slice(1, 0, 8, 2), randn({4, 5})},
                                  {randn({7, 13}, at::kDouble), randn({13, 5}, at::kDouble)}}));
}

TEST(GemmMm, ConstantTransposedWeight) {
  // aten::t of a parameter folds into a non-contiguous constant: packed from its strides.
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({5, 13})}}, R"JIT(
def forward(self, a):
    return torch.mm(a, self.weight.t())
)JIT"),
                            sets({{randn({7, 13})}, {randn({2, 13})}}));
}

constexpr const char* kMatmulInputs = R"JIT(
def forward(self, a, b):
    return torch.matmul(a, b)
)JIT";

TEST(GemmMatmul, EveryRankCase) {
  expectAllBackendsMatchJit(moduleWith({}, kMatmulInputs),
                            sets({{randn({13}), randn({13})},                // dot
                                  {randn({7, 13}), randn({13})},             // mv
                                  {randn({13}), randn({13, 5})},             // row @ matrix
                                  {randn({7, 13}), randn({13, 5})},          // mm
                                  {randn({2, 7, 13}), randn({13, 5})},       // folded batch
                                  {randn({2, 7, 13}), randn({2, 13, 5})},    // bmm
                                  {randn({2, 1, 7, 13}), randn({3, 13, 5})}, // broadcast
                                  {randn({7, 13}), randn({2, 13, 5})},       // matrix @ batch
                                  {randn({13}), randn({2, 13, 5})},          // row @ batch
                                  {randn({2, 7, 13}), randn({13})},          // batch @ vector
                                  {randn({0, 7, 13}), randn({13, 5})},       // empty batch
                                  {randn({2, 0, 13}), randn({2, 13, 5})}})); // empty rows
}

TEST(GemmMatmul, StridedOperands) {
  expectAllBackendsMatchJit(
      moduleWith({}, kMatmulInputs),
      sets({{randn({2, 13, 7}).transpose(1, 2), randn({2, 5, 13}).transpose(1, 2)},
            {randn({7, 13}).expand({3, 7, 13}), randn({3, 13, 5})},
            {randn({2, 7, 26}).slice(2, 0, 26, 2), randn({13, 5})}}));
}

TEST(GemmMatmul, ConstantWeight) {
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({13, 5})}}, R"JIT(
def forward(self, a):
    return torch.matmul(a, self.weight)
)JIT"),
                            sets({{randn({7, 13})},
                                  {randn({13})},
                                  {randn({2, 3, 13})},
                                  {randn({1, 13})},
                                  {randn({0, 13})}}));
  expectAllBackendsMatchJit(moduleWith({{"weight", randn({13, 5}, at::kDouble)}}, R"JIT(
def forward(self, a):
    return torch.matmul(a, self.weight)
)JIT"),
                            sets({{randn({7, 13}, at::kDouble)}, {randn({2, 3, 13}, at::kDouble)}}),
                            1e-10);
}

TEST(GemmBmm, ShapesAndStrides) {
  expectAllBackendsMatchJit(
      moduleWith({}, R"JIT(
def forward(self, a, b):
    return torch.bmm(a, b)
)JIT"),
      sets({{randn({3, 7, 13}), randn({3, 13, 5})},
            {randn({1, 1, 13}), randn({1, 13, 5})},
            {randn({0, 7, 13}), randn({0, 13, 5})},
            {randn({3, 13, 7}).transpose(1, 2), randn({5, 3, 13}).permute({1, 2, 0})},
            {randn({3, 7, 13}, at::kDouble), randn({3, 13, 5}, at::kDouble)},
            // Computed by ops/gemm/small_loops.h's loop: DeepAndWide's dot products, with a
            // transposed right operand.
            {randn({64, 1, 32}), randn({64, 1, 32}).transpose(1, 2)},
            // Just past its limits: per entry, and in all.
            {randn({2, 8, 16}), randn({2, 16, 8})},
            {randn({200, 1, 512}), randn({200, 512, 1})}}));
}

TEST(GemmBaddbmm, AlphaBetaAndBroadcastSelf) {
  expectAllBackendsMatchJit(
      moduleWith({}, R"JIT(
def forward(self, s, a, b, beta: float, alpha: float):
    return torch.baddbmm(s, a, b, beta=beta, alpha=alpha)
)JIT"),
      sets({{randn({3, 7, 5}), randn({3, 7, 13}), randn({3, 13, 5}), 1.0, 1.0},
            {randn({5}), randn({3, 7, 13}), randn({3, 13, 5}), 0.5, 2.0},
            {randn({7, 1}), randn({2, 7, 4}), randn({2, 4, 5}), -1.0, 1.0},
            // K * M * N >= 400: ATen's blocked path. Its small-size kernel reads the output even
            // when beta = 0, and the JIT's output is uninitialized memory (maybe NaN) there; see
            // ZeroBetaIgnoresLastRunsOutput.
            {torch::full({2, 7, 5}, NAN), randn({2, 7, 13}), randn({2, 13, 5}), 0.0, 1.0},
            {randn({5}), randn({0, 7, 4}), randn({0, 4, 5}), 1.0, 1.0}}));
}

// beta = 0 means self is ignored, NaN included, and so must be whatever the reused output held.
TEST(GemmBaddbmm, ZeroBetaIgnoresLastRunsOutput) {
  const auto module = moduleWith({}, R"JIT(
def forward(self, s, a, b, beta: float):
    return torch.baddbmm(s, a, b, beta=beta, alpha=2.0)
)JIT");
  const at::Tensor nan_self = torch::full({2, 7, 5}, NAN);
  const at::Tensor a = randn({2, 7, 4});
  const at::Tensor b = randn({2, 4, 5});
  for (GemmBackend backend : kBackends) {
    SCOPED_TRACE(toString(backend));
    StaticModule static_module(module, withBackend(backend));
    SingleNode node(static_module);
    ASSERT_TRUE(node.run({nan_self, a, b}, {1.0}).isnan().all().item<bool>());
    EXPECT_TRUE(
        torch::allclose(node.run({nan_self, a, b}, {0.0}), a.bmm(b) * 2, kTolerance, kTolerance));
  }
}

TEST(GemmErrors, ShapeMismatchIsAnErrorAndTheRuntimeRecovers) {
  const at::Tensor weight = randn({5, 13});
  for (GemmBackend backend : kBackends) {
    SCOPED_TRACE(toString(backend));
    StaticModule module(moduleWith({{"weight", weight}}, kLinearNoBias), withBackend(backend));
    EXPECT_THROW((void)module({randn({7, 12})}), c10::Error);
    const at::Tensor x = randn({2, 13});
    EXPECT_TRUE(
        torch::allclose(module({x}).toTensor(), at::linear(x, weight), kTolerance, kTolerance));
  }
}

TEST(GemmOutput, WritesIntoLastRunsTensor) {
  const at::Tensor weight = randn({5, 13});
  const at::Tensor bias = randn({5});
  for (GemmBackend backend : kBackends) {
    SCOPED_TRACE(toString(backend));
    StaticModule module(moduleWith({{"weight", weight}, {"bias", bias}}, kLinear),
                        withBackend(backend));
    SingleNode node(module);
    ASSERT_EQ(node.kind(), ops::KernelKind::kOutVariant);
    const void* first = nullptr;
    // Same shape, then smaller, then back: the first run's storage holds them all.
    for (int64_t m : {7, 7, 3, 1, 7}) {
      const at::Tensor x = randn({m, 13});
      const at::Tensor& out = node.run({x});
      EXPECT_TRUE(torch::allclose(out, at::linear(x, weight, bias), kTolerance, kTolerance)) << m;
      EXPECT_EQ(out.sizes(), at::IntArrayRef({m, 5}));
      if (first == nullptr) {
        first = out.data_ptr();
      }
      EXPECT_EQ(out.data_ptr(), first) << "M=" << m << ": the output was reallocated";
    }
  }
}

// oneDNN's primitive is cached per node for one M and thread count; OpenBLAS's thread count is
// global. Both must follow the caller's at::set_num_threads, and results must stay right.
TEST(GemmThreads, BackendsFollowAtenThreadCount) {
  const int original = at::get_num_threads();
  const at::Tensor weight = randn({64, 32});
  for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas}) {
    SCOPED_TRACE(toString(backend));
    StaticModule module(moduleWith({{"weight", weight}}, kLinearNoBias), withBackend(backend));
    SingleNode node(module);
    for (int threads : {1, 2, 1}) {
      at::set_num_threads(threads);
      for (int64_t m : {7, 1, 64, 7}) {
        const at::Tensor x = randn({m, 32});
        EXPECT_TRUE(torch::allclose(node.run({x}), at::linear(x, weight), kTolerance, kTolerance));
        if (backend == GemmBackend::kOneDnn) {
          EXPECT_EQ(omp_get_max_threads(), threads);
        } else {
          EXPECT_EQ(openblas_get_num_threads(), threads);
        }
      }
    }
  }
  at::set_num_threads(original);
}

} // namespace
} // namespace srt::testing
