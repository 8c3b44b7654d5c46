// Profiler events (static_runtime/profiler_events.h): one at::RecordFunction per executed node,
// named by its kind, and one "forward" per run, only while an observer is active.
#include <map>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "scripts.h"
#include "static_runtime/benchmark.h"
#include "static_runtime/profiler_events.h"
#include "static_runtime/program.h"

namespace srt::testing {
namespace {

struct Event {
  std::string name;
  at::RecordScope scope;
  size_t num_inputs;
  bool out_variant;
};

// Start callbacks are plain function pointers: they append here. Tests run on one thread and the
// observer is thread-local.
std::vector<Event>& recorded() {
  static std::vector<Event> events;
  return events;
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& event) {
  recorded().push_back({event.name(), event.scope(),
                        event.needsInputs() ? event.inputs().size() : 0,
                        event.isStaticRuntimeOutVariant()});
  return nullptr;
}

// A thread-local observer of the Static Runtime scopes for the lifetime of the object, as
// torch.profiler installs one.
class ScopedObserver {
public:
  explicit ScopedObserver(bool needs_inputs = false) {
    recorded().clear();
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&onStart)
            .needsInputs(needs_inputs)
            .scopes({at::RecordScope::STATIC_RUNTIME_OP, at::RecordScope::STATIC_RUNTIME_MODEL}));
  }
  ~ScopedObserver() { at::removeCallback(handle_); }
  ScopedObserver(const ScopedObserver&) = delete;
  ScopedObserver& operator=(const ScopedObserver&) = delete;

private:
  at::CallbackHandle handle_;
};

std::vector<Event> nodeEvents() {
  std::vector<Event> nodes;
  for (const Event& event : recorded()) {
    if (event.scope == at::RecordScope::STATIC_RUNTIME_OP) {
      nodes.push_back(event);
    }
  }
  return nodes;
}

constexpr const char* kMlp = R"JIT(
def forward(self, x, w1, w2):
    h = torch.relu(torch.mm(x, w1))
    return torch.mm(h, w2).sum(1)
)JIT";

std::vector<c10::IValue> mlpInputs() {
  return {torch::randn({4, 16}), torch::randn({16, 32}), torch::randn({32, 8})};
}

TEST(ProfilerEvents, OneEventPerNodeInProgramOrderNamedByKind) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  ScopedObserver observer;
  (void)runtime(mlpInputs());

  const std::vector<ops::StaticNodeInfo>& nodes = module.program().blocks.front().nodes;
  const std::vector<Event> events = nodeEvents();
  ASSERT_EQ(events.size(), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(events[i].name, nodes[i].node->kind().toQualString()) << "node " << i;
    EXPECT_EQ(events[i].out_variant, nodes[i].kernel.kind == ops::KernelKind::kOutVariant)
        << events[i].name;
  }
  // The run's own event comes first and spans the nodes.
  ASSERT_FALSE(recorded().empty());
  EXPECT_EQ(recorded().front().name, "forward");
  EXPECT_EQ(recorded().front().scope, at::RecordScope::STATIC_RUNTIME_MODEL);
  EXPECT_EQ(recorded().size(), nodes.size() + 1);
}

TEST(ProfilerEvents, SubBlockNodesRecordOncePerExecution) {
  StaticModule module(scriptModule(scripts::kLoopOnValue));
  StaticRuntime runtime(module);
  const int n = 3;
  // The for loop's body runs n times; the while loop's (k = 0, 3 < 2n) twice.
  const std::vector<int> iterations = {n, 2};
  std::map<std::string, int> expected;
  size_t loop = 0;
  const Program& program = module.program();
  for (const ops::StaticNodeInfo& node : program.blocks.front().nodes) {
    ++expected[node.node->kind().toQualString()];
    if (node.node->kind() == c10::Symbol::fromQualString("prim::Loop")) {
      ASSERT_LT(loop, iterations.size());
      ASSERT_EQ(node.sub_blocks.size(), 1u);
      for (const ops::StaticNodeInfo& inner : program.blocks[node.sub_blocks[0]].nodes) {
        ASSERT_TRUE(inner.sub_blocks.empty()) << "the loops' bodies have no control flow";
        expected[inner.node->kind().toQualString()] += iterations[loop];
      }
      ++loop;
    }
  }
  ASSERT_EQ(loop, iterations.size());

  ScopedObserver observer;
  (void)runtime({torch::randn({4}), n});
  std::map<std::string, int> actual;
  for (const Event& event : nodeEvents()) {
    ++actual[event.name];
  }
  EXPECT_EQ(actual, expected);
}

TEST(ProfilerEvents, InputsOnlyWhenTheObserverAsks) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  const std::vector<ops::StaticNodeInfo>& nodes = module.program().blocks.front().nodes;
  {
    ScopedObserver observer(/*needs_inputs=*/true);
    (void)runtime(mlpInputs());
    const std::vector<Event> events = nodeEvents();
    ASSERT_EQ(events.size(), nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_EQ(events[i].num_inputs, nodes[i].inputs.size()) << events[i].name;
    }
    EXPECT_EQ(recorded().front().num_inputs, 3u) << "the run event carries forward's arguments";
  }
  {
    ScopedObserver observer(/*needs_inputs=*/false);
    (void)runtime(mlpInputs());
    for (const Event& event : recorded()) {
      EXPECT_EQ(event.num_inputs, 0u) << event.name;
    }
  }
}

TEST(ProfilerEvents, NothingWithoutAnObserverOrWithProfilingOff) {
  StaticModule module(scriptModule(kMlp));
  EXPECT_FALSE(nodeEventsWanted());
  {
    ScopedObserver observer;
    EXPECT_TRUE(nodeEventsWanted());
    RuntimeOptions options;
    options.profiling = false;
    StaticRuntime runtime(module, options);
    (void)runtime(mlpInputs());
    EXPECT_TRUE(recorded().empty()) << recorded().size() << " events, first " << recorded()[0].name;
    // Switched on between runs.
    options.profiling = true;
    runtime.setOptions(options);
    (void)runtime(mlpInputs());
    EXPECT_EQ(nodeEvents().size(), module.program().blocks.front().nodes.size());
  }
  EXPECT_FALSE(nodeEventsWanted());
  recorded().clear();
  StaticRuntime runtime(module);
  (void)runtime(mlpInputs());
  EXPECT_TRUE(recorded().empty());
}

TEST(ProfilerEvents, TimedRunsRecordTheSameEvents) {
  StaticModule module(scriptModule(kMlp));
  StaticRuntime runtime(module);
  ScopedObserver observer;
  RunTimes times;
  (void)runtime.timedRun(mlpInputs(), {}, times);
  const std::vector<Event> timed = nodeEvents();
  recorded().clear();
  (void)runtime(mlpInputs());
  const std::vector<Event> plain = nodeEvents();
  ASSERT_EQ(timed.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(timed[i].name, plain[i].name);
  }
}

} // namespace
} // namespace srt::testing
