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
//
// Objects the forward creates itself (prim::CreateObject: a TorchScript class used as a record,
// torchvision's ImageList) are values of the run by construction; where every use of one is a
// read or write of its attributes, the same forwarding applies with the object in place of
// `self`, and the object goes once nothing reads it.
//
// What remains mutated on `self` is state across runs (a warn-once flag, the anchors torchvision's
// AnchorGenerator rewrites each call). Such attributes (numbers, strings, tensors and lists of
// them) become cells (ops/containers/attribute_cell.h) holding a copy of the value the module had
// when built, one per StaticModule as the module holds one for eager: reads and writes go to the
// cell, in the order the forward makes them. The caller's module itself is not written.
#include "passes/attribute_writes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/containers/attribute_cell.h"

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

namespace {

// forwardAttributeWrites for the attributes of `root`: `self`, or an object the forward creates.
bool forwardWritesOf(torch::jit::Graph& graph, const Value* root) {
  std::map<std::string, Accesses> accesses;
  collect(graph.block(), nullptr, root, accesses);
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

// Whether every use of `object` reads or writes one of its own attributes (none passes it on,
// stores it, returns it, or reads an object out of it).
bool onlyAttributesUsed(const Value* object) {
  return std::all_of(object->uses().begin(), object->uses().end(), [](const torch::jit::Use& use) {
    const Node* user = use.user;
    if (use.offset != 0) {
      return false;
    }
    if (user->kind() == c10::prim::SetAttr) {
      return true;
    }
    return user->kind() == c10::prim::GetAttr &&
           user->output()->type()->kind() != c10::TypeKind::ClassType;
  });
}

} // namespace

bool forwardAttributeWrites(torch::jit::Graph& graph) {
  bool changed = false;
  if (graph.inputs().at(0)->hasUses()) {
    changed |= forwardWritesOf(graph, graph.inputs().at(0));
  }
  std::vector<Node*> created;
  for (Node* node : graph.nodes()) {
    if (node->kind() == c10::prim::CreateObject && onlyAttributesUsed(node->output())) {
      created.push_back(node);
    }
  }
  for (Node* node : created) {
    changed |= forwardWritesOf(graph, node->output());
    if (!node->output()->hasUses()) {
      node->destroy();
      changed = true;
    }
  }
  return changed;
}

bool attributesAsCells(torch::jit::Graph& graph, const torch::jit::Module& module) {
  const Value* self = graph.inputs().at(0);
  if (!self->hasUses()) {
    return false;
  }
  std::map<std::string, Accesses> accesses;
  collect(graph.block(), nullptr, self, accesses);
  bool changed = false;
  for (auto& [attribute, entry] : accesses) {
    const std::optional<c10::IValue> initial = lookUpAttribute(module, attribute).value;
    if (entry.writes.empty() || !initial || !ops::fitsAttributeCell(*initial)) {
      continue;
    }
    Value* cell = nullptr;
    {
      const torch::jit::WithInsertPoint start(graph.block()->nodes().front());
      cell = graph.insertConstant(c10::IValue(c10::make_intrusive<ops::AttributeCell>(*initial)));
    }
    for (const Access& read : entry.reads) {
      Node* get = graph.create(c10::Symbol::fromQualString("srt::attribute_get"), {cell}, 1);
      get->insertBefore(read.node);
      get->output()->setType(read.node->output()->type());
      get->setSourceRange(read.node->sourceRange());
      read.node->output()->replaceAllUsesWith(get->output());
      read.node->destroy();
    }
    for (const Access& write : entry.writes) {
      Node* set = graph.create(c10::Symbol::fromQualString("srt::attribute_set"),
                               {cell, write.node->input(1)}, 0);
      set->insertBefore(write.node);
      set->setSourceRange(write.node->sourceRange());
      write.node->destroy();
    }
    changed = true;
  }
  return changed;
}

AttributeLookup lookUpAttribute(const torch::jit::Module& module, const std::string& path) {
  torch::jit::Module current = module;
  size_t begin = 0;
  for (;;) {
    const size_t dot = path.find('.', begin);
    const std::string name = path.substr(begin, dot == std::string::npos ? dot : dot - begin);
    if (name.empty() || !current.hasattr(name)) {
      return {std::nullopt, name, /*stopped_at_missing_step=*/true};
    }
    c10::IValue value = current.attr(name);
    if (dot == std::string::npos) {
      return {std::move(value), "", false};
    }
    if (!value.isModule()) {
      return {std::nullopt, name, false};
    }
    current = value.toModule();
    begin = dot + 1;
  }
}

} // namespace srt::passes
