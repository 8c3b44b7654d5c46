// Module attributes a forward writes before it reads them are values of that run, not state.
//
// Some models keep intermediate results on a submodule: torchvision's RAFT builds its correlation
// pyramid with `self.corr_pyramid = [volume]` and `self.corr_pyramid.append(...)`, then reads it
// in every refinement iteration. Freezing cannot fold such an attribute (it is mutated), so the
// frozen graph still reads and writes it through `self`, which the runtime does not hold. Where
// every write is in the top-level block and every read (at any depth) comes after the first write,
// each read is the value of the last write before it: the reads are replaced by those values and
// the writes dropped. A read that may see an earlier run's value (one before any write, or writes
// inside a branch or loop) leaves the attribute alone, and checkSupported names it.
#include "passes/attribute_writes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

namespace srt::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

// The attribute a GetAttr or SetAttr node names, as a path from `self`.
std::optional<std::string> attributeOf(const Node* node, const Value* self) {
  std::optional<std::string> object = attributePath(node->input(0), self);
  if (!object) {
    return std::nullopt;
  }
  const std::string& name = node->s(c10::attr::name);
  return object->empty() ? name : *object + "." + name;
}

struct Access {
  Node* node;
  Node* top_level; // the node of the graph's own block that holds it
};

struct Accesses {
  std::vector<Access> writes;
  std::vector<Access> reads;
  bool written_in_sub_block = false;
};

void collect(Block* block, Node* top_level, const Value* self,
             std::map<std::string, Accesses>& accesses) {
  for (Node* node : block->nodes()) {
    Node* owner = top_level != nullptr ? top_level : node;
    if (node->kind() == c10::prim::SetAttr || node->kind() == c10::prim::GetAttr) {
      if (std::optional<std::string> attribute = attributeOf(node, self)) {
        Accesses& entry = accesses[*attribute];
        if (node->kind() == c10::prim::SetAttr) {
          entry.writes.push_back({node, owner});
          entry.written_in_sub_block |= top_level != nullptr;
        } else {
          entry.reads.push_back({node, owner});
        }
      }
    }
    for (Block* sub_block : node->blocks()) {
      collect(sub_block, owner, self, accesses);
    }
  }
}

// The last write of `writes` (top-level, in program order) before `read`'s top-level node.
const Access* lastWriteBefore(const std::vector<Access>& writes, const Access& read) {
  const Access* last = nullptr;
  for (const Access& write : writes) {
    if (write.top_level == read.top_level || !write.top_level->isBefore(read.top_level)) {
      break;
    }
    last = &write;
  }
  return last;
}

} // namespace

std::optional<std::string> attributePath(const Value* value, const Value* self) {
  if (value == self) {
    return std::string();
  }
  const Node* node = value->node();
  if (node->kind() != c10::prim::GetAttr) {
    return std::nullopt;
  }
  std::optional<std::string> base = attributePath(node->input(0), self);
  if (!base) {
    return std::nullopt;
  }
  const std::string& name = node->s(c10::attr::name);
  return base->empty() ? name : *base + "." + name;
}

bool forwardAttributeWrites(torch::jit::Graph& graph) {
  const Value* self = graph.inputs().at(0);
  std::map<std::string, Accesses> accesses;
  collect(graph.block(), nullptr, self, accesses);
  bool changed = false;
  for (auto& [attribute, entry] : accesses) {
    // Objects stay: reads through them name paths of their own.
    const bool object_valued =
        std::any_of(entry.writes.begin(), entry.writes.end(), [](const Access& w) {
          return w.node->input(1)->type()->kind() == c10::TypeKind::ClassType;
        });
    if (entry.writes.empty() || entry.written_in_sub_block || object_valued) {
      continue;
    }
    std::vector<const Access*> sources;
    for (const Access& read : entry.reads) {
      sources.push_back(lastWriteBefore(entry.writes, read));
    }
    if (std::find(sources.begin(), sources.end(), nullptr) != sources.end()) {
      continue;
    }
    for (size_t i = 0; i < entry.reads.size(); ++i) {
      Node* read = entry.reads[i].node;
      read->output()->replaceAllUsesWith(sources[i]->node->input(1));
      read->destroy();
    }
    for (const Access& write : entry.writes) {
      write.node->destroy();
    }
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
