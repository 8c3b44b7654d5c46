#include "passes/fusion_patterns.h"

#include <map>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

namespace srt::passes {
namespace {

// std::map: registrars run during static initialization, in any order across files.
std::map<std::string, std::vector<FusionPattern>>& registry() {
  static std::map<std::string, std::vector<FusionPattern>> patterns;
  return patterns;
}

} // namespace

void registerFusionPattern(const std::string& family, FusionPattern pattern) {
  registry()[family].push_back(std::move(pattern));
}

const std::vector<FusionPattern>& fusionPatterns(const std::string& family) {
  static const std::vector<FusionPattern> none;
  auto found = registry().find(family);
  return found == registry().end() ? none : found->second;
}

bool applyFusionPatterns(const std::string& family, std::shared_ptr<torch::jit::Graph>& graph) {
  bool changed = false;
  for (const FusionPattern& pattern : fusionPatterns(family)) {
    torch::jit::SubgraphRewriter rewriter;
    rewriter.RegisterRewritePattern(pattern.pattern, pattern.replacement);
    bool accepted_any = false;
    const std::string before = graph->toString(/*print_source_locations=*/false);
    rewriter.runOnGraph(graph,
                        [&](const torch::jit::Match& match,
                            const std::unordered_map<std::string, torch::jit::Value*>& values) {
                          const bool accepted = !pattern.filter || pattern.filter(match, values);
                          accepted_any = accepted_any || accepted;
                          return accepted;
                        });
    // The rewriter reports nothing, and may still skip an accepted match that overlaps another.
    changed = changed || (accepted_any && graph->toString(false) != before);
  }
  return changed;
}

} // namespace srt::passes
