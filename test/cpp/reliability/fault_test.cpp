// Faults in the middle of a run: a kernel that throws between planned intermediates, and an arena
// that cannot grow. Either way the caller gets a c10::Error that says what failed, its tensors are
// untouched, and the runtime (its arena and plan included) serves the next run correctly.
#include <chrono>
#include <limits>
#include <stdexcept>

#include <c10/core/CPUAllocator.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/library.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "ops/core/out_variant.h"
#include "ops/core/registry.h"

namespace srt::testing {
namespace {

// srt_test::throw_if(x, when) is x + 1, unless `when` asks it to fail: 1 throws a c10::Error,
// 2 a std::runtime_error. Our kernel fails only after writing NaN over its planned output, as a
// kernel dying halfway would; the JIT's reference fails the same way, so both agree on results.
void throwIfAsked(int64_t when) {
  TORCH_CHECK(when != 1, "srt_test::throw_if asked to fail (when=1)");
  if (when == 2) {
    throw std::runtime_error("srt_test::throw_if asked to fail (when=2)");
  }
}

at::Tensor throwIfReference(const at::Tensor& x, int64_t when) {
  throwIfAsked(when);
  return x + 1;
}

void throwIfKernel(ops::ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const int64_t when = p.input(1).toInt();
  at::Tensor& out = ops::outputTensorLike(p, 0, x);
  out.resize_(x.sizes());
  if (when != 0) {
    out.fill_(std::numeric_limits<float>::quiet_NaN());
    throwIfAsked(when);
  }
  at::add_out(out, x, at::ones({}, x.options()));
}

TORCH_LIBRARY_FRAGMENT(srt_test, m) {
  m.def(torch::schema("srt_test::throw_if(Tensor x, int when) -> Tensor",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        throwIfReference);
}

SRT_REGISTER_KERNEL("srt_test::throw_if", kOutVariant,
                    [](const torch::jit::Node*, const ops::KernelOptions&)
                        -> std::optional<ops::KernelFunction> { return throwIfKernel; });

// IR rather than TorchScript source: C++-compiled TorchScript cannot call torch.ops.srt_test.
// throw_if sits between planned intermediates: `a` and `b` are live across it, `c` and `d` are
// planned after it, so a failure leaves some slots written this run and some from the last.
constexpr const char* kThrowsMidRun = R"IR(
graph(%x : Tensor, %when : int):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::matmul(%x, %x)
  %b : Tensor = aten::softmax(%a, %one, %none)
  %c : Tensor = srt_test::throw_if(%b, %when)
  %d : Tensor = aten::matmul(%c, %a)
  %e : Tensor = aten::tanh(%d)
  %f : Tensor = aten::add(%e, %b, %one)
  return (%f)
)IR";

// Looks in place: writes into a view of an input's clone, a transposed view of an input passes
// through the failing op, and in-place ops follow it. The caller's x and y must stay untouched.
constexpr const char* kInPlaceLooking = R"IR(
graph(%x : Tensor, %y : Tensor, %when : int):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %minus_one : int = prim::Constant[value=-1]()
  %flat_shape : int[] = prim::ListConstruct(%minus_one)
  %flat : Tensor = aten::view(%x, %flat_shape)
  %w0 : Tensor = aten::clone(%flat, %none)
  %w1 : Tensor = aten::add_(%w0, %one, %one)
  %w2 : Tensor = aten::relu_(%w1)
  %xt : Tensor = aten::t(%x)
  %v0 : Tensor = srt_test::throw_if(%xt, %when)
  %yt : Tensor = aten::t(%y)
  %v1 : Tensor = aten::mul_(%v0, %yt)
  %w3 : Tensor = srt_test::throw_if(%w2, %when)
  %w4 : Tensor = aten::mul_(%w3, %two)
  %size : int[] = aten::size(%x)
  %w5 : Tensor = aten::view(%w4, %size)
  %vt : Tensor = aten::t(%v1)
  %out : Tensor = aten::add(%w5, %vt, %one)
  return (%out)
)IR";

c10::IValue runJit(const std::shared_ptr<torch::jit::Graph>& graph,
                   const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> copies;
  for (const c10::IValue& arg : args) {
    copies.push_back(deepClone(arg));
  }
  return runWithJit(graph, copies).at(0);
}

std::vector<c10::IValue> withWhen(std::vector<c10::IValue> args, int64_t when) {
  args.back() = when;
  return args;
}

// Runs `args` with when=0 twice (sizes learned, then planned), then fails with each way of
// failing, checking after each failure what the header promises, then runs `other_args` and
// `args` again against the JIT.
void expectFaultsLeaveTheRuntimeIntact(const std::string& ir, std::vector<c10::IValue> args,
                                       std::vector<c10::IValue> other_args,
                                       const StaticModuleOptions& options) {
  SCOPED_TRACE(describe(options));
  std::shared_ptr<torch::jit::Graph> jit = parsedGraph(ir);
  const c10::IValue expected = runJit(jit, args);
  const c10::IValue other_expected = runJit(jit, other_args);
  StaticModule module(jit, options);
  StaticRuntime runtime(module);
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(compareIValues(expected, runtime(args)), "");
    runtime.deallocateOutputTensors();
  }
  if (options.optimize_memory) {
    ASSERT_GT(runtime.stats().managed_bytes, 0u) << "the intermediates around throw_if are planned";
  }

  for (int64_t when : {1, 2}) {
    const std::string plan = runtime.memoryPlan();
    const ModuleStats stats = runtime.stats();
    std::vector<c10::IValue> failing = withWhen(args, when);
    const TensorBytes before(c10::ivalue::Tuple::create(failing));
    EXPECT_THAT([&] { (void)runtime(failing); },
                ::testing::ThrowsMessage<c10::Error>(::testing::AllOf(
                    ::testing::HasSubstr("srt_test::throw_if"),
                    ::testing::HasSubstr("asked to fail (when=" + std::to_string(when) + ")"))));
    EXPECT_EQ(before.compare(c10::ivalue::Tuple::create(failing), "input"), "")
        << "a failed run wrote into a caller's tensor";
    EXPECT_EQ(runtime.verifyMemoryPlan(), "");
    EXPECT_EQ(runtime.memoryPlan(), plan) << "a failed run changed the memory plan";
    EXPECT_EQ(runtime.stats().arena_reallocations, stats.arena_reallocations);
    EXPECT_EQ(runtime.stats().managed_bytes, stats.managed_bytes);

    // Reusable: right after the failure, after another shape, and back.
    EXPECT_EQ(compareIValues(expected, runtime(args)), "") << "after failing with when=" << when;
    runtime.deallocateOutputTensors();
    EXPECT_EQ(compareIValues(other_expected, runtime(other_args)), "");
    runtime.deallocateOutputTensors();
    EXPECT_EQ(compareIValues(expected, runtime(args)), "");
    runtime.deallocateOutputTensors();
    EXPECT_EQ(runtime.verifyMemoryPlan(), "");
  }
}

TEST(KernelFault, ErrorNamesTheNodeAndTheRuntimeStaysIntactWithEveryOptionSet) {
  torch::manual_seed(0);
  for (const StaticModuleOptions& options : allValidOptions()) {
    expectFaultsLeaveTheRuntimeIntact(kThrowsMidRun, {torch::randn({6, 6}), int64_t{0}},
                                      {torch::randn({9, 9}), int64_t{0}}, options);
  }
}

TEST(KernelFault, InPlaceLookingModelsLeaveCallerTensorsUntouched) {
  torch::manual_seed(0);
  for (const StaticModuleOptions& options : allValidOptions()) {
    expectFaultsLeaveTheRuntimeIntact(
        kInPlaceLooking, {torch::randn({4, 5}), torch::randn({4, 5}), int64_t{0}},
        {torch::randn({3, 7}), torch::randn({3, 7}), int64_t{0}}, options);
  }
}

TEST(KernelFault, FailingOnTheFirstRunLeavesNothingToUnlearn) {
  std::shared_ptr<torch::jit::Graph> jit = parsedGraph(kThrowsMidRun);
  StaticModule module(jit);
  StaticRuntime runtime(module);
  const std::vector<c10::IValue> args{torch::randn({5, 5}), int64_t{0}};
  EXPECT_THROW((void)runtime(withWhen(args, 1)), c10::Error);
  EXPECT_EQ(runtime.verifyMemoryPlan(), "");
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(compareIValues(runJit(jit, args), runtime(args)), "") << "run " << run;
  }
  EXPECT_EQ(runtime.verifyMemoryPlan(), "");
}

// runtime_pool_test's ReturnsTheRuntimeWhenTheRunThrows covers an error while binding arguments;
// this one fails inside a kernel, after the arena was lent out, on the pool and the module's
// thread-safe entry point.
TEST(KernelFault, APoolLeaseReturnsItsRuntimeWhenAKernelThrows) {
  std::shared_ptr<torch::jit::Graph> jit = parsedGraph(kThrowsMidRun);
  StaticModule module(jit);
  RuntimePool pool(module, 1);
  const std::vector<c10::IValue> args{torch::randn({4, 4}), int64_t{0}};
  const c10::IValue expected = runJit(jit, args);
  EXPECT_THROW((void)pool.run(withWhen(args, 1)), c10::Error);
  {
    auto lease = pool.acquire(std::chrono::milliseconds(0)); // throws if it was not returned
    EXPECT_EQ(compareIValues(expected, lease.runtime()(args)), "");
    EXPECT_EQ(lease->verifyMemoryPlan(), "");
  }
  auto future = pool.runAsync(withWhen(args, 2));
  future->wait();
  EXPECT_TRUE(future->hasError());
  EXPECT_THAT(future->tryRetrieveErrorMessage(), ::testing::HasSubstr("srt_test::throw_if"));
  EXPECT_EQ(compareIValues(expected, pool.run(args)), "");
  EXPECT_EQ(pool.numCreated(), 1u);

  EXPECT_THROW((void)module(withWhen(args, 1)), c10::Error);
  EXPECT_EQ(compareIValues(expected, module(args)), "");
}

// Delegates to the real allocator, except that while armed it refuses every request of at least
// `threshold` bytes: the arena's growth, not the small allocations around it.
class RefusingAllocator final : public c10::Allocator {
public:
  explicit RefusingAllocator(c10::Allocator* wrapped) : wrapped_(wrapped) {}
  c10::DataPtr allocate(size_t bytes) const override {
    if (threshold_ != 0 && bytes >= threshold_) {
      ++refused_;
      TORCH_CHECK(false, "RefusingAllocator: out of memory for ", bytes, " bytes");
    }
    return wrapped_->allocate(bytes);
  }
  c10::DeleterFnPtr raw_deleter() const override { return wrapped_->raw_deleter(); }
  void arm(size_t threshold) { threshold_ = threshold; }
  void disarm() { threshold_ = 0; }
  size_t refused() const { return refused_; }

private:
  c10::Allocator* wrapped_;
  size_t threshold_ = 0;
  mutable size_t refused_ = 0;
};

// Installs a RefusingAllocator as c10's CPU allocator for its lifetime.
class ScopedRefusingAllocator {
public:
  ScopedRefusingAllocator() : original_(c10::GetCPUAllocator()), refusing_(original_) {
    c10::SetCPUAllocator(&refusing_, std::numeric_limits<uint8_t>::max());
  }
  ~ScopedRefusingAllocator() {
    c10::SetCPUAllocator(original_, std::numeric_limits<uint8_t>::max());
  }
  ScopedRefusingAllocator(const ScopedRefusingAllocator&) = delete;
  ScopedRefusingAllocator& operator=(const ScopedRefusingAllocator&) = delete;
  RefusingAllocator& operator*() { return refusing_; }

private:
  c10::Allocator* original_;
  RefusingAllocator refusing_;
};

TEST(ArenaFault, AnArenaThatCannotGrowIsReportedAndTheNextRunsRecover) {
  std::shared_ptr<torch::jit::Graph> jit = parsedGraph(kThrowsMidRun);
  StaticModule module(jit);
  const std::vector<c10::IValue> small{torch::randn({8, 8}), int64_t{0}};
  const std::vector<c10::IValue> large{torch::randn({64, 64}), int64_t{0}};
  const c10::IValue small_expected = runJit(jit, small);
  const c10::IValue large_expected = runJit(jit, large);

  StaticRuntime runtime(module);
  (void)runtime(small);
  (void)runtime(small);
  const size_t small_arena = runtime.stats().managed_bytes;

  ScopedRefusingAllocator allocator;
  // Above any one tensor of the large shape (a 64x64 float matrix), below the arena that holds
  // three of them at once.
  const size_t largest_tensor = 64 * 64 * sizeof(float);
  (*allocator).arm(2 * largest_tensor + 1);
  // The kernels allocate the larger tensors themselves; growing the arena after the run fails
  // quietly, as it must on that noexcept path...
  EXPECT_EQ(compareIValues(large_expected, runtime(large)), "");
  EXPECT_GE((*allocator).refused(), 1u);
  const size_t needed = runtime.stats().managed_bytes;
  ASSERT_GT(needed, small_arena);
  ASSERT_GT(needed, 2 * largest_tensor + 1);
  EXPECT_THAT(runtime.verifyMemoryPlan(), ::testing::HasSubstr("the arena has"));
  // ...and the next run, which needs the arena, reports it before any kernel runs.
  const TensorBytes before(c10::ivalue::Tuple::create(large));
  EXPECT_THAT([&] { (void)runtime(large); },
              ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr(
                  "could not grow the arena to " + std::to_string(needed) + " bytes")));
  EXPECT_EQ(before.compare(c10::ivalue::Tuple::create(large), "input"), "");
  // That failed run leaves no plan the arena cannot hold: the runtime forgot the sizes, so a
  // smaller shape runs (the fuzzer's "a valid run after any error works").
  EXPECT_EQ(compareIValues(small_expected, runtime(small)), "");
  EXPECT_EQ(runtime.verifyMemoryPlan(), "");

  (*allocator).disarm();
  EXPECT_EQ(compareIValues(large_expected, runtime(large)), "");
  EXPECT_EQ(compareIValues(large_expected, runtime(large)), "");
  EXPECT_EQ(runtime.verifyMemoryPlan(), "");
  EXPECT_EQ(runtime.stats().managed_bytes, needed);
  EXPECT_EQ(compareIValues(small_expected, runtime(small)), "");
  EXPECT_EQ(compareIValues(large_expected, runtime(large)), "");
}

} // namespace
} // namespace srt::testing
