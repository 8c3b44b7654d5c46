#include "static_runtime/static_module.h"

#include <fstream>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import.h>

#include "passes/pipeline.h"
#include "passes/prepare.h"
#include "static_runtime/runtime.h"

namespace srt {
namespace {

passes::PreparedGraph prepareChecked(const torch::jit::Module& module,
                                     const StaticModuleOptions& options) {
  options.validate();
  return passes::prepareModule(module);
}

passes::PreparedGraph prepareChecked(const std::shared_ptr<torch::jit::Graph>& graph,
                                     const StaticModuleOptions& options) {
  options.validate();
  return passes::prepareGraph(graph);
}

} // namespace

StaticModule::StaticModule(const torch::jit::Module& module, StaticModuleOptions options)
    : StaticModule(prepareChecked(module, options), options) {}

StaticModule::StaticModule(const std::shared_ptr<torch::jit::Graph>& graph,
                           StaticModuleOptions options)
    : StaticModule(prepareChecked(graph, options), options) {}

StaticModule::StaticModule(passes::PreparedGraph prepared, StaticModuleOptions options)
    : options_(options), graph_(std::move(prepared.graph)), schema_(std::move(prepared.schema)),
      pass_reports_(passes::optimize(graph_, options_.passesToSkip())),
      program_(buildProgram(graph_, options_)) {}

StaticModule::~StaticModule() = default;

std::unique_ptr<StaticModule> StaticModule::load(const std::string& path,
                                                 StaticModuleOptions options) {
  TORCH_CHECK(std::ifstream(path).good(), "static_runtime: cannot open model file '", path,
              "': no such file or not readable");
  torch::jit::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const std::exception& e) {
    const c10::Error* error = dynamic_cast<const c10::Error*>(&e);
    TORCH_CHECK(false, "static_runtime: '", path,
                "' is not a TorchScript archive torch.jit.load can read: ",
                error ? error->what_without_backtrace() : e.what());
  }
  return std::make_unique<StaticModule>(module, options);
}

namespace {

// A copy of `value` whose tensors own their memory.
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

c10::IValue StaticModule::operator()(std::vector<c10::IValue> args, const Kwargs& kwargs) const {
  struct Lease {
    const StaticModule& module;
    std::unique_ptr<StaticRuntime> runtime;
    ~Lease() { module.releaseRuntime(std::move(runtime)); }
  } lease{*this, acquireRuntime()};
  c10::IValue outputs = (*lease.runtime)(std::move(args), kwargs);
  if (options_.manage_output_tensors) {
    // No caller of a shared runtime can hand outputs back, so they leave the arena as copies.
    outputs = copyTensors(outputs);
    lease.runtime->deallocateOutputTensors();
  }
  return outputs;
}

std::unique_ptr<StaticRuntime> StaticModule::acquireRuntime() const {
  {
    std::lock_guard<std::mutex> lock(idle_runtimes_mutex_);
    if (!idle_runtimes_.empty()) {
      auto runtime = std::move(idle_runtimes_.back());
      idle_runtimes_.pop_back();
      return runtime;
    }
  }
  return std::make_unique<StaticRuntime>(*this);
}

void StaticModule::releaseRuntime(std::unique_ptr<StaticRuntime> runtime) const {
  std::lock_guard<std::mutex> lock(idle_runtimes_mutex_);
  idle_runtimes_.push_back(std::move(runtime));
}

ModuleStats StaticModule::stats() const {
  ModuleStats stats = countKernels(program_);
  stats.passes = pass_reports_;
  std::lock_guard<std::mutex> lock(idle_runtimes_mutex_);
  for (const auto& runtime : idle_runtimes_) {
    runtime->addMemoryStats(stats);
  }
  return stats;
}

} // namespace srt
