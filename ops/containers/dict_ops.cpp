// Python dict operations: segmentation models return their heads in a dict ({"out": ..., "aux":
// ...}). One kernel for every key type, on generic dicts; the list overloads of the same names
// (_set_item, __getitem__, len, __contains__) are ops/containers/list_ops.cpp's.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

bool isDict(const torch::jit::Value* value) {
  return value->type()->kind() == c10::TypeKind::DictType;
}

// dict() -> an empty dict of the node's type; dict(other) -> a shallow copy; dict(pairs).
std::optional<KernelFunction> makeDict(const Node* node, const KernelOptions&) {
  const auto& type = node->output()->type()->expectRef<c10::DictType>();
  c10::TypePtr key_type = type.getKeyType();
  c10::TypePtr value_type = type.getValueType();
  if (node->inputs().empty()) {
    return [key_type, value_type](ProcessedNode& p) {
      p.output(0) = c10::impl::GenericDict(key_type, value_type);
    };
  }
  if (node->inputs().size() == 1 && isDict(node->input(0))) {
    return [](ProcessedNode& p) { p.output(0) = p.input(0).toGenericDict().copy(); };
  }
  // dict([(key, value), ...]): torchvision's `OrderedDict([(str(i), v) for ...])`, in order.
  if (node->inputs().size() == 1 && node->input(0)->type()->kind() == c10::TypeKind::ListType) {
    return [key_type, value_type](ProcessedNode& p) {
      c10::impl::GenericDict dict(key_type, value_type);
      for (const c10::IValue& pair : p.input(0).toListRef()) {
        const auto& elements = pair.toTupleRef().elements();
        dict.insert_or_assign(elements[0], elements[1]);
      }
      p.output(0) = std::move(dict);
    };
  }
  return std::nullopt;
}

// d[key] = value.
std::optional<KernelFunction> setItem(const Node* node, const KernelOptions&) {
  if (!isDict(node->input(0))) {
    return std::nullopt;
  }
  return [](ProcessedNode& p) {
    c10::impl::GenericDict dict = p.input(0).toGenericDict();
    dict.insert_or_assign(p.input(1), p.input(2));
  };
}

// d[key]: a missing key is the JIT's KeyError.
std::optional<KernelFunction> getItem(const Node* node, const KernelOptions&) {
  if (!isDict(node->input(0))) {
    return std::nullopt; // lists: ops/containers/list_ops.cpp
  }
  return [](ProcessedNode& p) {
    const c10::impl::GenericDict dict = p.input(0).toGenericDict();
    auto found = dict.find(p.input(1));
    TORCH_CHECK(found != dict.end(), "KeyError: ", p.input(1));
    p.output(0) = found->value();
  };
}

template <typename Fn> KernelFactory onDict(Fn fn) {
  return [fn](const Node* node, const KernelOptions&) -> std::optional<KernelFunction> {
    if (node->inputs().empty() || !isDict(node->input(0))) {
      return std::nullopt;
    }
    return KernelFunction(fn);
  };
}

// keys(), values(), items(): a list typed as the node's output, one element per entry.
template <typename Element> KernelFactory entriesAsList(Element element) {
  return [element](const Node* node, const KernelOptions&) -> std::optional<KernelFunction> {
    if (!isDict(node->input(0))) {
      return std::nullopt;
    }
    c10::TypePtr type = node->output()->type()->expectRef<c10::ListType>().getElementType();
    return [type, element](ProcessedNode& p) {
      c10::impl::GenericList list(type);
      const c10::impl::GenericDict dict = p.input(0).toGenericDict();
      list.reserve(dict.size());
      for (const auto& entry : dict) {
        list.push_back(element(entry));
      }
      p.output(0) = std::move(list);
    };
  };
}

using Entry = c10::impl::GenericDict::iterator::value_type;

} // namespace

SRT_REGISTER_KERNEL("aten::dict", kNative, makeDict);
SRT_REGISTER_KERNEL("aten::_set_item", kNative, setItem);
SRT_REGISTER_KERNEL("aten::__getitem__", kNative, getItem);
SRT_REGISTER_KERNEL("aten::keys", kNative,
                    entriesAsList([](const Entry& entry) { return entry.key(); }));
SRT_REGISTER_KERNEL("aten::values", kNative,
                    entriesAsList([](const Entry& entry) { return entry.value(); }));
SRT_REGISTER_KERNEL("aten::items", kNative, entriesAsList([](const Entry& entry) {
                      return c10::IValue(c10::ivalue::Tuple::create(entry.key(), entry.value()));
                    }));
SRT_REGISTER_KERNEL("aten::len", kNative, onDict([](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(p.input(0).toGenericDict().size());
                    }));
SRT_REGISTER_KERNEL("aten::__contains__", kNative, onDict([](ProcessedNode& p) {
                      p.output(0) = p.input(0).toGenericDict().contains(p.input(1));
                    }));
// self.update(other): torchvision's detectors gather their losses with `losses.update(...)`.
SRT_REGISTER_KERNEL("aten::update", kNative, onDict([](ProcessedNode& p) {
                      c10::impl::GenericDict self = p.input(0).toGenericDict();
                      for (const auto& entry : p.input(1).toGenericDict()) {
                        self.insert_or_assign(entry.key(), entry.value());
                      }
                    }));

} // namespace srt::ops
