#include "memory/liveness.h"

#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

namespace srt::memory {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// A list, tuple, dict or optional that can hold a tensor: what a tensor can be stored into.
bool isTensorContainer(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) {
    return false;
  }
  for (const c10::TypePtr& contained : type->containedTypes()) {
    if (contained->kind() == c10::TypeKind::TensorType || isTensorContainer(contained)) {
      return true;
    }
  }
  return false;
}

class LifetimeAnalysis {
public:
  LifetimeAnalysis(const torch::jit::Graph& graph, const torch::jit::AliasDb& alias_db)
      : graph_(graph), alias_db_(alias_db) {
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
  // The step of the top-level node that holds `node` (itself, or the If/Loop around it). A
  // top-level constant (an empty list literal can be one, and can hold what is appended to a
  // list built from it) is there before the first step.
  size_t stepOf(const Node* node) const {
    while (true) {
      auto found = step_of_.find(node);
      if (found != step_of_.end()) {
        return found->second;
      }
      const Node* owner = node->owningBlock()->owningNode();
      if (owner == nullptr) {
        return 0;
      }
      node = owner;
    }
  }

  // The last step at which anything that may hold `value`'s memory is used: a search over
  // holders (heldBy), each contributing the steps of its own uses.
  size_t lastUse(const Value* value) {
    size_t last = stepOf(value->node());
    std::vector<const Value*> pending{value};
    std::unordered_set<const Value*> seen{value};
    while (!pending.empty()) {
      const Value* holder = pending.back();
      pending.pop_back();
      const Holding& holding = holdingOf(holder);
      last = std::max(last, holding.last_use);
      for (const Value* next : holding.held_by) {
        if (seen.insert(next).second) {
          pending.push_back(next);
        }
      }
    }
    return last;
  }

  struct Holding {
    // The last step that uses the value itself.
    size_t last_use = 0;
    // Values that may hold it after one of its uses.
    std::vector<const Value*> held_by;
  };

  // What one holder's uses tell, computed once per value (every search through it reuses it).
  // A value's holders are: a result that may alias it (a view, a list built from it, an element
  // read back out of such a list); a container a node stores it into (append, insert, _set_item,
  // extend: the container outlives the node); a container derived from a holding one (slicing,
  // copying, concatenating lists); and what control flow makes of it (an If/Loop result, a loop
  // body's parameter).
  const Holding& holdingOf(const Value* value) {
    auto cached = holding_.find(value);
    if (cached != holding_.end()) {
      return cached->second;
    }
    Holding holding;
    if (value->node() == graph_.param_node()) {
      // Stored into one of the caller's containers: it outlives the run.
      holding.last_use = end_step_;
      return holding_[value] = std::move(holding);
    }
    holding.last_use = stepOf(value->node());
    auto heldBy = [&holding](const Value* holder) { holding.held_by.push_back(holder); };
    const bool value_is_container = isTensorContainer(value->type());
    for (const torch::jit::Use& use : value->uses()) {
      const Node* user = use.user;
      if (user == graph_.return_node()) {
        holding.last_use = end_step_;
        continue;
      }
      if (user->kind() == c10::prim::Return) {
        // A sub-block's result lives on as what the If/Loop makes of it.
        const Node* owner = user->owningBlock()->owningNode();
        holding.last_use = std::max(holding.last_use, stepOf(owner));
        for (const Value* output : owner->outputs()) {
          heldBy(output);
        }
        continue;
      }
      holding.last_use = std::max(holding.last_use, stepOf(user));
      if (user->kind() == c10::prim::Loop) {
        // A carried value is the body's parameter and, after zero trips, the loop's result;
        // AliasDb does not relate the latter.
        for (const Value* output : user->outputs()) {
          heldBy(output);
        }
        for (const Value* parameter : user->blocks().at(0)->inputs()) {
          heldBy(parameter);
        }
      }
      for (const Value* output : user->outputs()) {
        if ((value_is_container && isTensorContainer(output->type())) ||
            mayContainAlias(output, value)) {
          heldBy(output);
        }
      }
      for (const Value* input : user->inputs()) {
        if (input != value && isTensorContainer(input->type()) &&
            (writesTo(user, input) || mayContainAlias(input, value))) {
          heldBy(input);
        }
      }
    }
    return holding_[value] = std::move(holding);
  }

  bool mayContainAlias(const Value* a, const Value* b) const {
    return alias_db_.mayContainAlias(const_cast<Value*>(a), const_cast<Value*>(b));
  }

  bool writesTo(const Node* node, const Value* value) const {
    return alias_db_.writesToAlias(const_cast<Node*>(node), {value});
  }

  const torch::jit::Graph& graph_;
  const torch::jit::AliasDb& alias_db_;
  std::unordered_map<const Node*, size_t> step_of_;
  std::unordered_map<const Value*, Holding> holding_;
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
