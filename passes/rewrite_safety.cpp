#include "passes/rewrite_safety.h"

#include <algorithm>
#include <string>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

namespace srt::passes {

using torch::jit::Value;

bool preservesMemoryFormat(const Value* memory_format) {
  auto constant = torch::jit::toIValue(memory_format);
  return constant.has_value() &&
         (constant->isNone() ||
          (constant->isInt() &&
           constant->toInt() == static_cast<int64_t>(at::MemoryFormat::Preserve)));
}

bool mayReachGraphOutput(const torch::jit::AliasDb& alias_db, torch::jit::Graph& graph,
                         Value* value) {
  return alias_db.mayContainAlias(value, graph.outputs());
}

bool layoutMayBeObserved(const torch::jit::AliasDb& alias_db, Value* value) {
  static const std::vector<c10::Symbol> observers = {
      c10::Symbol::fromQualString("aten::stride"),
      c10::Symbol::fromQualString("aten::is_contiguous"),
      c10::Symbol::fromQualString("aten::as_strided"),
      c10::Symbol::fromQualString("aten::view"),
      c10::Symbol::fromQualString("aten::storage_offset"),
  };
  for (const torch::jit::Use& use : value->uses()) {
    torch::jit::Node* user = use.user;
    if (std::find(observers.begin(), observers.end(), user->kind()) != observers.end()) {
      return true;
    }
    // Values handed to an If/Loop or returned from a block are assumed observed.
    if (!user->blocks().empty() || user->kind() == c10::prim::Return) {
      return true;
    }
    for (Value* output : user->outputs()) {
      if (alias_db.mayAlias(output, value) && layoutMayBeObserved(alias_db, output)) {
        return true;
      }
    }
  }
  return false;
}

bool isTopLevel(const torch::jit::Node* node) {
  return node->owningBlock() == node->owningGraph()->block();
}

std::optional<std::vector<int64_t>> constantIntList(const Value* value) {
  auto constant = torch::jit::toIValue(value);
  if (!constant.has_value() || !constant->isIntList()) {
    return std::nullopt;
  }
  return constant->toIntVector();
}

bool mayCreateNestedTensors(const torch::jit::Block* block) {
  for (const torch::jit::Node* node : block->nodes()) {
    const std::string name = node->kind().toUnqualString();
    for (const Value* output : node->outputs()) {
      if (name.find("nested") != std::string::npos &&
          output->type()->kind() == c10::TypeKind::TensorType) {
        return true;
      }
    }
    for (const torch::jit::Block* sub_block : node->blocks()) {
      if (mayCreateNestedTensors(sub_block)) {
        return true;
      }
    }
  }
  return false;
}

} // namespace srt::passes
