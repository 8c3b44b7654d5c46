// Kernel scratch through the memory planner: a node's scratch request is learned on the first
// run, placed in the arena for that node's step only, and served from there afterwards with no
// allocation. batch_norm's statistics folded into per-channel scale and shift are such scratch
// (ops/normalization/normalization.cpp): 2 floats per channel.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "memory/allocation_counter.h"

namespace srt::testing {
namespace {

constexpr const char* kNormBetweenOps = R"JIT(
def forward(self, x, mean, var):
    y = torch.relu(x)
    z = torch.batch_norm(y, None, None, mean, var, False, 0.1, 1e-5, False)
    return z + 1
)JIT";

// Every iteration normalizes, so each one asks for scratch.
constexpr const char* kNormInLoop = R"JIT(
def forward(self, x, mean, var, n: int):
    y = x * 2
    for i in range(n):
        y = torch.batch_norm(y, None, None, mean, var, False, 0.1, 1e-5, False) + x
    return y.relu()
)JIT";

// x with running statistics for its channels, then any further arguments.
std::vector<c10::IValue> withStatistics(const at::Tensor& x, std::vector<c10::IValue> rest = {}) {
  std::vector<c10::IValue> args{x, torch::randn({x.size(1)}), torch::rand({x.size(1)}) + 0.5};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

c10::IValue runJit(torch::jit::Module& module, std::vector<c10::IValue> args) {
  torch::NoGradGuard no_grad;
  return module.forward(std::move(args));
}

// A scale and a shift per channel.
size_t scratchBytes(const at::Tensor& x) {
  return static_cast<size_t>(2 * x.size(1)) * sizeof(float);
}

TEST(ScratchPlanning, NormStatisticsLiveInTheArenaFromTheSecondRun) {
  torch::jit::Module jit = scriptModule(kNormBetweenOps);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 8, 8});
  const std::vector<c10::IValue> args = withStatistics(x);
  const c10::IValue expected = runJit(jit, args);

  EXPECT_EQ(compareIValues(expected, runtime(args)), "");
  ModuleStats stats = runtime.stats();
  // The first request came from the fallback buffer; the plan made after the run holds it.
  EXPECT_EQ(stats.unplanned_scratch_requests, 1u);
  EXPECT_EQ(stats.planned_scratch_blocks, 1u);
  EXPECT_EQ(stats.planned_scratch_bytes, scratchBytes(x));
  EXPECT_GE(stats.unplanned_scratch_bytes, scratchBytes(x)) << "the buffer that served it";
  EXPECT_GE(stats.managed_bytes, stats.managed_lower_bound_bytes);
  const std::string plan = runtime.memoryPlan();
  EXPECT_NE(plan.find("scratch aten::batch_norm"), std::string::npos) << plan;
  EXPECT_NE(plan.find("1 scratch blocks"), std::string::npos) << plan;
  EXPECT_EQ(runtime.verifyMemoryPlan(), "") << plan;

  std::vector<c10::IValue> outputs;
  outputs.reserve(19);
  {
    AllocationCounter counter;
    for (int run = 2; run <= 20; ++run) {
      outputs.push_back(runtime(args));
    }
    // Only the returned tensor: intermediates and scratch come from the arena.
    EXPECT_EQ(counter.allocations(), 19u);
  }
  for (const c10::IValue& output : outputs) {
    EXPECT_EQ(compareIValues(expected, output), "");
  }
  stats = runtime.stats();
  EXPECT_EQ(stats.unplanned_scratch_requests, 1u) << "a steady-state request missed the plan";
  EXPECT_EQ(stats.unplanned_scratch_bytes, 0u) << "the plan serves it: the buffer is freed";
  EXPECT_EQ(stats.arena_reallocations, 1u);
  EXPECT_EQ(runtime.verifyMemoryPlan(), "");
}

TEST(ScratchPlanning, LargerRequestsReplanOnceAndSmallerOnesFitTheBlock) {
  torch::jit::Module jit = scriptModule(kNormBetweenOps);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor small = torch::randn({1, 2, 6, 6});
  const at::Tensor large = torch::randn({4, 3, 16, 16});
  for (const at::Tensor& x : {small, small, large}) {
    const std::vector<c10::IValue> args = withStatistics(x);
    EXPECT_EQ(compareIValues(runJit(jit, args), runtime(args)), "");
  }
  ModuleStats stats = runtime.stats();
  EXPECT_EQ(stats.unplanned_scratch_requests, 2u) << "the small size, then the large one";
  EXPECT_EQ(stats.planned_scratch_bytes, scratchBytes(large));
  const size_t reallocations = stats.arena_reallocations;
  for (const at::Tensor& x : {small, large, small, large, small}) {
    const std::vector<c10::IValue> args = withStatistics(x);
    EXPECT_EQ(compareIValues(runJit(jit, args), runtime(args)), "");
    EXPECT_EQ(runtime.verifyMemoryPlan(), "");
  }
  stats = runtime.stats();
  EXPECT_EQ(stats.unplanned_scratch_requests, 2u);
  EXPECT_EQ(stats.arena_reallocations, reallocations);
}

TEST(ScratchPlanning, NodesInsideLoopBodiesGetPlannedScratchToo) {
  torch::jit::Module jit = scriptModule(kNormInLoop);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 5, 5});
  const std::vector<c10::IValue> args = withStatistics(x, {3});
  const c10::IValue expected = runJit(jit, args);
  EXPECT_EQ(compareIValues(expected, runtime(args)), "");
  // Every iteration of the first run used the fallback buffer.
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 3u);
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 1u);
  EXPECT_NE(runtime.memoryPlan().find("(in a sub-block)"), std::string::npos)
      << runtime.memoryPlan();
  for (int run = 2; run <= 5; ++run) {
    EXPECT_EQ(compareIValues(expected, runtime(args)), "") << "run " << run;
  }
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 3u);
  EXPECT_EQ(runtime.verifyMemoryPlan(), "") << runtime.memoryPlan();
}

TEST(ScratchPlanning, WithoutAPlannerScratchComesFromTheFallbackBuffer) {
  torch::jit::Module jit = scriptModule(kNormBetweenOps);
  StaticModuleOptions options;
  options.optimize_memory = false;
  StaticModule module(jit, options);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 8, 8});
  const std::vector<c10::IValue> args = withStatistics(x);
  const c10::IValue expected = runJit(jit, args);
  for (int run = 1; run <= 3; ++run) {
    EXPECT_EQ(compareIValues(expected, runtime(args)), "");
  }
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 0u);
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 3u);
}

TEST(ScratchPlanning, ReleasedMemoryIsLearnedAgain) {
  torch::jit::Module jit = scriptModule(kNormBetweenOps);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 8, 8});
  const std::vector<c10::IValue> args = withStatistics(x);
  const c10::IValue expected = runJit(jit, args);
  (void)runtime(args);
  runtime.releaseMemory();
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 0u);
  EXPECT_EQ(compareIValues(expected, runtime(args)), "");
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 1u);
  EXPECT_EQ(compareIValues(expected, runtime(args)), "");
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 2u);
}

TEST(ScratchPlanning, ResultsMatchTheJitUnderEveryOptionSet) {
  expectMatchesJit(kNormBetweenOps, {{withStatistics(torch::randn({2, 3, 8, 8})), {}},
                                     {withStatistics(torch::randn({3, 1, 12, 10})), {}}});
  expectMatchesJit(kNormInLoop, {{withStatistics(torch::randn({1, 2, 4, 4}), {2}), {}},
                                 {withStatistics(torch::randn({2, 2, 7, 6}), {4}), {}}});
}

} // namespace
} // namespace srt::testing
