// `srt inspect`: what static_runtime made of a model.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/utils.h>

#include "static_runtime/static_runtime.h"
#include "tools/commands.h"
#include "tools/model_file.h"

namespace srt::cli {
namespace {

void printNodeCounts(const ModuleStats& stats) {
  std::cout << "nodes by kernel kind:\n"
            << "  nodes              " << stats.nodes << "\n"
            << "  out_variant_nodes  " << stats.out_variant_nodes << "\n"
            << "  native_nodes       " << stats.native_nodes << "\n"
            << "  fallback_nodes     " << stats.fallback_nodes << "\n";
}

void printFallbackOps(const ModuleStats& stats) {
  std::cout << "fallback ops (run by the JIT operator):\n";
  if (stats.fallback_ops.empty()) {
    std::cout << "  none\n";
  }
  int width = 0;
  for (const auto& [op, count] : stats.fallback_ops) {
    width = std::max(width, static_cast<int>(op.size()));
  }
  for (const auto& [op, count] : stats.fallback_ops) {
    std::cout << "  " << std::left << std::setw(width) << op << "  " << count << "\n";
  }
}

void printManagedMemory(const ModuleStats& stats) {
  std::cout << "memory planner (" << stats.memory_planner << "):\n"
            << "  managed_tensors            " << stats.num_managed_tensors << "\n"
            << "  unmanaged_tensors          " << stats.num_unmanaged_tensors << "\n"
            << "  managed_bytes              " << stats.managed_bytes << "\n"
            << "  managed_lower_bound_bytes  " << stats.managed_lower_bound_bytes << "\n";
  if (stats.managed_lower_bound_bytes > 0) {
    std::cout << "  arena / lower bound        " << std::fixed << std::setprecision(2)
              << static_cast<double>(stats.managed_bytes) /
                     static_cast<double>(stats.managed_lower_bound_bytes)
              << "\n";
    std::cout.unsetf(std::ios::floatfield);
  }
  std::cout << "  planned_scratch_blocks     " << stats.planned_scratch_blocks << "\n"
            << "  planned_scratch_bytes      " << stats.planned_scratch_bytes << "\n"
            << "  arena_reallocations        " << stats.arena_reallocations << "\n";
}

// Sizes are learned on a run, so the plan exists only after one: run the given or example
// inputs once and print the runtime's plan. A model without example inputs still inspects.
void printMemoryPlan(const StaticModule& module, const ModelFile& file,
                     const std::vector<InputSpec>& given) {
  if (given.empty() && file.example_inputs.empty()) {
    printManagedMemory(module.stats());
    std::cout << "memory plan: not planned (the model has no srt/example_inputs to run it "
                 "with; pass --input SHAPE[:DTYPE] per argument of forward)\n";
    return;
  }
  const std::vector<InputSpec> specs = given.empty() ? exampleInputsOf(file) : given;
  StaticRuntime runtime(module);
  {
    torch::NoGradGuard no_grad;
    (void)runtime(makeInputs(specs));
  }
  printManagedMemory(runtime.stats());
  std::cout << "memory plan after one run on " << describe(specs) << " ("
            << (given.empty() ? "srt/example_inputs" : "--input") << "):\n"
            << runtime.memoryPlan();
  const std::string problem = runtime.verifyMemoryPlan();
  TORCH_CHECK(problem.empty(), "srt inspect: the memory plan is invalid: ", problem);
}

void printPasses(const ModuleStats& stats) {
  std::cout << "optimization passes (nodes before -> after):\n";
  for (const passes::PassReport& report : stats.passes) {
    std::cout << "  " << std::left << std::setw(30) << report.name;
    if (!report.ran) {
      std::cout << "disabled\n";
      continue;
    }
    std::cout << report.nodes_before << " -> " << report.nodes_after
              << (report.changed ? "" : "  (no change)") << "\n";
  }
}

} // namespace

int inspectCommand(const Arguments& args) {
  // Opened first so that an unreadable file is a usage error, not a failure to prepare.
  ModelFile file = openModelFile(resolveModelPath(args.model_path));
  std::unique_ptr<StaticModule> module = StaticModule::load(file.path);
  std::cout << "model: " << file.path << "\n"
            << "prepared graph:\n"
            << module->graph() << "\n";
  ModuleStats stats = module->stats();
  printPasses(stats);
  printNodeCounts(stats);
  printFallbackOps(stats);
  printMemoryPlan(*module, file, args.inputs);
  return 0;
}

} // namespace srt::cli
