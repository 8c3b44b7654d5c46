// softmax, log_softmax, layer_norm, eval-mode batch_norm and batch_norm + activation
// (srt::batch_norm_activation) out-variant kernels against the JIT.
#include "harness/pass_testing.h"
#include "ops/op_test_helpers.h"

namespace srt::testing {
namespace {

TEST(Normalization, Softmax) {
  for (const std::string expression :
       {"torch.softmax(x, 1)", "torch.softmax(x, -1)", "torch.softmax(x, 0)",
        "torch.log_softmax(x, 1)", "torch.log_softmax(x, 0)", "torch.softmax(x, -1, dtype=7)",
        "torch.log_softmax(x, 1, 6)"}) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x", expression);
    expectAllOutVariant(source);
    for (const auto& make : {randnFloat, randnDouble}) {
      expectMatchesJit(source,
                       {inputs({make({2, 3})}), inputs({make({4, 3}).t()}), inputs({make({3, 0})}),
                        inputs({make({2, 5, 4})}), inputs({make({64, 1031})})});
    }
  }
}

TEST(Normalization, SoftmaxOfIntegersWithDtype) {
  const std::string source = forwardReturning("x", "torch.softmax(x, 1, dtype=6)");
  expectMatchesJit(source, {inputs({randintLong({2, 3})}), inputs({randintLong({3, 4})})});
}

TEST(Normalization, LayerNorm) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"x, w, b", "torch.layer_norm(x, [4], w, b, 1e-5)"},
      {"x, w, b", "torch.layer_norm(x, [4], w, None, 1e-3)"},
      {"x, w, b", "torch.layer_norm(x, [4], None, b)"},
      {"x, w, b", "torch.layer_norm(x, [4])"},
      {"x, w, b", "torch.layer_norm(x, [4], w, b)"}};
  for (const auto& [params, expression] : cases) {
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning(params, expression);
    expectAllOutVariant(source, 1);
    for (const auto& make : {randnFloat, randnDouble}) {
      expectMatchesJit(source, {inputs({make({3, 4}), make({4}), make({4})}),
                                inputs({make({2, 5, 4}), make({4}), make({4})}),
                                inputs({make({4, 3}).t(), make({4}), make({4})}),
                                inputs({make({0, 4}), make({4}), make({4})}),
                                inputs({make({4}), make({4}), make({4})}),
                                inputs({make({1000, 4}), make({4}), make({4})})});
    }
  }
  // Normalizing over the last two dimensions.
  const std::string source = forwardReturning("x, w, b", "torch.layer_norm(x, [3, 5], w, b)");
  expectMatchesJit(source, {inputs({randnFloat({2, 3, 5}), randnFloat({3, 5}), randnFloat({3, 5})}),
                            inputs({randnFloat({3, 5}), randnFloat({3, 5}), randnFloat({3, 5})})});
}

TEST(Normalization, LayerNormAgreesWithAten) {
  const at::Tensor x = torch::randn({17, 300});
  const at::Tensor w = torch::randn({300});
  const at::Tensor b = torch::randn({300});
  StaticModule module(
      scriptModule(forwardReturning("x, w, b", "torch.layer_norm(x, [300], w, b)")));
  EXPECT_TRUE(
      torch::allclose(module({x, w, b}).toTensor(), at::layer_norm(x, {300}, w, b), 1e-6, 1e-6));
}

// Running variance must be positive.
std::vector<c10::IValue> batchNormArgs(const at::Tensor& x, at::ScalarType type) {
  const int64_t channels = x.size(1);
  const auto options = torch::TensorOptions().dtype(type);
  return {x, torch::randn({channels}, options), torch::randn({channels}, options),
          torch::randn({channels}, options), torch::rand({channels}, options) + 0.5};
}

const char* const kBatchNormEval = "torch.batch_norm(x, w, b, mean, var, False, 0.1, 1e-5, False)";

TEST(Normalization, BatchNormEval) {
  const std::string source = forwardReturning("x, w, b, mean, var", kBatchNormEval);
  expectAllOutVariant(source);
  for (const at::ScalarType type : {at::kFloat, at::kDouble}) {
    const auto options = torch::TensorOptions().dtype(type);
    expectMatchesJit(
        source,
        {inputs(batchNormArgs(torch::randn({2, 3, 4, 5}, options), type)),
         inputs(batchNormArgs(torch::randn({4, 3}, options), type)),     // [N, C]
         inputs(batchNormArgs(torch::randn({2, 6, 7}, options), type)),  // [N, C, L]
         inputs(batchNormArgs(torch::randn({5, 3}, options).t(), type)), // strided
         inputs(batchNormArgs(
             torch::randn({2, 3, 4, 5}, options).contiguous(at::MemoryFormat::ChannelsLast), type)),
         inputs(batchNormArgs(torch::randn({0, 3, 2}, options), type)),
         inputs(batchNormArgs(torch::randn({2, 16, 64, 64}, options), type))});
  }
}

TEST(Normalization, BatchNormEvalWithoutAffine) {
  const std::string source = forwardReturning(
      "x, mean, var", "torch.batch_norm(x, None, None, mean, var, False, 0.1, 1e-3, False)");
  expectAllOutVariant(source);
  expectMatchesJit(source,
                   {inputs({randnFloat({2, 3, 4}), randnFloat({3}), torch::rand({3}) + 0.5}),
                    inputs({randnFloat({5, 2}), randnFloat({2}), torch::rand({2}) + 0.5})});
}

TEST(Normalization, BatchNormEvalAgreesWithAten) {
  for (const std::vector<int64_t> shape :
       std::vector<std::vector<int64_t>>{{8, 32}, {4, 16, 13, 11}, {2, 5, 100}}) {
    auto args = batchNormArgs(torch::randn(shape), at::kFloat);
    StaticModule module(scriptModule(forwardReturning("x, w, b, mean, var", kBatchNormEval)));
    const at::Tensor expected =
        at::batch_norm(args[0].toTensor(), args[1].toTensor(), args[2].toTensor(),
                       args[3].toTensor(), args[4].toTensor(), false, 0.1, 1e-5, false);
    EXPECT_TRUE(torch::allclose(module(args).toTensor(), expected, 1e-6, 1e-6));
  }
}

TEST(Normalization, BatchNormTrainingIsDeclined) {
  // Training mode without running statistics: batch statistics, nothing updated in place.
  const std::string training =
      forwardReturning("x, w, b", "torch.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False)");
  expectFallback(training, "aten::batch_norm");
  expectMatchesJit(training, {inputs({randnFloat({4, 3, 2}), randnFloat({3}), randnFloat({3})}),
                              inputs({randnFloat({5, 3}), randnFloat({3}), randnFloat({3})})});
  // Not a constant: only known at run time.
  const std::string runtime_flag =
      forwardReturning("x, w, b, mean, var, training: bool",
                       "torch.batch_norm(x, w, b, mean, var, training, 0.1, 1e-5, False)");
  expectFallback(runtime_flag, "aten::batch_norm");
  auto args = batchNormArgs(randnFloat({4, 3, 2}), at::kFloat);
  args.push_back(false);
  expectMatchesJit(runtime_flag, {inputs(args)});
}

// batch_norm + activation (passes/norm_activation.cpp) as one srt::batch_norm_activation node:
// every activation on every path of the kernel (contiguous planes, rows of [N, C], channels
// innermost: channels last and a transposed [N, L, C]; addcmul for float64 and other strides),
// one large enough to split over the threads.
TEST(BatchNormActivation, EveryActivationOnEveryPathMatchesTheJit) {
  for (const std::string activation :
       {"torch.relu({})", "torch.sigmoid({})", "torch.tanh({})", "torch.silu({})", "torch.gelu({})",
        "torch.gelu({}, approximate='tanh')"}) {
    const std::string expression =
        c10::str(activation.substr(0, activation.find("{}")), kBatchNormEval,
                 activation.substr(activation.find("{}") + 2));
    SCOPED_TRACE(expression);
    const std::string source = forwardReturning("x, w, b, mean, var", expression);
    expectAllOutVariant(source, 1); // the one fused node
    expectMatchesJit(
        source,
        {inputs(batchNormArgs(randnFloat({2, 3, 4, 5}), at::kFloat)),
         inputs(batchNormArgs(randnFloat({4, 3}), at::kFloat)),
         inputs(batchNormArgs(randnFloat({2, 24, 9, 7}).contiguous(at::MemoryFormat::ChannelsLast),
                              at::kFloat)),
         inputs(batchNormArgs(randnFloat({2, 2001, 64}).transpose(1, 2), at::kFloat)),
         inputs(batchNormArgs(randnFloat({2, 3, 5, 4}).transpose(2, 3), at::kFloat)),
         inputs(batchNormArgs(
             randnFloat({1, 64, 56, 56}).contiguous(at::MemoryFormat::ChannelsLast), at::kFloat)),
         inputs(batchNormArgs(torch::randn({2, 3, 4}, torch::kDouble), at::kDouble)),
         inputs(batchNormArgs(randnFloat({0, 3, 2}), at::kFloat))},
        1e-4);
  }
}

// The output keeps the input's layout, as ATen's batch_norm and relu do (passes/channels_last.cpp
// counts on it to leave the convolution after it without a conversion).
TEST(BatchNormActivation, KeepsTheInputsLayout) {
  StaticModule module(scriptModule(
      forwardReturning("x, w, b, mean, var", std::string("torch.relu(") + kBatchNormEval + ")")));
  const at::Tensor x = randnFloat({2, 16, 5, 6}).contiguous(at::MemoryFormat::ChannelsLast);
  for (int run = 0; run < 2; ++run) {
    const at::Tensor y = module(batchNormArgs(x, at::kFloat)).toTensor();
    EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast));
  }
}

// Left to the JIT's two ops: a normalized value read by more than its activation, and training
// mode (the batch's statistics, which the kernel does not compute).
TEST(BatchNormActivation, OtherReadersAndTrainingStayUnfused) {
  const std::string read_twice = std::string("def forward(self, x, w, b, mean, var):\n    y = ") +
                                 kBatchNormEval + "\n    return torch.relu(y), y\n";
  expectAllOutVariant(read_twice, 2);
  expectMatchesJit(read_twice, {inputs(batchNormArgs(randnFloat({2, 3, 4}), at::kFloat))}, 1e-5);
  const std::string training = forwardReturning(
      "x, w, b", "torch.relu(torch.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False))");
  expectFallback(training, "aten::batch_norm");
  expectMatchesJit(training, {inputs({randnFloat({4, 3, 2}), randnFloat({3}), randnFloat({3})})},
                   1e-5);
}

// DenseNet's layer input: a list of features (built by append, as DenseNet builds it)
// concatenated, normalized and activated as one srt::cat_batch_norm_activation, whose rank
// query (BatchNorm2d's check) reads the fused result. Channels-last parts of one size (the fused
// loop, 4-D and 5-D, one large enough to split over the threads), NCHW and mixed parts and other
// dims (concatenated first), each twice; a concatenation read by another op stays a concatenation.
TEST(CatBatchNormActivation, DenseNetsLayerInputMatchesTheJit) {
  const std::string source = R"JIT(
def forward(self, x, y, w, b, mean, var):
    features = [x]
    features.append(y)
    z = torch.cat(features, 1)
    return torch.relu(torch.batch_norm(z, w, b, mean, var, False, 0.1, 1e-5, False)), z.dim()
)JIT";
  StaticModule module(scriptModule(source));
  EXPECT_EQ(countKind(module.graph(), "srt::cat_batch_norm_activation"), 1u) << module.graph();
  EXPECT_EQ(countKind(module.graph(), "aten::cat"), 0u) << module.graph();
  const auto args = [](const at::Tensor& x, const at::Tensor& y) {
    std::vector<c10::IValue> result = batchNormArgs(torch::cat({x, y}, 1), at::kFloat);
    result[0] = x;
    result.insert(result.begin() + 1, y);
    return inputs(result);
  };
  const auto cl = [](at::IntArrayRef shape) {
    return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast);
  };
  const auto cl3d = [](at::IntArrayRef shape) {
    return torch::randn(shape).contiguous(at::MemoryFormat::ChannelsLast3d);
  };
  expectMatchesJit(source,
                   {args(cl({2, 16, 5, 7}), cl({2, 8, 5, 7})),
                    args(cl({1, 64, 56, 56}), cl({1, 32, 56, 56})),
                    args(cl3d({1, 4, 3, 5, 6}), cl3d({1, 12, 3, 5, 6})),
                    args(randnFloat({2, 3, 4, 5}), randnFloat({2, 5, 4, 5})),
                    args(cl({1, 3, 4, 4}), randnFloat({1, 2, 4, 4})),
                    args(randnFloat({2, 3, 7}), randnFloat({2, 4, 7}))},
                   1e-4);
  const std::string read_again = R"JIT(
def forward(self, x, y, w, b, mean, var):
    features = [x]
    features.append(y)
    z = torch.cat(features, 1)
    return torch.relu(torch.batch_norm(z, w, b, mean, var, False, 0.1, 1e-5, False)), z
)JIT";
  StaticModule unfused(scriptModule(read_again));
  EXPECT_EQ(countKind(unfused.graph(), "srt::cat_batch_norm_activation"), 0u) << unfused.graph();
  expectMatchesJit(read_again, {args(cl({1, 16, 3, 3}), cl({1, 16, 3, 3}))}, 1e-4);
}

} // namespace
} // namespace srt::testing
