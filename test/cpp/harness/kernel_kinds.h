// Which kernel kind a module's nodes got, by operator, for tests that check a kernel is picked
// (or declined) as intended.
#pragma once

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "harness/differential.h"
#include "ops/core/kernel.h"
#include "static_runtime/program.h"

namespace srt::testing {

// Operator name -> the kinds its nodes run with, over every block.
inline std::map<std::string, std::set<ops::KernelKind>> kernelKinds(const StaticModule& module) {
  std::map<std::string, std::set<ops::KernelKind>> kinds;
  for (const BlockInfo& block : module.program().blocks) {
    for (const ops::StaticNodeInfo& node : block.nodes) {
      kinds[node.node->kind().toQualString()].insert(node.kernel.kind);
    }
  }
  return kinds;
}

// Every node of each listed operator in `source` runs with the listed kind. Tests of an aten
// kernel switch off the passes that would replace its nodes (e.g. variadic_cat_stack).
inline void expectKinds(const std::string& source,
                        const std::map<std::string, ops::KernelKind>& expected,
                        const StaticModuleOptions& options = {}) {
  StaticModule module(scriptModule(source), options);
  const auto kinds = kernelKinds(module);
  for (const auto& [op, kind] : expected) {
    auto found = kinds.find(op);
    if (found == kinds.end()) {
      ADD_FAILURE() << op << " is not in the prepared graph of:\n" << source;
      continue;
    }
    EXPECT_EQ(found->second, std::set<ops::KernelKind>{kind})
        << op << " should run as " << ops::toString(kind);
  }
}

// Default options with one optimization pass switched off.
inline StaticModuleOptions withoutPass(const std::string& pass) {
  StaticModuleOptions options;
  options.disabled_passes = {pass};
  return options;
}

} // namespace srt::testing
