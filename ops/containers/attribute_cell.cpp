#include "ops/containers/attribute_cell.h"

#include <torch/library.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {

const char* const kAttributeGetSchema =
    "srt::attribute_get(__torch__.torch.classes.srt.AttributeCell cell) -> Any";
const char* const kAttributeSetSchema =
    "srt::attribute_set(__torch__.torch.classes.srt.AttributeCell cell, Any value) -> ()";

AttributeCell::AttributeCell(c10::IValue initial) : value_(std::move(initial)) {}

c10::IValue AttributeCell::get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return value_;
}

void AttributeCell::set(c10::IValue value) {
  TORCH_CHECK(fitsAttributeCell(value), "static_runtime: a mutated module attribute holds ",
              value.tagKind(), "; expected a bool, int, float, string or None");
  std::lock_guard<std::mutex> lock(mutex_);
  value_ = std::move(value);
}

bool fitsAttributeCell(const c10::IValue& value) {
  return value.isBool() || value.isInt() || value.isDouble() || value.isString() || value.isNone();
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
