#include "ops/containers/attribute_cell.h"

#include <algorithm>

#include <torch/library.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {

const char* const kAttributeGetSchema =
    "srt::attribute_get(__torch__.torch.classes.srt.AttributeCell cell) -> Any";
const char* const kAttributeSetSchema =
    "srt::attribute_set(__torch__.torch.classes.srt.AttributeCell cell, Any value) -> ()";

AttributeCell::AttributeCell(c10::IValue initial) : value_(initial.deepcopy()) {}

c10::IValue AttributeCell::get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return value_;
}

void AttributeCell::set(c10::IValue value) {
  TORCH_CHECK(
      fitsAttributeCell(value), "static_runtime: a mutated module attribute holds ",
      value.tagKind(),
      "; expected a bool, int, float, string, None, tensor, or a list, tuple or TorchScript "
      "class instance of those");
  c10::IValue copy = value.deepcopy();
  std::lock_guard<std::mutex> lock(mutex_);
  value_ = std::move(copy);
}

bool fitsAttributeCell(const c10::IValue& value) {
  if (value.isList()) {
    const auto elements = value.toListRef();
    return std::all_of(elements.begin(), elements.end(), fitsAttributeCell);
  }
  if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    return std::all_of(elements.begin(), elements.end(), fitsAttributeCell);
  }
  if (value.isObject()) { // a record of such values (a TorchScript class, not a module)
    const c10::ivalue::Object& object = value.toObjectRef();
    if (object.type()->is_module()) {
      return false;
    }
    const auto& slots = object.slots();
    return std::all_of(slots.begin(), slots.end(), fitsAttributeCell);
  }
  return value.isBool() || value.isInt() || value.isDouble() || value.isString() ||
         value.isNone() || value.isTensor();
}

namespace {

void attributeGet(ProcessedNode& p) {
  p.output(0) = p.input(0).toCustomClass<AttributeCell>()->get();
}

void attributeSet(ProcessedNode& p) {
  p.input(0).toCustomClass<AttributeCell>()->set(p.input(1));
}

} // namespace

// CONSERVATIVE: both have effects the JIT must keep in order (no folding, merging or removal).
TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.class_<AttributeCell>("AttributeCell");
  m.def(torch::schema(kAttributeGetSchema, c10::AliasAnalysisKind::CONSERVATIVE),
        [](const c10::intrusive_ptr<AttributeCell>& cell) { return cell->get(); });
  m.def(torch::schema(kAttributeSetSchema, c10::AliasAnalysisKind::CONSERVATIVE),
        [](const c10::intrusive_ptr<AttributeCell>& cell, c10::IValue value) {
          cell->set(std::move(value));
        });
}

SRT_REGISTER_KERNEL("srt::attribute_get", kNative, always(attributeGet));
SRT_REGISTER_KERNEL("srt::attribute_set", kNative, always(attributeSet));

} // namespace srt::ops
