#include "passes/fusion_patterns.h"

#include <map>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

namespace srt::passes {
namespace {

// std::map: registrars run during static initialization, in any order across files.
std::map<std::string, std::vector<FusionPattern>>& registry() {
  static std::map<std::string, std::vector<FusionPattern>> patterns;
  return patterns;
}

// The name of each returned value of an IR graph, in order.
std::vector<std::string> returnedNames(const std::string& ir) {
  torch::jit::Graph graph;
  std::unordered_map<std::string, torch::jit::Value*> values;
  torch::jit::parseIR(ir, &graph, values);
  std::vector<std::string> names;
  for (const torch::jit::Value* output : graph.outputs()) {
    for (const auto& [name, value] : values) {
      if (value == output) {
        names.push_back(name);
        break;
      }
    }
  }
  return names;
}

// Pairs each value the replacement returns with the pattern value it stands for, so that the
// rewriter gives the fused node the source range of the node it replaces: errors then point at
// the user's line, not at the replacement's IR text.
std::vector<std::pair<std::string, std::string>> sourceRangePairs(const FusionPattern& pattern) {
  const std::vector<std::string> replacement = returnedNames(pattern.replacement);
  const std::vector<std::string> original = returnedNames(pattern.pattern);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < std::min(replacement.size(), original.size()); ++i) {
    pairs.emplace_back(replacement[i], original[i]);
  }
  return pairs;
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
    rewriter.RegisterRewritePattern(pattern.pattern, pattern.replacement,
                                    sourceRangePairs(pattern));
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
