// `srt inspect`: what static_runtime made of a model.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include <torch/csrc/jit/ir/ir.h>

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
  std::cout << "memory planner:\n"
            << "  managed_bytes              " << stats.managed_bytes << "\n"
            << "  managed_lower_bound_bytes  " << stats.managed_lower_bound_bytes << "\n";
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
  printManagedMemory(stats);
  return 0;
}

} // namespace srt::cli
