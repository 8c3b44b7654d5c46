#include "static_runtime/runtime_pool.h"

#include <ATen/ParallelFuture.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include "static_runtime/runtime.h"
#include "static_runtime/static_module.h"

namespace srt {

RuntimePool::Lease::Lease(RuntimePool& pool, std::unique_ptr<StaticRuntime> runtime)
    : pool_(&pool), runtime_(std::move(runtime)) {}

RuntimePool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), runtime_(std::move(other.runtime_)) {}

RuntimePool::Lease::~Lease() {
  if (runtime_) {
    pool_->giveBack(std::move(runtime_));
  }
}

RuntimePool::RuntimePool(const StaticModule& module, size_t num_runtimes, RuntimeOptions options)
    : module_(module), num_runtimes_(num_runtimes), options_(options) {
  TORCH_CHECK(num_runtimes > 0, "RuntimePool: num_runtimes must be at least 1");
  options_.validate();
}

RuntimePool::~RuntimePool() = default;

RuntimePool::Lease RuntimePool::acquire(std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto available = [this] { return !idle_.empty() || created_ < num_runtimes_; };
  if (!available()) {
    if (timeout) {
      TORCH_CHECK(returned_.wait_for(lock, *timeout, available), "RuntimePool: all ", num_runtimes_,
                  " runtimes stayed busy for ", timeout->count(),
                  " ms; no runtime became free before the timeout");
    } else {
      returned_.wait(lock, available);
    }
  }
  if (!idle_.empty()) {
    std::unique_ptr<StaticRuntime> runtime = std::move(idle_.back());
    idle_.pop_back();
    if (runtime->options() != options_) {
      runtime->setOptions(options_);
    }
    return Lease(*this, std::move(runtime));
  }
  // Reserved now so that giving the runtime back (noexcept) never allocates.
  idle_.reserve(created_ + 1);
  ++created_;
  const RuntimeOptions options = options_;
  lock.unlock();
  try {
    return Lease(*this, std::make_unique<StaticRuntime>(module_, options));
  } catch (...) {
    std::lock_guard<std::mutex> relock(mutex_);
    --created_;
    returned_.notify_one();
    throw;
  }
}

namespace {

// A copy of `value` whose tensors own their memory (outputs leaving a runtime's output arena).
c10::IValue copyTensors(const c10::IValue& value) {
  if (value.isTensor()) {
    return value.toTensor().clone();
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const c10::IValue& element : value.toTupleRef().elements()) {
      elements.push_back(copyTensors(element));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (value.isList()) {
    c10::impl::GenericList copy(value.toList().elementType());
    for (const c10::IValue& element : value.toList()) {
      copy.push_back(copyTensors(element));
    }
    return copy;
  }
  if (value.isGenericDict()) {
    auto dict = value.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) {
      copy.insert(entry.key(), copyTensors(entry.value()));
    }
    return copy;
  }
  return value;
}

} // namespace

c10::IValue RuntimePool::run(std::vector<c10::IValue> args, const Kwargs& kwargs) {
  Lease lease = acquire();
  c10::IValue outputs = lease.runtime()(std::move(args), kwargs);
  if (module_.options().manage_output_tensors) {
    // The runtime goes back to the pool, so nobody could hand the outputs back: they leave as
    // copies.
    outputs = copyTensors(outputs);
    lease->deallocateOutputTensors();
  }
  return outputs;
}

c10::intrusive_ptr<c10::ivalue::Future> RuntimePool::runAsync(std::vector<c10::IValue> args,
                                                              Kwargs kwargs, Launcher launcher) {
  auto future = c10::make_intrusive<c10::ivalue::Future>(module_.outputType());
  auto task = [this, future, args = std::move(args), kwargs = std::move(kwargs)]() mutable {
    try {
      future->markCompleted(run(std::move(args), kwargs));
    } catch (...) {
      future->setError(std::current_exception());
    }
  };
  if (launcher) {
    launcher(std::move(task));
  } else {
    at::launch(std::move(task));
  }
  return future;
}

size_t RuntimePool::numCreated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

void RuntimePool::setOptions(RuntimeOptions options) {
  options.validate();
  std::lock_guard<std::mutex> lock(mutex_);
  options_ = options;
}

void RuntimePool::addMemoryStats(ModuleStats& stats) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& runtime : idle_) {
    runtime->addMemoryStats(stats);
  }
}

void RuntimePool::giveBack(std::unique_ptr<StaticRuntime> runtime) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(runtime));
  }
  returned_.notify_one();
}

} // namespace srt
