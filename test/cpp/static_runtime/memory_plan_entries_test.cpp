// StaticRuntime::memoryPlanEntries: the memory plan as data agrees with the planner's text dump
// and is a valid placement.
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "memory/offset_assignment.h"
#include "static_runtime/program.h"

namespace srt::testing {
namespace {

// Managed intermediates, and batch_norm's folded statistics as kernel scratch (of the
// srt::batch_norm_activation node batch_norm and tanh become).
constexpr const char* kNormBetweenOps = R"JIT(
def forward(self, x, mean, var):
    y = torch.relu(x)
    z = torch.batch_norm(y, None, None, mean, var, False, 0.1, 1e-5, False)
    w = torch.tanh(z)
    return w + 1
)JIT";

TEST(MemoryPlanEntries, EmptyBeforeTheFirstRunAndWithoutAPlanner) {
  StaticModule module(scriptModule(kNormBetweenOps));
  StaticRuntime runtime(module);
  EXPECT_TRUE(runtime.memoryPlanEntries().empty());
  StaticModuleOptions options;
  options.optimize_memory = false;
  StaticModule unplanned(scriptModule(kNormBetweenOps), options);
  StaticRuntime unplanned_runtime(unplanned);
  (void)unplanned_runtime({torch::randn({2, 3, 8, 8}), torch::randn({3}), torch::rand({3}) + 0.5});
  EXPECT_TRUE(unplanned_runtime.memoryPlanEntries().empty());
}

TEST(MemoryPlanEntries, ListTheDumpedBuffersAsAValidPlacement) {
  StaticModule module(scriptModule(kNormBetweenOps));
  StaticRuntime runtime(module);
  (void)runtime({torch::randn({2, 3, 8, 8}), torch::randn({3}), torch::rand({3}) + 0.5});
  const std::vector<MemoryPlanEntry> entries = runtime.memoryPlanEntries();
  const std::string dump = runtime.memoryPlan();
  const ModuleStats stats = runtime.stats();
  ASSERT_FALSE(entries.empty()) << dump;

  size_t tensors = 0;
  size_t scratch = 0;
  const size_t num_nodes = module.program().blocks.front().nodes.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const MemoryPlanEntry& entry = entries[i];
    EXPECT_GT(entry.bytes, 0u) << entry.name;
    EXPECT_EQ(entry.offset % memory::kAlignment, 0u) << entry.name;
    EXPECT_LE(entry.offset + entry.bytes, stats.managed_bytes) << entry.name;
    EXPECT_LE(entry.first_node, entry.last_node) << entry.name;
    EXPECT_LT(entry.last_node, num_nodes) << entry.name;
    if (i > 0) {
      EXPECT_LE(entries[i - 1].offset, entry.offset) << "sorted by offset";
    }
    if (entry.kind == MemoryPlanEntry::Kind::kTensor) {
      ++tensors;
      EXPECT_NE(dump.find("%" + entry.name), std::string::npos) << entry.name << "\n" << dump;
    } else {
      ++scratch;
      EXPECT_EQ(entry.first_node, entry.last_node) << entry.name;
      EXPECT_NE(dump.find("scratch " + entry.name), std::string::npos) << entry.name << "\n"
                                                                       << dump;
      EXPECT_EQ(entry.name.rfind("srt::batch_norm_activation", 0), 0u) << entry.name;
    }
    // No two buffers live at the same node share bytes.
    for (size_t j = 0; j < i; ++j) {
      const MemoryPlanEntry& other = entries[j];
      const bool same_time =
          entry.first_node <= other.last_node && other.first_node <= entry.last_node;
      const bool same_bytes =
          entry.offset < other.offset + other.bytes && other.offset < entry.offset + entry.bytes;
      EXPECT_FALSE(same_time && same_bytes) << entry.name << " and " << other.name;
    }
  }
  EXPECT_EQ(scratch, stats.planned_scratch_blocks);
  EXPECT_EQ(std::string(toString(MemoryPlanEntry::Kind::kTensor)), "tensor");
  EXPECT_EQ(std::string(toString(MemoryPlanEntry::Kind::kScratch)), "scratch");
  EXPECT_NE(dump.find(std::to_string(tensors) + " managed tensors and " + std::to_string(scratch) +
                      " scratch blocks hold memory"),
            std::string::npos)
      << dump;
}

} // namespace
} // namespace srt::testing
