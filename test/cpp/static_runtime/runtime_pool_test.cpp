// RuntimePool, runAsync and RuntimeOptions: many threads, one module.
#include <atomic>
#include <chrono>
#include <thread>

#include <ATen/Parallel.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/library.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/zoo.h"

// Reports the intra-op thread count the calling thread sees while a runtime runs it.
TORCH_LIBRARY_FRAGMENT(srt_test, m) {
  m.def(torch::schema("srt_test::intra_op_threads(Tensor x) -> int",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        [](const at::Tensor&) -> int64_t { return at::get_num_threads(); });
}

namespace srt::testing {
namespace {

using std::chrono::milliseconds;

std::shared_ptr<torch::jit::Graph> threadCountGraph() {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %n : int = srt_test::intra_op_threads(%x)
  return (%n)
)IR",
                      graph.get());
  return graph;
}

const char* kAffine = R"JIT(
def forward(self, x, w, b):
    return torch.addmm(b, x, w.t())
)JIT";

StaticModule& linearModule() {
  static StaticModule module(scriptModule(kAffine));
  return module;
}

std::vector<c10::IValue> linearArgs(int64_t rows) {
  return {torch::randn({rows, 4}), torch::randn({3, 4}), torch::randn({3})};
}

TEST(RuntimePool, CreatesRuntimesLazilyUpToItsSize) {
  RuntimePool pool(linearModule(), 2);
  EXPECT_EQ(pool.numCreated(), 0u);
  {
    auto first = pool.acquire();
    EXPECT_EQ(pool.numCreated(), 1u);
    auto second = pool.acquire();
    EXPECT_EQ(pool.numCreated(), 2u);
  }
  auto again = pool.acquire();
  EXPECT_EQ(pool.numCreated(), 2u) << "a returned runtime is reused";
}

TEST(RuntimePool, TimesOutWithAClearErrorWhenAllRuntimesAreBusy) {
  RuntimePool pool(linearModule(), 1);
  auto held = pool.acquire();
  EXPECT_THAT([&] { (void)pool.acquire(milliseconds(20)); },
              ::testing::ThrowsMessage<c10::Error>(
                  ::testing::HasSubstr("all 1 runtimes stayed busy for 20 ms")));
}

TEST(RuntimePool, BlocksUntilARuntimeIsReturned) {
  RuntimePool pool(linearModule(), 1);
  std::optional<RuntimePool::Lease> held(pool.acquire());
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    auto lease = pool.acquire();
    acquired = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(acquired) << "acquire() must block while the only runtime is lent out";
  held.reset();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_EQ(pool.numCreated(), 1u);
}

TEST(RuntimePool, ReturnsTheRuntimeWhenTheRunThrows) {
  RuntimePool pool(linearModule(), 1);
  EXPECT_THROW((void)pool.run({torch::randn({2, 4})}), c10::Error); // too few arguments
  // The only runtime is back, and works.
  auto args = linearArgs(2);
  const at::Tensor expected =
      torch::linear(args[0].toTensor(), args[1].toTensor(), args[2].toTensor());
  auto lease = pool.acquire(milliseconds(0));
  EXPECT_TRUE(torch::allclose(lease.runtime()(args).toTensor(), expected));
}

TEST(RuntimePool, RunAsyncCompletesTheFutureWithTheOutputs) {
  auto args = linearArgs(5);
  const at::Tensor expected =
      torch::linear(args[0].toTensor(), args[1].toTensor(), args[2].toTensor());
  auto future = linearModule().runAsync(args);
  future->wait();
  ASSERT_FALSE(future->hasError()) << future->tryRetrieveErrorMessage();
  EXPECT_TRUE(torch::allclose(future->value().toTensor(), expected));
}

TEST(RuntimePool, RunAsyncDeliversErrorsThroughTheFuture) {
  std::vector<std::function<void()>> tasks;
  auto future = linearModule().runAsync(
      {torch::randn({2, 4}), torch::randn({3, 5})}, {},
      [&tasks](std::function<void()> task) { tasks.push_back(std::move(task)); });
  EXPECT_FALSE(future->completed()) << "the launcher decides when the run happens";
  ASSERT_EQ(tasks.size(), 1u);
  tasks.front()();
  ASSERT_TRUE(future->completed());
  ASSERT_TRUE(future->hasError());
  EXPECT_THAT(future->tryRetrieveErrorMessage(), ::testing::HasSubstr("argument"));
}

TEST(RuntimeOptions, RejectsNegativeThreadCounts) {
  RuntimeOptions options;
  options.intra_op_threads = -1;
  EXPECT_THAT([&] { StaticRuntime runtime(linearModule(), options); },
              ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("intra_op_threads")));
}

TEST(RuntimeOptions, ThreadCountsApplyPerRuntimeAndAreRestored) {
  StaticModule module(threadCountGraph());
  const int caller_threads = at::get_num_threads();
  auto runWith = [&module](int threads, std::atomic<int>& mismatches) {
    const int before = at::get_num_threads();
    RuntimeOptions options;
    options.intra_op_threads = threads;
    StaticRuntime runtime(module, options);
    for (int i = 0; i < 200; ++i) {
      mismatches += runtime({torch::ones({1})}).toInt() != threads;
    }
    mismatches += at::get_num_threads() != before;
  };
  std::atomic<int> mismatches{0};
  std::thread one([&] { runWith(1, mismatches); });
  std::thread two([&] { runWith(2, mismatches); });
  one.join();
  two.join();
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(at::get_num_threads(), caller_threads) << "the caller's setting must not change";

  // Changeable between runs of one instance; 0 leaves the caller's count.
  StaticRuntime runtime(module);
  EXPECT_EQ(runtime({torch::ones({1})}).toInt(), caller_threads);
  runtime.setOptions({/*intra_op_threads=*/3});
  EXPECT_EQ(runtime({torch::ones({1})}).toInt(), 3);
  EXPECT_EQ(at::get_num_threads(), caller_threads);
}

// The [5/7] stress test: 8 threads share one module through pools of 1, 2 and 4 runtimes, with
// shapes changing from run to run; every result must equal the single-threaded one exactly.
TEST(RuntimePool, EightThreadsGetSingleThreadedResults) {
  for (const std::string name : {"mlp", "transformer_block"}) {
    SCOPED_TRACE(name);
    StaticModule module(loadZooModel(name));
    const std::vector<InputSet> inputs = loadZooInputs(name);
    RuntimeOptions one_thread;
    one_thread.intra_op_threads = 1;
    std::vector<at::Tensor> expected;
    {
      StaticRuntime reference(module, one_thread);
      for (const InputSet& set : inputs) {
        expected.push_back(reference(set.args, set.kwargs).toTensor());
      }
    }
    for (size_t pool_size : {1, 2, 4}) {
      RuntimePool pool(module, pool_size, one_thread);
      std::atomic<int> wrong{0};
      std::vector<std::thread> clients;
      for (int client = 0; client < 8; ++client) {
        clients.emplace_back([&, client] {
          for (int run = 0; run < 1000; ++run) {
            const size_t set = (client + run) % inputs.size();
            const at::Tensor output = pool.run(inputs[set].args, inputs[set].kwargs).toTensor();
            wrong += !torch::equal(output, expected[set]);
          }
        });
      }
      for (std::thread& client : clients) {
        client.join();
      }
      EXPECT_EQ(wrong, 0) << "pool of " << pool_size;
      EXPECT_LE(pool.numCreated(), pool_size);
    }
  }
}

} // namespace
} // namespace srt::testing
