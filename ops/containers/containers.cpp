// Tuple, list and dict construction and unpacking: plumbing with no tensor work.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

std::vector<c10::IValue> inputsOf(ProcessedNode& p) {
  std::vector<c10::IValue> elements;
  elements.reserve(p.numInputs());
  for (size_t i = 0; i < p.numInputs(); ++i) {
    elements.push_back(p.input(i));
  }
  return elements;
}

std::optional<KernelFunction> tupleConstruct(const Node* node, const KernelOptions&) {
  auto type = node->output()->type()->expect<c10::TupleType>();
  if (type->name()) {
    // A NamedTuple keeps its type, so its fields reach the caller by name (Python gets the
    // namedtuple, as from the JIT).
    return [type](ProcessedNode& p) {
      p.output(0) = c10::ivalue::Tuple::createNamed(inputsOf(p), type);
    };
  }
  return [](ProcessedNode& p) { p.output(0) = c10::ivalue::Tuple::create(inputsOf(p)); };
}

std::optional<KernelFunction> listConstruct(const Node* node, const KernelOptions&) {
  c10::TypePtr element_type = node->output()->type()->expectRef<c10::ListType>().getElementType();
  return [element_type](ProcessedNode& p) {
    c10::impl::GenericList list(element_type);
    list.reserve(p.numInputs());
    for (size_t i = 0; i < p.numInputs(); ++i) {
      list.push_back(p.input(i));
    }
    p.output(0) = std::move(list);
  };
}

std::optional<KernelFunction> dictConstruct(const Node* node, const KernelOptions&) {
  const auto& type = node->output()->type()->expectRef<c10::DictType>();
  c10::TypePtr key_type = type.getKeyType();
  c10::TypePtr value_type = type.getValueType();
  return [key_type, value_type](ProcessedNode& p) {
    c10::impl::GenericDict dict(key_type, value_type);
    dict.reserve(p.numInputs() / 2);
    for (size_t i = 0; i + 1 < p.numInputs(); i += 2) {
      dict.insert_or_assign(p.input(i), p.input(i + 1));
    }
    p.output(0) = std::move(dict);
  };
}

void listUnpack(ProcessedNode& p) {
  const auto list = p.input(0).toListRef();
  TORCH_CHECK(list.size() == p.numOutputs(), "expected a list of ", p.numOutputs(),
              " elements to unpack, got ", list.size());
  for (size_t i = 0; i < p.numOutputs(); ++i) {
    p.output(i) = list[i];
  }
}

void tupleUnpack(ProcessedNode& p) {
  const auto& elements = p.input(0).toTupleRef().elements();
  TORCH_CHECK(elements.size() == p.numOutputs(), "expected a tuple of ", p.numOutputs(),
              " elements to unpack, got ", elements.size());
  for (size_t i = 0; i < p.numOutputs(); ++i) {
    p.output(i) = elements[i];
  }
}

void tupleIndex(ProcessedNode& p) {
  const auto& elements = p.input(0).toTupleRef().elements();
  const int64_t size = static_cast<int64_t>(elements.size());
  int64_t index = p.input(1).toInt();
  TORCH_CHECK(index >= -size && index < size, "tuple index ", index,
              " out of range for a tuple of ", size, " elements");
  p.output(0) = elements[index < 0 ? index + size : index];
}

template <void (*Fn)(ProcessedNode&)>
std::optional<KernelFunction> always(const Node*, const KernelOptions&) {
  return KernelFunction(Fn);
}

} // namespace

SRT_REGISTER_KERNEL("prim::TupleConstruct", kNative, tupleConstruct);
SRT_REGISTER_KERNEL("prim::ListConstruct", kNative, listConstruct);
SRT_REGISTER_KERNEL("prim::DictConstruct", kNative, dictConstruct);
SRT_REGISTER_KERNEL("prim::ListUnpack", kNative, always<listUnpack>);
SRT_REGISTER_KERNEL("prim::TupleUnpack", kNative, always<tupleUnpack>);
SRT_REGISTER_KERNEL("prim::TupleIndex", kNative, always<tupleIndex>);

} // namespace srt::ops
