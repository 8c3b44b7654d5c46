// After the first runs, a runtime at fixed shapes allocates nothing for intermediates: the
// planner's arena holds them. Counted with a wrapper around the CPU allocator.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/zoo.h"
#include "memory/allocation_counter.h"

namespace srt::testing {
namespace {

class SteadyState : public ::testing::TestWithParam<std::string> {};

// Runs 3..100 allocate nothing but the outputs the caller receives.
TEST_P(SteadyState, AllocatesOnlyOutputsAfterWarmUp) {
  const std::string& name = GetParam();
  StaticModule module(loadZooModel(name));
  StaticRuntime runtime(module);
  const InputSet inputs = loadZooInputs(name).front();
  const size_t outputs_per_run = countTensors(runtime(inputs.args, inputs.kwargs));
  (void)runtime(inputs.args, inputs.kwargs);

  AllocationCounter counter;
  for (int run = 3; run <= 100; ++run) {
    (void)runtime(inputs.args, inputs.kwargs);
  }
  EXPECT_EQ(counter.allocations(), 98 * outputs_per_run)
      << name << ": " << module.stats().fallback_nodes << " fallback nodes";
}

// With manage_output_tensors even the outputs come from the runtime's arena.
TEST_P(SteadyState, AllocatesNothingWithManagedOutputs) {
  const std::string& name = GetParam();
  StaticModuleOptions options;
  options.manage_output_tensors = true;
  StaticModule module(loadZooModel(name), options);
  StaticRuntime runtime(module);
  const InputSet inputs = loadZooInputs(name).front();
  for (int run = 1; run <= 2; ++run) {
    (void)runtime(inputs.args, inputs.kwargs);
    runtime.deallocateOutputTensors();
  }
  AllocationCounter counter;
  for (int run = 3; run <= 100; ++run) {
    (void)runtime(inputs.args, inputs.kwargs);
    runtime.deallocateOutputTensors();
  }
  EXPECT_EQ(counter.allocations(), 0u) << name;
}

// The creation, normalization, padding and rearrangement out-variants of the torchvision and
// torchaudio models (Swin, wav2vec2, ConvTasNet, WaveRNN) write into planned memory too.
TEST(SteadyStateKernels, AudioAndWindowKernelsAllocateNothingWithManagedOutputs) {
  StaticModuleOptions options;
  options.manage_output_tensors = true;
  StaticModule module(scriptModule(R"JIT(
def forward(self, x, w):
    n = x.size(0)
    z = torch.zeros(n, 4, 6, device=x.device, dtype=x.dtype)
    g = torch.group_norm(x + z, 2, w, w)
    a = torch.glu(torch.prelu(g, w), 1)
    p = torch.pad(a, [1, 2, 0, 1])
    r = torch.roll(p, [1, -2], [1, 2])
    s = torch.repeat_interleave(r, 2, 1)
    m = torch.max(s, 2)
    c = torch.cumsum(s, 1)
    return m[0], m[1], c, x.new_zeros([n, 4, 6]), torch.tensor(n)
)JIT"),
                      options);
  EXPECT_EQ(module.stats().fallback_nodes, 0u);
  StaticRuntime runtime(module);
  const std::vector<c10::IValue> args = {torch::randn({2, 4, 6}), torch::rand({4})};
  for (int run = 1; run <= 2; ++run) {
    (void)runtime(args);
    runtime.deallocateOutputTensors();
  }
  AllocationCounter counter;
  for (int run = 3; run <= 20; ++run) {
    (void)runtime(args);
    runtime.deallocateOutputTensors();
  }
  EXPECT_EQ(counter.allocations(), 0u);
}

// transformer_block at its first zoo shape (1x16x64): its merge-heads reshape, which cannot be a
// view, is absorbed by multi_head_attention_fusion (or becomes a planned reshape_copy).
INSTANTIATE_TEST_SUITE_P(Models, SteadyState,
                         ::testing::Values("mlp", "deep_and_wide", "transformer_block"));

} // namespace
} // namespace srt::testing
