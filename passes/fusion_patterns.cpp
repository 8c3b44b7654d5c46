#include "passes/fusion_patterns.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include <torch/csrc/jit/ir/constants.h>
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

// Whether `node` (or a node of its blocks) may write to memory: an op whose schema writes an
// argument (in-place ops, list appends, copy_ into a view), or one the JIT counts as having side
// effects, except raising, warning and printing (shape checks sit between a value and its use
// everywhere, and moving a computation across them changes nothing it reads).
bool mayMutate(const torch::jit::Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema != nullptr && schema->is_mutable()) {
    return true;
  }
  const bool only_reports = node->kind() == c10::prim::RaiseException ||
                            node->kind() == c10::aten::warn || node->kind() == c10::prim::Print;
  if (node->hasSideEffects() && !only_reports) {
    return true;
  }
  for (const torch::jit::Block* block : node->blocks()) {
    for (const torch::jit::Node* inner : block->nodes()) {
      if (mayMutate(inner)) {
        return true;
      }
    }
  }
  return false;
}

// Whether the rewriter may put `match`'s replacement where it does: right after the last node
// that defines one of the match's inputs, which can be before nodes that write into those inputs
// (torchvision's detection transform fills a zero batch through copy_ into views in a loop; the
// backbone's first convolution, fused, moved above that loop and read zeros). Accepted when no
// node between that point and the first matched node may write anything, and the inputs are
// defined in the match's own block (else the replacement would leave it).
bool keepsItsPlace(const torch::jit::Match& match) {
  // Constants the pattern matches read nothing: where they sit does not matter.
  const torch::jit::Node* first = nullptr;
  for (const auto& [pattern_node, node] : match.nodes_map) {
    if (pattern_node->kind() != c10::prim::Param && pattern_node->kind() != c10::prim::Return &&
        node->kind() != c10::prim::Constant && (first == nullptr || node->isBefore(first))) {
      first = node;
    }
  }
  if (first == nullptr) {
    return true;
  }
  const torch::jit::Block* block = first->owningBlock();
  std::unordered_set<const torch::jit::Node*> matched;
  for (const auto& [pattern_node, node] : match.nodes_map) {
    matched.insert(node);
  }
  std::unordered_set<const torch::jit::Node*> definitions;
  for (const auto& [pattern_value, value] : match.values_map) {
    const torch::jit::Node* definition = value->node();
    if (matched.count(definition) == 0) {
      definitions.insert(definition);
    }
  }
  // The rewriter's place: after the last definition, which is in this block when any is (those
  // of enclosing blocks come before every node of it).
  const torch::jit::Node* last = nullptr;
  for (const torch::jit::Node* definition : definitions) {
    if (definition->owningBlock() == block && (last == nullptr || last->isBefore(definition))) {
      last = definition;
    }
  }
  if (last == nullptr) {
    return false; // the replacement would move into an enclosing block
  }
  // Every node the matched nodes would move across, either way.
  const bool moves_up = last->isBefore(first);
  const torch::jit::Node* from = moves_up ? last->next() : first->next();
  const torch::jit::Node* to = moves_up ? first : last->next();
  for (const torch::jit::Node* node = from; node != to; node = node->next()) {
    if (matched.count(node) == 0 && mayMutate(node)) {
      return false;
    }
  }
  return true;
}

} // namespace

FusionFilter constantStringIs(std::string name, std::string expected) {
  return [name = std::move(name), expected = std::move(expected)](
             const torch::jit::Match& match,
             const std::unordered_map<std::string, torch::jit::Value*>& values) {
    const auto constant =
        torch::jit::constant_as<std::string>(match.values_map.at(values.at(name)));
    return constant && *constant == expected;
  };
}

FusionFilter constantBoolIs(std::string name, bool expected) {
  return [name = std::move(name),
          expected](const torch::jit::Match& match,
                    const std::unordered_map<std::string, torch::jit::Value*>& values) {
    const auto constant = torch::jit::constant_as<bool>(match.values_map.at(values.at(name)));
    return constant && *constant == expected;
  };
}

FusionFilter constantNumbers(std::vector<std::string> names) {
  return [names =
              std::move(names)](const torch::jit::Match& match,
                                const std::unordered_map<std::string, torch::jit::Value*>& values) {
    for (const std::string& name : names) {
      const auto constant = torch::jit::toIValue(match.values_map.at(values.at(name)));
      if (!constant || !(constant->isInt() || constant->isDouble())) {
        return false;
      }
    }
    return true;
  };
}

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
                          const bool accepted = keepsItsPlace(match) &&
                                                (!pattern.filter || pattern.filter(match, values));
                          accepted_any = accepted_any || accepted;
                          return accepted;
                        });
    // The rewriter reports nothing, and may still skip an accepted match that overlaps another.
    changed = changed || (accepted_any && graph->toString(false) != before);
  }
  return changed;
}

} // namespace srt::passes
