// Batch slices: which graphs treat every item of a batch on its own (passes/batch_independence.h),
// and runtimes that run such a batch as one slice per thread (RuntimeOptions::split_batch).
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "passes/batch_independence.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

// A small CNN as people write it: conv, eval-mode batch_norm, relu, pooling, a residual add, a
// channel concat, an x.view(x.size(0), -1) flatten and a classifier.
torch::jit::Module convNet() {
  torch::jit::Module module("ConvNet");
  module.register_parameter("conv1", torch::randn({8, 3, 3, 3}) * 0.3, false);
  module.register_parameter("conv2", torch::randn({8, 8, 3, 3}) * 0.1, false);
  module.register_buffer("mean", torch::randn({8}) * 0.1);
  module.register_buffer("var", torch::rand({8}) + 0.5);
  module.register_parameter("fc", torch::randn({5, 16}) * 0.1, false);
  module.register_parameter("fc_bias", torch::randn({5}), false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.conv1, None, [1, 1], [1, 1])
    y = torch.batch_norm(y, None, None, self.mean, self.var, False, 0.1, 1e-5, False)
    y = torch.relu(y)
    y = torch.max_pool2d(y, [2, 2])
    z = torch.relu(torch.conv2d(y, self.conv2, None, [1, 1], [1, 1])) + y
    z = torch.cat([z, torch.sigmoid(y)], 1)
    z = torch.adaptive_avg_pool2d(z, [1, 1])
    z = z.view(z.size(0), -1)
    return torch.linear(z, self.fc, self.fc_bias)
)JIT");
  module.eval();
  return module;
}

passes::BatchIndependence analyze(const torch::jit::Module& module) {
  const passes::PreparedGraph prepared = passes::prepareModule(module);
  return passes::analyzeBatchIndependence(*prepared.graph, prepared.schema.arguments().size());
}

TEST(BatchIndependence, ProvesAConvNetPerItemAndRequiresABatchedRank) {
  const passes::BatchIndependence result = analyze(convNet());
  EXPECT_TRUE(result.independent) << result.reason;
  EXPECT_THAT(result.batched_inputs, ::testing::ElementsAre(0));
  // conv2d reads a rank-3 tensor as one unbatched image.
  EXPECT_THAT(result.required_ranks, ::testing::ElementsAre(4));
}

struct Refused {
  const char* source;
  const char* culprit; // what the reason must name
};

class BatchIndependenceRefuses : public ::testing::TestWithParam<Refused> {};

TEST_P(BatchIndependenceRefuses, WhatMixesItemsOrReadsTheBatchSize) {
  torch::jit::Module module("Mixing");
  module.register_buffer("per_row", torch::randn({2, 12}));
  module.define(GetParam().source);
  const passes::BatchIndependence result = analyze(module);
  EXPECT_FALSE(result.independent) << GetParam().source;
  EXPECT_THAT(result.reason, ::testing::HasSubstr(GetParam().culprit)) << GetParam().source;
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, BatchIndependenceRefuses,
    ::testing::Values(
        // Statistics over the batch.
        Refused{"def forward(self, x):\n    return x - x.mean(0, keepdim=True)\n", "aten::mean"},
        Refused{"def forward(self, x):\n    return x / x.sum()\n", "aten::sum"},
        Refused{"def forward(self, x):\n"
                "    return torch.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False)\n",
                "aten::batch_norm"},
        // The batch size as a number.
        Refused{"def forward(self, x):\n    return x * x.size(0)\n", "aten::mul"},
        // A constant whose dim 0 meets the batch dim.
        Refused{"def forward(self, x):\n    return torch.flatten(x, 1) + self.per_row\n",
                "aten::add"},
        // Joins, reshapes and products across items.
        Refused{"def forward(self, x):\n    return torch.cat([x, x], 0)\n", "aten::cat"},
        Refused{"def forward(self, x):\n    return x.view(-1)\n", "aten::view"},
        Refused{"def forward(self, x):\n    return torch.mm(x, x.transpose(0, 1))\n",
                "aten::transpose"},
        Refused{"def forward(self, x):\n    return x.cumsum(0)\n", "aten::cumsum"},
        // Two arguments whose ranks may differ: broadcasting would align the batch dim of one
        // with another dim of the other.
        Refused{"def forward(self, x, y):\n    return x + y\n", "aten::add"},
        // A loop as many times as there are items.
        Refused{"def forward(self, x):\n"
                "    y = x * 0\n"
                "    for i in range(x.size(0)):\n"
                "        y = y + 1\n"
                "    return y\n",
                "prim::Loop"},
        // Picking an item.
        Refused{"def forward(self, x):\n    return x[0]\n", "aten::select"},
        // A result without the batch.
        Refused{"def forward(self, x):\n    return x.size(1)\n", "output 0"}));

// Runs `inputs` through `runtime`, each twice, against the JIT, and returns the slices the runs
// used.
std::vector<int> slicesOfRuns(torch::jit::Module& module, StaticRuntime& runtime,
                              const std::vector<at::Tensor>& inputs) {
  std::vector<int> slices;
  for (const at::Tensor& input : inputs) {
    const c10::IValue expected = module.forward({input});
    for (int repeat = 0; repeat < 2; ++repeat) {
      const c10::IValue actual = runtime({input});
      EXPECT_EQ(compareIValues(expected, actual, 1e-4), "")
          << "batch " << input.size(0) << " run " << repeat;
      slices.push_back(runtime.lastRunBatchSlices());
    }
  }
  return slices;
}

TEST(BatchSplit, RunsABatchAsOneSlicePerThreadAndMatchesTheJit) {
  torch::jit::Module module = convNet();
  StaticModule static_module(module);
  ASSERT_TRUE(static_module.batchIndependence().independent);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  StaticRuntime runtime(static_module, options);
  // Odd batches make slices of different sizes; batch 1 has nothing to split.
  const std::vector<at::Tensor> inputs = {torch::randn({5, 3, 12, 12}), torch::randn({2, 3, 8, 10}),
                                          torch::randn({1, 3, 12, 12})};
  EXPECT_THAT(slicesOfRuns(module, runtime, inputs), ::testing::ElementsAre(2, 2, 2, 2, 0, 0));

  options.split_batch = false;
  runtime.setOptions(options);
  EXPECT_THAT(slicesOfRuns(module, runtime, inputs), ::testing::ElementsAre(0, 0, 0, 0, 0, 0));

  options.split_batch = true;
  options.intra_op_threads = 1;
  runtime.setOptions(options);
  EXPECT_THAT(slicesOfRuns(module, runtime, inputs), ::testing::ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(BatchSplit, JoinsTupleResultsElementByElement) {
  torch::jit::Module module("Pair");
  module.register_parameter("weight", torch::randn({4, 3, 3, 3}), false);
  module.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.weight)
    return (y, torch.flatten(torch.relu(y), 1))
)JIT");
  module.eval();
  StaticModule static_module(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  StaticRuntime runtime(static_module, options);
  EXPECT_THAT(slicesOfRuns(module, runtime, {torch::randn({3, 3, 7, 7})}),
              ::testing::ElementsAre(2, 2));
}

TEST(BatchSplit, ReportsABadInputInTheCallersTermsAndKeepsWorking) {
  torch::jit::Module module = convNet();
  StaticModule static_module(module);
  RuntimeOptions options;
  options.intra_op_threads = 2;
  StaticRuntime runtime(static_module, options);
  options.split_batch = false;
  StaticRuntime whole(static_module, options);
  // 4 channels where the first convolution takes 3: both runtimes raise the same error, naming
  // the caller's batch of 6, not a slice of 3.
  const at::Tensor bad = torch::randn({6, 4, 8, 8});
  std::string split_error;
  std::string whole_error;
  try {
    (void)runtime({bad});
  } catch (const c10::Error& error) {
    split_error = error.what_without_backtrace();
  }
  try {
    (void)whole({bad});
  } catch (const c10::Error& error) {
    whole_error = error.what_without_backtrace();
  }
  EXPECT_FALSE(split_error.empty());
  EXPECT_EQ(split_error, whole_error);
  EXPECT_THAT(slicesOfRuns(module, runtime, {torch::randn({6, 3, 8, 8})}),
              ::testing::ElementsAre(2, 2));
}

TEST(BatchSplit, KeepsBatchesWholeWhereTheInputsDoNotAllowSlices) {
  RuntimeOptions options;
  options.intra_op_threads = 2;
  // Rank 3: conv2d reads it as one unbatched image, whose dim 0 is its channels.
  torch::jit::Module unbatched("Unbatched");
  unbatched.register_parameter("weight", torch::randn({4, 3, 3, 3}), false);
  unbatched.define(R"JIT(
def forward(self, x):
    return torch.relu(torch.conv2d(x, self.weight))
)JIT");
  unbatched.eval();
  StaticModule unbatched_module(unbatched);
  StaticRuntime unbatched_runtime(unbatched_module, options);
  EXPECT_THAT(slicesOfRuns(unbatched, unbatched_runtime, {torch::randn({3, 9, 9})}),
              ::testing::ElementsAre(0, 0));
  // Outputs that must live in the runtime's own output arena.
  StaticModuleOptions managed_outputs;
  managed_outputs.manage_output_tensors = true;
  StaticModule managed(convNet(), managed_outputs);
  StaticRuntime managed_runtime(managed, options);
  (void)managed_runtime({torch::randn({4, 3, 8, 8})});
  EXPECT_EQ(managed_runtime.lastRunBatchSlices(), 0);
  managed_runtime.deallocateOutputTensors();
}

} // namespace
} // namespace srt::testing
