// `srt inspect`: what static_runtime made of a model.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/utils.h>

#include "static_runtime/static_runtime.h"
#include "tools/commands.h"
#include "tools/graph_dot.h"
#include "tools/memory_plot.h"
#include "tools/model_file.h"
#include "tools/usage_error.h"

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
            << "  unplanned_scratch_bytes    " << stats.unplanned_scratch_bytes << "\n"
            << "  arena_reallocations        " << stats.arena_reallocations << "\n";
}

// The inputs inspect runs the model on: --input, else the model's example inputs; empty when the
// model has neither (then nothing that needs a run is shown).
std::vector<InputSpec> inputSpecs(const ModelFile& file, const std::vector<InputSpec>& given) {
  if (!given.empty() || file.example_inputs.empty()) {
    return given;
  }
  return exampleInputsOf(file);
}

// Sizes are learned on a run, so the plan exists only after one: run the inputs once and print
// the runtime's plan (and draw it with --memory-plot). A model without inputs still inspects.
void printMemoryPlan(const StaticModule& module, const std::vector<InputSpec>& specs,
                     const std::string& origin, const std::string& plot_path) {
  if (specs.empty()) {
    printManagedMemory(module.stats());
    std::cout << "memory plan: not planned (the model has no srt/example_inputs to run it "
                 "with; pass --input SHAPE[:DTYPE] per argument of forward)\n";
    if (!plot_path.empty()) {
      throw UsageError("--memory-plot needs a run: the model has no srt/example_inputs; pass "
                       "--input SHAPE[:DTYPE] per argument of forward");
    }
    return;
  }
  StaticRuntime runtime(module);
  {
    torch::NoGradGuard no_grad;
    (void)runtime(makeInputs(specs));
  }
  const ModuleStats stats = runtime.stats();
  printManagedMemory(stats);
  std::cout << "memory plan after one run on " << describe(specs) << " (" << origin << "):\n"
            << runtime.memoryPlan();
  const std::string problem = runtime.verifyMemoryPlan();
  TORCH_CHECK(problem.empty(), "srt inspect: the memory plan is invalid: ", problem);
  if (!plot_path.empty()) {
    drawMemoryPlan(runtime.memoryPlanEntries(), stats.top_level_nodes, stats.managed_bytes,
                   "memory plan after one run on " + describe(specs), plot_path);
    std::cout << "wrote " << plot_path << " (plan data: " << plot_path << ".json)\n";
  }
}

// The optimized graph as DOT, its edges labelled with the shapes one JIT run of it on the inputs
// produced; unlabelled (and said so) when there are no inputs or that run fails.
void writeDot(const StaticModule& module, const std::vector<InputSpec>& specs,
              const std::string& path) {
  ValueShapes shapes;
  std::string shapes_note;
  if (specs.empty()) {
    shapes_note = "shapes unknown: no inputs to run on";
  } else {
    try {
      // The graph takes every argument of forward: trailing ones left out take their defaults.
      std::vector<c10::IValue> inputs = makeInputs(specs);
      const std::vector<c10::Argument>& arguments = module.schema().arguments();
      for (size_t i = inputs.size(); i < arguments.size() && arguments[i].default_value(); ++i) {
        inputs.push_back(*arguments[i].default_value());
      }
      shapes = recordShapes(module.graph(), std::move(inputs));
      shapes_note = "shapes from one run on " + describe(specs);
    } catch (const c10::Error& error) {
      const std::string reason = error.what_without_backtrace();
      shapes_note = "shapes unknown: the JIT could not run the optimized graph (" +
                    reason.substr(0, reason.find('\n')) + ")";
    }
  }
  std::ofstream out(path);
  out << graphToDot(module.graph(), shapes, "optimized graph; " + shapes_note);
  if (!out) {
    throw UsageError("cannot write --dot file '" + path + "'");
  }
  std::cout << "wrote " << path << " (" << shapes_note << ")\n";
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
  const std::vector<InputSpec> specs = inputSpecs(file, args.inputs);
  printMemoryPlan(*module, specs, args.inputs.empty() ? "srt/example_inputs" : "--input",
                  args.memory_plot_path);
  if (!args.dot_path.empty()) {
    writeDot(*module, specs, args.dot_path);
  }
  return 0;
}

} // namespace srt::cli
