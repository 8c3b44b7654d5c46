#include "ops/containers/objects.h"

#include <optional>

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// The class of a value, when it is a TorchScript class and not a module.
c10::ClassTypePtr objectClass(const torch::jit::Value* value) {
  c10::ClassTypePtr type = value->type()->cast<c10::ClassType>();
  return type != nullptr && !type->is_module() ? type : nullptr;
}

std::optional<KernelFunction> createObject(const Node* node, const KernelOptions&) {
  c10::ClassTypePtr type = objectClass(node->output());
  if (type == nullptr) {
    return std::nullopt;
  }
  return KernelFunction([type](ProcessedNode& p) {
    // Its attributes unset, as the interpreter's: the class's __init__, inlined, sets them next.
    p.output(0) = c10::ivalue::Object::create(c10::StrongTypePtr(type->compilation_unit(), type),
                                              type->numAttributes());
  });
}

// The slot of the attribute a GetAttr or SetAttr names, when it accesses an object.
std::optional<size_t> attributeSlot(const Node* node) {
  c10::ClassTypePtr type = objectClass(node->input(0));
  if (type == nullptr) {
    return std::nullopt;
  }
  return type->getAttributeSlot(node->s(c10::attr::name));
}

std::optional<KernelFunction> getAttribute(const Node* node, const KernelOptions&) {
  const std::optional<size_t> slot = attributeSlot(node);
  if (!slot) {
    return std::nullopt;
  }
  return KernelFunction(
      [slot = *slot](ProcessedNode& p) { p.output(0) = p.input(0).toObjectRef().getSlot(slot); });
}

std::optional<KernelFunction> setAttribute(const Node* node, const KernelOptions&) {
  const std::optional<size_t> slot = attributeSlot(node);
  if (!slot) {
    return std::nullopt;
  }
  return KernelFunction(
      [slot = *slot](ProcessedNode& p) { p.input(0).toObjectRef().setSlot(slot, p.input(1)); });
}

} // namespace

bool accessesAnObject(const Node* node) {
  if (node->kind() == c10::prim::CreateObject) {
    return objectClass(node->output()) != nullptr;
  }
  if (node->kind() == c10::prim::GetAttr || node->kind() == c10::prim::SetAttr) {
    return objectClass(node->input(0)) != nullptr;
  }
  return false;
}

SRT_REGISTER_KERNEL("prim::CreateObject", kNative, createObject);
SRT_REGISTER_KERNEL("prim::GetAttr", kNative, getAttribute);
SRT_REGISTER_KERNEL("prim::SetAttr", kNative, setAttribute);

} // namespace srt::ops
