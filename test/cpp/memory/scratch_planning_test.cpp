// Kernel scratch through the memory planner: a node's scratch request is learned on the first
// run, placed in the arena for that node's step only, and served from there afterwards with no
// allocation. max_pool2d's indices are such scratch (ops/conv_pool.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "memory/allocation_counter.h"

namespace srt::testing {
namespace {

constexpr const char* kPoolBetweenOps = R"JIT(
def forward(self, x):
    y = torch.relu(x)
    z = torch.max_pool2d(y, [2, 2])
    return z + 1
)JIT";

// Every iteration pools with a shape-preserving window, so each one asks for scratch.
constexpr const char* kPoolInLoop = R"JIT(
def forward(self, x, n: int):
    y = x * 2
    for i in range(n):
        y = torch.max_pool2d(y, [3, 3], [1, 1], [1, 1]) + x
    return y.relu()
)JIT";

c10::IValue runJit(torch::jit::Module& module, std::vector<c10::IValue> args) {
  torch::NoGradGuard no_grad;
  return module.forward(std::move(args));
}

// Indices of an [N, C, H/2, W/2] pooling result: int64 each.
size_t indicesBytes(const at::Tensor& x) {
  return static_cast<size_t>(x.size(0) * x.size(1) * (x.size(2) / 2) * (x.size(3) / 2)) * 8;
}

TEST(ScratchPlanning, PoolIndicesLiveInTheArenaFromTheSecondRun) {
  torch::jit::Module jit = scriptModule(kPoolBetweenOps);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 8, 8});
  const c10::IValue expected = runJit(jit, {x});

  EXPECT_EQ(compareIValues(expected, runtime({x})), "");
  ModuleStats stats = runtime.stats();
  // The first request came from the fallback buffer; the plan made after the run holds it.
  EXPECT_EQ(stats.unplanned_scratch_requests, 1u);
  EXPECT_EQ(stats.planned_scratch_blocks, 1u);
  EXPECT_EQ(stats.planned_scratch_bytes, indicesBytes(x));
  EXPECT_GE(stats.managed_bytes, stats.managed_lower_bound_bytes);
  const std::string plan = runtime.memoryPlan();
  EXPECT_NE(plan.find("scratch aten::max_pool2d"), std::string::npos) << plan;
  EXPECT_NE(plan.find("1 scratch blocks"), std::string::npos) << plan;
  EXPECT_EQ(runtime.verifyMemoryPlan(), "") << plan;

  std::vector<c10::IValue> outputs;
  outputs.reserve(19);
  {
    AllocationCounter counter;
    for (int run = 2; run <= 20; ++run) {
      outputs.push_back(runtime({x}));
    }
    // Only the returned tensor: intermediates and scratch come from the arena.
    EXPECT_EQ(counter.allocations(), 19u);
  }
  for (const c10::IValue& output : outputs) {
    EXPECT_EQ(compareIValues(expected, output), "");
  }
  stats = runtime.stats();
  EXPECT_EQ(stats.unplanned_scratch_requests, 1u) << "a steady-state request missed the plan";
  EXPECT_EQ(stats.arena_reallocations, 1u);
  EXPECT_EQ(runtime.verifyMemoryPlan(), "");
}

TEST(ScratchPlanning, LargerRequestsReplanOnceAndSmallerOnesFitTheBlock) {
  torch::jit::Module jit = scriptModule(kPoolBetweenOps);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor small = torch::randn({1, 2, 6, 6});
  const at::Tensor large = torch::randn({4, 3, 16, 16});
  for (const at::Tensor& x : {small, small, large}) {
    EXPECT_EQ(compareIValues(runJit(jit, {x}), runtime({x})), "");
  }
  ModuleStats stats = runtime.stats();
  EXPECT_EQ(stats.unplanned_scratch_requests, 2u) << "the small size, then the large one";
  EXPECT_EQ(stats.planned_scratch_bytes, indicesBytes(large));
  const size_t reallocations = stats.arena_reallocations;
  for (const at::Tensor& x : {small, large, small, large, small}) {
    EXPECT_EQ(compareIValues(runJit(jit, {x}), runtime({x})), "");
    EXPECT_EQ(runtime.verifyMemoryPlan(), "");
  }
  stats = runtime.stats();
  EXPECT_EQ(stats.unplanned_scratch_requests, 2u);
  EXPECT_EQ(stats.arena_reallocations, reallocations);
}

TEST(ScratchPlanning, NodesInsideLoopBodiesGetPlannedScratchToo) {
  torch::jit::Module jit = scriptModule(kPoolInLoop);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 5, 5});
  const c10::IValue expected = runJit(jit, {x, 3});
  EXPECT_EQ(compareIValues(expected, runtime({x, 3})), "");
  // Every iteration of the first run used the fallback buffer.
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 3u);
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 1u);
  EXPECT_NE(runtime.memoryPlan().find("(in a sub-block)"), std::string::npos)
      << runtime.memoryPlan();
  for (int run = 2; run <= 5; ++run) {
    EXPECT_EQ(compareIValues(expected, runtime({x, 3})), "") << "run " << run;
  }
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 3u);
  EXPECT_EQ(runtime.verifyMemoryPlan(), "") << runtime.memoryPlan();
}

TEST(ScratchPlanning, WithoutAPlannerScratchComesFromTheFallbackBuffer) {
  torch::jit::Module jit = scriptModule(kPoolBetweenOps);
  StaticModuleOptions options;
  options.optimize_memory = false;
  StaticModule module(jit, options);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 8, 8});
  const c10::IValue expected = runJit(jit, {x});
  for (int run = 1; run <= 3; ++run) {
    EXPECT_EQ(compareIValues(expected, runtime({x})), "");
  }
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 0u);
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 3u);
}

TEST(ScratchPlanning, ReleasedMemoryIsLearnedAgain) {
  torch::jit::Module jit = scriptModule(kPoolBetweenOps);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const at::Tensor x = torch::randn({2, 3, 8, 8});
  const c10::IValue expected = runJit(jit, {x});
  (void)runtime({x});
  runtime.releaseMemory();
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 0u);
  EXPECT_EQ(compareIValues(expected, runtime({x})), "");
  EXPECT_EQ(runtime.stats().planned_scratch_blocks, 1u);
  EXPECT_EQ(compareIValues(expected, runtime({x})), "");
  EXPECT_EQ(runtime.stats().unplanned_scratch_requests, 2u);
}

TEST(ScratchPlanning, ResultsMatchTheJitUnderEveryOptionSet) {
  expectMatchesJit(kPoolBetweenOps,
                   {{{torch::randn({2, 3, 8, 8})}, {}}, {{torch::randn({3, 1, 12, 10})}, {}}});
  expectMatchesJit(kPoolInLoop,
                   {{{torch::randn({1, 2, 4, 4}), 2}, {}}, {{torch::randn({2, 2, 7, 6}), 4}, {}}});
}

} // namespace
} // namespace srt::testing
