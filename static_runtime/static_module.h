// StaticModule: a TorchScript module prepared once into an immutable program that runtimes execute.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include "passes/batch_independence.h"
#include "static_runtime/argument_binding.h"
#include "static_runtime/options.h"
#include "static_runtime/runtime_pool.h"
#include "static_runtime/stats.h"

namespace torch::jit {
struct Graph;
struct Module;
} // namespace torch::jit

namespace srt {
namespace passes {
struct PreparedGraph;
} // namespace passes

class StaticRuntime;
struct Program;

// Immutable after construction and shared by every thread. Runtimes created from it hold a
// reference to it: the module must outlive them.
class StaticModule {
public:
  // Freezes (on a copy, in eval mode) when `module` is not frozen yet, then prepares `forward`.
  explicit StaticModule(const torch::jit::Module& module, StaticModuleOptions options = {});
  // A free-standing graph whose inputs are the arguments (no `self`).
  explicit StaticModule(const std::shared_ptr<torch::jit::Graph>& graph,
                        StaticModuleOptions options = {});
  ~StaticModule();
  StaticModule(const StaticModule&) = delete;
  StaticModule& operator=(const StaticModule&) = delete;

  // Loads a TorchScript archive written by torch.jit.save; a missing or corrupt file is a
  // c10::Error naming the path.
  [[nodiscard]] static std::unique_ptr<StaticModule> load(const std::string& path,
                                                          StaticModuleOptions options = {});

  // Thread-safe: runs on a runtime of the module's pool (one per hardware thread, created on
  // demand), blocking while all are busy. With manage_output_tensors the outputs are copies.
  [[nodiscard]] c10::IValue operator()(std::vector<c10::IValue> args,
                                       const Kwargs& kwargs = {}) const;

  // Runs on the module's pool via `launcher` (at::launch when empty); errors complete the future.
  [[nodiscard]] c10::intrusive_ptr<c10::ivalue::Future>
  runAsync(std::vector<c10::IValue> args, Kwargs kwargs = {}, Launcher launcher = {}) const;

  // The pool operator() and runAsync run on; callers may set its RuntimeOptions.
  RuntimePool& pool() const { return *pool_; }

  const StaticModuleOptions& options() const { return options_; }
  // forward's schema without `self`.
  const c10::FunctionSchema& schema() const { return schema_; }
  // The prepared graph the program was built from.
  const torch::jit::Graph& graph() const { return *graph_; }
  // The flat program runtimes execute (static_runtime/program.h, not installed).
  const Program& program() const { return *program_; }
  // Whether runtimes may run dim-0 slices of a batch apart (RuntimeOptions::split_batch).
  const passes::BatchIndependence& batchIndependence() const { return batch_independence_; }
  // Supplies an unbound constant (StaticModuleOptions::unbound_constants) by its attribute name,
  // shared read-only by every runtime; replacing one takes effect from the next run of each.
  // Thread-safe. Throws c10::Error for a name that is not an unbound constant.
  void setConstant(const std::string& name, at::Tensor value);
  const std::vector<std::string>& unboundConstants() const { return unbound_names_; }
  // Appends the unbound constants' current values to a run's bound arguments; throws naming the
  // ones not set yet. Called by StaticRuntime at the start of every run.
  void appendUnboundConstants(std::vector<c10::IValue>& args) const;

  // What forward returns: its single return type, or a tuple of its returns.
  c10::TypePtr outputType() const;
  [[nodiscard]] ModuleStats stats() const;

private:
  StaticModule(passes::PreparedGraph prepared, StaticModuleOptions options);

  StaticModuleOptions options_;
  std::shared_ptr<torch::jit::Graph> graph_;
  c10::FunctionSchema schema_;
  std::vector<std::string> unbound_names_;
  // Swapped whole (std::atomic_load / atomic_store) so a run reads one consistent table without
  // locking; set_constant_mutex_ only orders concurrent setConstant calls.
  std::shared_ptr<const std::vector<at::Tensor>> unbound_values_;
  std::mutex set_constant_mutex_;
  // Of the prepared graph, before the passes rewrite it into ops the analysis need not know.
  passes::BatchIndependence batch_independence_;
  // Initialized before program_: the passes rewrite graph_ that the program is built from.
  std::vector<passes::PassReport> pass_reports_;
  std::unique_ptr<const Program> program_;
  // Last: its runtimes refer to everything above.
  std::unique_ptr<RuntimePool> pool_;
};

} // namespace srt
