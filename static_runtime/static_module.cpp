#include "static_runtime/static_module.h"

#include <algorithm>
#include <fstream>
#include <thread>

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

// One runtime per hardware thread: more callers than that would only compete for the cores.
size_t defaultPoolSize() {
  return std::max(1u, std::thread::hardware_concurrency());
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
      program_(buildProgram(graph_, options_)),
      pool_(std::make_unique<RuntimePool>(*this, defaultPoolSize())) {}

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

c10::IValue StaticModule::operator()(std::vector<c10::IValue> args, const Kwargs& kwargs) const {
  return pool_->run(std::move(args), kwargs);
}

c10::intrusive_ptr<c10::ivalue::Future>
StaticModule::runAsync(std::vector<c10::IValue> args, Kwargs kwargs, Launcher launcher) const {
  return pool_->runAsync(std::move(args), std::move(kwargs), std::move(launcher));
}

c10::TypePtr StaticModule::outputType() const {
  const std::vector<c10::Argument>& returns = schema_.returns();
  if (returns.size() == 1) {
    return returns.front().type();
  }
  std::vector<c10::TypePtr> elements;
  for (const c10::Argument& argument : returns) {
    elements.push_back(argument.type());
  }
  return c10::TupleType::create(std::move(elements));
}

ModuleStats StaticModule::stats() const {
  ModuleStats stats = countKernels(program_);
  stats.passes = pass_reports_;
  pool_->addMemoryStats(stats);
  return stats;
}

} // namespace srt
