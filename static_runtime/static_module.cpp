#include "static_runtime/static_module.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import.h>

#include "passes/batch_independence.h"
#include "passes/pipeline.h"
#include "passes/prepare.h"
#include "static_runtime/model_loading.h"
#include "static_runtime/program.h"
#include "static_runtime/runtime.h"

namespace srt {
namespace {

passes::PreparedGraph prepareChecked(const torch::jit::Module& module,
                                     const StaticModuleOptions& options) {
  options.validate();
  return passes::prepareModule(module, options.unbound_constants);
}

passes::PreparedGraph prepareChecked(const std::shared_ptr<torch::jit::Graph>& graph,
                                     const StaticModuleOptions& options) {
  options.validate();
  TORCH_CHECK(options.unbound_constants.empty(), "static_runtime: unbound_constants name module "
                                                 "attributes; a free-standing graph has none");
  return passes::prepareGraph(graph);
}

// One runtime per hardware thread: more callers than that would only compete for the cores.
size_t defaultPoolSize() {
  return std::max(1u, std::thread::hardware_concurrency());
}

// Hands the heap memory the build freed back to the system. Plain weights replaced by packed
// ones and the passes' temporaries are freed during the build, but glibc keeps freed heap memory
// mapped, and most of it is heap: after the first large block is freed, glibc's mmap threshold
// rises above the size of a weight, so later weights come from the heap too. Without this,
// resnet18 and efficientnet_b0 stayed about 8 MiB more resident after the build than they use.
void releaseFreedHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

} // namespace

StaticModule::StaticModule(const torch::jit::Module& module, StaticModuleOptions options)
    : StaticModule(prepareChecked(module, options), options) {}

StaticModule::StaticModule(const std::shared_ptr<torch::jit::Graph>& graph,
                           StaticModuleOptions options)
    : StaticModule(prepareChecked(graph, options), options) {}

StaticModule::StaticModule(passes::PreparedGraph prepared, StaticModuleOptions options)
    : options_(options), graph_(std::move(prepared.graph)), schema_(std::move(prepared.schema)),
      unbound_names_(std::move(prepared.unbound_constants)),
      unbound_values_(std::make_shared<const std::vector<at::Tensor>>(unbound_names_.size())),
      batch_independence_(passes::analyzeBatchIndependence(*graph_, schema_.arguments().size())),
      pass_reports_(passes::optimize(graph_, options_.passesToSkip())),
      program_(std::make_unique<const Program>(buildProgram(graph_, options_))),
      pool_(std::make_unique<RuntimePool>(*this, defaultPoolSize())) {
  releaseFreedHeap();
}

StaticModule::~StaticModule() = default;

std::unique_ptr<StaticModule> StaticModule::load(const std::string& path,
                                                 StaticModuleOptions options) {
  TORCH_CHECK(std::ifstream(path).good(), "static_runtime: cannot open model file '", path,
              "': no such file or not readable");
  // The module is freed before the optimization and the build allocate what the runtime keeps,
  // which then reuses the heap the module's TorchScript code and types (8.7 MiB of
  // efficientnet_b0's) held instead of growing it around their holes: 1.5 MiB less resident.
  std::optional<passes::PreparedGraph> prepared;
  {
    torch::jit::Module module;
    try {
      torch::jit::ExtraFilesMap no_extra_files;
      module = loadTorchScript(path, no_extra_files);
    } catch (const std::exception& e) {
      const c10::Error* error = dynamic_cast<const c10::Error*>(&e);
      TORCH_CHECK(false, "static_runtime: '", path,
                  "' is not a TorchScript archive torch.jit.load can read: ",
                  error ? error->what_without_backtrace() : e.what());
    }
    prepared = prepareChecked(module, options);
  }
  // Not make_unique: the constructor from a prepared graph is private.
  return std::unique_ptr<StaticModule>(new StaticModule(std::move(*prepared), options));
}

c10::IValue StaticModule::operator()(std::vector<c10::IValue> args, const Kwargs& kwargs) const {
  return pool_->run(std::move(args), kwargs);
}

c10::intrusive_ptr<c10::ivalue::Future>
StaticModule::runAsync(std::vector<c10::IValue> args, Kwargs kwargs, Launcher launcher) const {
  return pool_->runAsync(std::move(args), std::move(kwargs), std::move(launcher));
}

void StaticModule::setConstant(const std::string& name, at::Tensor value) {
  auto found = std::find(unbound_names_.begin(), unbound_names_.end(), name);
  if (found == unbound_names_.end()) {
    std::string names;
    for (const std::string& unbound : unbound_names_) {
      names += (names.empty() ? "" : ", ") + unbound;
    }
    TORCH_CHECK(false, "static_runtime: '", name, "' is not an unbound constant of this module; ",
                names.empty() ? "it has none (StaticModuleOptions::unbound_constants)"
                              : "they are: " + names);
  }
  TORCH_CHECK(value.defined(), "static_runtime: set_constant('", name,
              "') got an undefined tensor");
  // Copy-on-write: runs in flight keep the table they started with.
  std::lock_guard<std::mutex> lock(set_constant_mutex_);
  auto values = std::make_shared<std::vector<at::Tensor>>(*std::atomic_load(&unbound_values_));
  (*values)[found - unbound_names_.begin()] = std::move(value);
  std::atomic_store(&unbound_values_,
                    std::shared_ptr<const std::vector<at::Tensor>>(std::move(values)));
}

void StaticModule::appendUnboundConstants(std::vector<c10::IValue>& args) const {
  if (unbound_names_.empty()) {
    return;
  }
  const std::shared_ptr<const std::vector<at::Tensor>> values = std::atomic_load(&unbound_values_);
  std::string missing;
  for (size_t i = 0; i < values->size(); ++i) {
    if (!(*values)[i].defined()) {
      missing += (missing.empty() ? "" : ", ") + unbound_names_[i];
    }
  }
  TORCH_CHECK(missing.empty(), "static_runtime: unbound constants not set yet: ", missing,
              "; supply them with set_constant(name, tensor) before running");
  args.insert(args.end(), values->begin(), values->end());
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
  ModuleStats stats = countKernels(*program_);
  stats.passes = pass_reports_;
  pool_->addMemoryStats(stats);
  return stats;
}

} // namespace srt
