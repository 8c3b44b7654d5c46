// Python list operations on the lists a model builds from sizes and flags: indexing, length,
// membership, all/any, equality, concatenation and append.
#include <ATen/core/List.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/processed_node.h"
#include "ops/registry.h"
#include "ops/schema_match.h"

namespace srt::ops {
namespace {

size_t normalizeIndex(int64_t index, size_t size) {
  const int64_t signed_size = static_cast<int64_t>(size);
  const int64_t normalized = index < 0 ? index + signed_size : index;
  TORCH_CHECK(normalized >= 0 && normalized < signed_size, "list index out of range");
  return static_cast<size_t>(normalized);
}

template <typename T> void contains(ProcessedNode& p) {
  const T item = p.input(1).to<T>();
  bool found = false;
  for (const c10::IValue& element : p.input(0).toListRef()) {
    if (element.to<T>() == item) {
      found = true;
      break;
    }
  }
  p.output(0) = found;
}

// all(list) / any(list) of bools, ints or floats: Python truthiness of each element.
template <bool kAll> void allOrAny(ProcessedNode& p) {
  for (const c10::IValue& element : p.input(0).toListRef()) {
    const bool truthy = element.isBool()  ? element.toBool()
                        : element.isInt() ? element.toInt() != 0
                                          : element.toDouble() != 0.0;
    if (truthy != kAll) {
      p.output(0) = !kAll;
      return;
    }
  }
  p.output(0) = kAll;
}

template <typename T, bool kEqual> void listEquals(ProcessedNode& p) {
  const bool equal = p.input(0).to<c10::List<T>>() == p.input(1).to<c10::List<T>>();
  p.output(0) = equal == kEqual;
}

void concatenate(ProcessedNode& p) {
  const c10::impl::GenericList a = p.input(0).toList();
  const c10::impl::GenericList b = p.input(1).toList();
  c10::impl::GenericList result(a.elementType());
  result.reserve(a.size() + b.size());
  for (const c10::IValue& element : a) {
    result.push_back(element);
  }
  for (const c10::IValue& element : b) {
    result.push_back(element);
  }
  p.output(0) = std::move(result);
}

} // namespace

SRT_REGISTER_KERNEL("aten::__getitem__", kNative,
                    whenMatches("aten::__getitem__.t(t[](a) list, int idx) -> t(*)",
                                [](ProcessedNode& p) {
                                  const auto list = p.input(0).toListRef();
                                  p.output(0) =
                                      list[normalizeIndex(p.input(1).toInt(), list.size())];
                                }));
SRT_REGISTER_KERNEL("aten::len", kNative,
                    whenMatches("aten::len.t(t[] a) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(p.input(0).toListRef().size());
                    }));
SRT_REGISTER_KERNEL("aten::len", kNative,
                    whenMatches("aten::len.any(Any[] a) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(p.input(0).toListRef().size());
                    }));
SRT_REGISTER_KERNEL("aten::__contains__", kNative,
                    whenMatches("aten::__contains__.int_list(int[] l, int item) -> bool",
                                contains<int64_t>));
SRT_REGISTER_KERNEL("aten::__contains__", kNative,
                    whenMatches("aten::__contains__.str_list(str[] l, str item) -> bool",
                                contains<std::string>));
SRT_REGISTER_KERNEL("aten::all", kNative,
                    whenMatches("aten::all.bool(bool[] self) -> bool", allOrAny<true>));
SRT_REGISTER_KERNEL("aten::all", kNative,
                    whenMatches("aten::all.int(int[] self) -> bool", allOrAny<true>));
SRT_REGISTER_KERNEL("aten::all", kNative,
                    whenMatches("aten::all.float(float[] self) -> bool", allOrAny<true>));
SRT_REGISTER_KERNEL("aten::any", kNative,
                    whenMatches("aten::any.bool(bool[] self) -> bool", allOrAny<false>));
SRT_REGISTER_KERNEL("aten::any", kNative,
                    whenMatches("aten::any.int(int[] self) -> bool", allOrAny<false>));
SRT_REGISTER_KERNEL("aten::any", kNative,
                    whenMatches("aten::any.float(float[] self) -> bool", allOrAny<false>));
SRT_REGISTER_KERNEL("aten::eq", kNative,
                    whenMatches("aten::eq.int_list(int[] a, int[] b) -> bool",
                                listEquals<int64_t, true>));
SRT_REGISTER_KERNEL("aten::ne", kNative,
                    whenMatches("aten::ne.int_list(int[] a, int[] b) -> bool",
                                listEquals<int64_t, false>));
SRT_REGISTER_KERNEL("aten::eq", kNative,
                    whenMatches("aten::eq.bool_list(bool[] a, bool[] b) -> bool",
                                listEquals<bool, true>));
SRT_REGISTER_KERNEL("aten::ne", kNative,
                    whenMatches("aten::ne.bool_list(bool[] a, bool[] b) -> bool",
                                listEquals<bool, false>));
SRT_REGISTER_KERNEL("aten::eq", kNative,
                    whenMatches("aten::eq.str_list(str[] a, str[] b) -> bool",
                                listEquals<std::string, true>));
SRT_REGISTER_KERNEL("aten::ne", kNative,
                    whenMatches("aten::ne.str_list(str[] a, str[] b) -> bool",
                                listEquals<std::string, false>));
SRT_REGISTER_KERNEL("aten::add", kNative,
                    whenMatches("aten::add.t(t[] a, t[] b) -> t[]", concatenate));
SRT_REGISTER_KERNEL("aten::list", kNative,
                    whenMatches("aten::list.t(t[] l) -> t[]", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toList().copy();
                    }));
// Appends in place and returns the same list, as the JIT does: the caller's list changes too.
SRT_REGISTER_KERNEL("aten::append", kNative,
                    whenMatches("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
                                [](ProcessedNode& p) {
                                  c10::impl::GenericList list = p.input(0).toList();
                                  list.push_back(p.input(1));
                                  p.output(0) = std::move(list);
                                }));

} // namespace srt::ops
