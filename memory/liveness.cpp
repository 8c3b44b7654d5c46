#include "memory/liveness.h"

#include <unordered_map>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

namespace srt::memory {
namespace {

using torch::jit::Node;
using torch::jit::Value;

class LifetimeAnalysis {
public:
  LifetimeAnalysis(const torch::jit::Graph& graph, const torch::jit::AliasDb& alias_db)
      : alias_db_(alias_db) {
    size_t step = 0;
    for (const Node* node : graph.nodes()) {
      if (node->kind() != c10::prim::Constant) {
        step_of_[node] = step++;
      }
    }
    end_step_ = step;
  }

  ValueLifetime lifetimeOf(const Value* value) {
    return {value, stepOf(value->node()), lastUse(value)};
  }

private:
  // The step of the top-level node that holds `node` (itself, or the If/Loop around it).
  size_t stepOf(const Node* node) const {
    while (step_of_.count(node) == 0) {
      node = node->owningBlock()->owningNode();
    }
    return step_of_.at(node);
  }

  size_t lastUse(const Value* value) {
    auto cached = last_use_.find(value);
    if (cached != last_use_.end()) {
      return cached->second;
    }
    size_t last = stepOf(value->node());
    for (const torch::jit::Use& use : value->uses()) {
      const Node* user = use.user;
      if (user->kind() == c10::prim::Return) {
        // Returned from a sub-block: lives as long as what the If/Loop makes of it.
        if (const Node* owner = user->owningBlock()->owningNode()) {
          last = std::max(last, stepOf(owner));
          for (const Value* output : owner->outputs()) {
            last = std::max(last, lastUse(output));
          }
        } else {
          last = end_step_;
        }
        continue;
      }
      last = std::max(last, stepOf(user));
      // A result that may share memory with the value (a view, a list holding it) extends it.
      for (const Value* output : user->outputs()) {
        if (alias_db_.mayContainAlias(const_cast<Value*>(output), const_cast<Value*>(value))) {
          last = std::max(last, lastUse(output));
        }
      }
    }
    last_use_[value] = last;
    return last;
  }

  const torch::jit::AliasDb& alias_db_;
  std::unordered_map<const Node*, size_t> step_of_;
  std::unordered_map<const Value*, size_t> last_use_;
  size_t end_step_ = 0;
};

} // namespace

std::vector<ValueLifetime> computeLifetimes(const torch::jit::Graph& graph,
                                            const std::vector<const Value*>& values,
                                            const torch::jit::AliasDb& alias_db) {
  LifetimeAnalysis analysis(graph, alias_db);
  std::vector<ValueLifetime> lifetimes;
  lifetimes.reserve(values.size());
  for (const Value* value : values) {
    lifetimes.push_back(analysis.lifetimeOf(value));
  }
  return lifetimes;
}

} // namespace srt::memory
