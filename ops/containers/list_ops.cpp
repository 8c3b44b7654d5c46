// Python list operations on the lists a model builds from sizes, flags and tensors: indexing,
// slicing, length, membership, all/any, sum, copy, equality, concatenation, the writes append,
// insert, extend and item assignment (in place, as the JIT does: the caller's list changes too),
// and tensor.tolist().
#include <ATen/core/List.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

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

// list[start:end:step], with Python's defaults and clamping (PySlice_AdjustIndices).
void slice(ProcessedNode& p) {
  const c10::impl::GenericList list = p.input(0).toList();
  const int64_t length = static_cast<int64_t>(list.size());
  const int64_t step = p.input(3).toInt();
  TORCH_CHECK(step != 0, "List slice should have non-zero step");
  auto bound = [&](const c10::IValue& value, int64_t if_none) {
    int64_t index = value.isNone() ? if_none : value.toInt();
    if (index < 0) {
      index += length;
      if (index < 0) {
        index = step < 0 ? -1 : 0;
      }
    } else if (index >= length) {
      index = step < 0 ? length - 1 : length;
    }
    return index;
  };
  const int64_t start = bound(p.input(1), step < 0 ? length - 1 : 0);
  const int64_t end = bound(p.input(2), step < 0 ? -1 - length : length);
  c10::impl::GenericList result(list.elementType());
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) {
    result.push_back(list.get(i));
  }
  p.output(0) = std::move(result);
}

// [a, b] * n and n * [a, b]: the list repeated n times (n <= 0 gives an empty list).
void repeat(ProcessedNode& p, const c10::IValue& list_value, int64_t times) {
  const c10::impl::GenericList list = list_value.toList();
  c10::impl::GenericList result(list.elementType());
  if (times > 0) {
    result.reserve(list.size() * times);
    for (int64_t i = 0; i < times; ++i) {
      for (const c10::IValue& element : list) {
        result.push_back(element);
      }
    }
  }
  p.output(0) = std::move(result);
}

// min(list) / max(list) of ints; an empty list is an error, as in Python.
template <bool kMin> void extremum(ProcessedNode& p) {
  const c10::List<int64_t> list = p.input(0).toIntList();
  TORCH_CHECK(!list.empty(), kMin ? "min()" : "max()", " arg is an empty sequence");
  int64_t result = list.get(0);
  for (int64_t value : list) {
    result = kMin ? std::min(result, value) : std::max(result, value);
  }
  p.output(0) = result;
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

// list.insert(index, value): Python clamps the index rather than failing.
void insert(ProcessedNode& p) {
  c10::impl::GenericList list = p.input(0).toList();
  const int64_t size = static_cast<int64_t>(list.size());
  const int64_t index = p.input(1).toInt();
  const int64_t clamped = index < 0 ? std::max<int64_t>(index + size, 0) : std::min(index, size);
  list.insert(list.begin() + clamped, p.input(2));
}

void extend(ProcessedNode& p) {
  c10::impl::GenericList list = p.input(0).toList();
  // A copy first: a list extended with itself doubles once.
  const c10::impl::GenericList other = p.input(1).toList().copy();
  for (const c10::IValue& element : other) {
    list.push_back(element);
  }
}

// list[index] = value, returning the list.
void setItem(ProcessedNode& p) {
  c10::impl::GenericList list = p.input(0).toList();
  list.set(normalizeIndex(p.input(1).toInt(), list.size()), p.input(2));
  p.output(0) = std::move(list);
}

// The elements of `t` (its first dims in turn) as nested lists of `type`'s elements: int, float
// or bool at the innermost level, as the annotation of `x.tolist()` says.
c10::IValue nestedList(const at::Tensor& t, const c10::TypePtr& type) {
  const c10::TypePtr& element = type->expectRef<c10::ListType>().getElementType();
  if (t.dim() == 1) {
    if (element->kind() == c10::TypeKind::IntType) {
      const at::Tensor values = t.to(at::kLong).contiguous();
      const int64_t* data = values.data_ptr<int64_t>();
      return c10::List<int64_t>(std::vector<int64_t>(data, data + values.numel()));
    }
    if (element->kind() == c10::TypeKind::FloatType) {
      const at::Tensor values = t.to(at::kDouble).contiguous();
      const double* data = values.data_ptr<double>();
      return c10::List<double>(std::vector<double>(data, data + values.numel()));
    }
    const at::Tensor values = t.to(at::kBool).contiguous();
    const bool* data = values.data_ptr<bool>();
    c10::List<bool> flags;
    flags.reserve(values.numel());
    for (int64_t i = 0; i < values.numel(); ++i) {
      flags.push_back(data[i]);
    }
    return flags;
  }
  c10::impl::GenericList list(element);
  list.reserve(t.size(0));
  for (int64_t i = 0; i < t.size(0); ++i) {
    list.push_back(nestedList(t.select(0, i), element));
  }
  return list;
}

// x.tolist() (prim::tolist(x, dims, element kind: 0 int, 1 float, 2 bool)), with the JIT's checks
// that the tensor is what the annotation says. A 0-dim tensor is its number.
void toList(ProcessedNode& p) {
  const at::Tensor& x = p.input(0).toTensor();
  const int64_t dims = p.input(1).toInt();
  const int64_t kind = p.input(2).toInt();
  TORCH_CHECK(x.dim() == dims, "Output annotation list dimension and runtime tensor dimension ",
              "must match for tolist(): annotation has ", dims, " dims, the tensor ", x.dim());
  const at::ScalarType dtype = x.scalar_type();
  const bool matches = kind == 0   ? at::isIntegralType(dtype, /*includeBool=*/false)
                       : kind == 1 ? at::isFloatingType(dtype)
                                   : dtype == at::kBool;
  TORCH_CHECK(matches, "Output annotation element type and runtime tensor element type must ",
              "match for tolist(): the tensor is ", dtype);
  const at::Tensor values = x.cpu();
  if (dims == 0) {
    p.output(0) = kind == 0   ? c10::IValue(values.item<int64_t>())
                  : kind == 1 ? c10::IValue(values.item<double>())
                              : c10::IValue(values.item<bool>());
    return;
  }
  p.output(0) = nestedList(values, p.node()->output()->type());
}

} // namespace

SRT_REGISTER_KERNEL("prim::tolist", kNative, always(toList));
SRT_REGISTER_KERNEL("aten::__getitem__", kNative,
                    whenMatches("aten::__getitem__.t(t[](a) list, int idx) -> t(*)",
                                [](ProcessedNode& p) {
                                  const auto list = p.input(0).toListRef();
                                  p.output(0) =
                                      list[normalizeIndex(p.input(1).toInt(), list.size())];
                                }));
SRT_REGISTER_KERNEL(
    "aten::slice", kNative,
    whenMatches("aten::slice.t(t[] l, int? start=None, int? end=None, int step=1) -> t[]", slice));
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
SRT_REGISTER_KERNEL("aten::mul", kNative,
                    whenMatches("aten::mul.left_t(t[] l, int n) -> t[]", [](ProcessedNode& p) {
                      repeat(p, p.input(0), p.input(1).toInt());
                    }));
SRT_REGISTER_KERNEL("aten::mul", kNative,
                    whenMatches("aten::mul.right_(int n, t[] l) -> t[]", [](ProcessedNode& p) {
                      repeat(p, p.input(1), p.input(0).toInt());
                    }));
SRT_REGISTER_KERNEL("prim::min", kNative,
                    whenMatches("prim::min.self_int(int[] self) -> int", extremum<true>));
SRT_REGISTER_KERNEL("prim::max", kNative,
                    whenMatches("prim::max.self_int(int[] self) -> int", extremum<false>));
SRT_REGISTER_KERNEL("aten::list", kNative,
                    whenMatches("aten::list.t(t[] l) -> t[]", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toList().copy();
                    }));
// `list += other`: extends the list in place and returns it, as the JIT does.
SRT_REGISTER_KERNEL("aten::add_", kNative,
                    whenMatches("aten::add_.t(t[](a!) self, t[] b) -> t[]", [](ProcessedNode& p) {
                      extend(p);
                      p.output(0) = p.input(0);
                    }));
// `list.copy()`: a new list of the same elements.
SRT_REGISTER_KERNEL("aten::copy", kNative,
                    whenMatches("aten::copy.t(t[](a) self) -> t[]", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toList().copy();
                    }));
// Python's sum() of a list of numbers, added in order as the JIT does.
SRT_REGISTER_KERNEL("aten::sum", kNative,
                    whenMatches("aten::sum.int(int[] self) -> int", [](ProcessedNode& p) {
                      int64_t total = 0;
                      for (const c10::IValue& element : p.input(0).toListRef()) {
                        total += element.toInt();
                      }
                      p.output(0) = total;
                    }));
SRT_REGISTER_KERNEL("aten::sum", kNative,
                    whenMatches("aten::sum.float(float[] self) -> float", [](ProcessedNode& p) {
                      double total = 0;
                      for (const c10::IValue& element : p.input(0).toListRef()) {
                        total += element.toDouble();
                      }
                      p.output(0) = total;
                    }));
SRT_REGISTER_KERNEL("aten::sum", kNative,
                    whenMatches("aten::sum.bool(bool[] self) -> int", [](ProcessedNode& p) {
                      int64_t total = 0;
                      for (const c10::IValue& element : p.input(0).toListRef()) {
                        total += element.toBool() ? 1 : 0;
                      }
                      p.output(0) = total;
                    }));
SRT_REGISTER_KERNEL("aten::insert", kNative,
                    whenMatches("aten::insert.t(t[](a!) self, int idx, t(b -> *) el) -> ()",
                                insert));
SRT_REGISTER_KERNEL("aten::extend", kNative,
                    whenMatches("aten::extend.t(t[](a!) self, t[] other) -> ()", extend));
SRT_REGISTER_KERNEL("aten::_set_item", kNative,
                    whenMatches("aten::_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)",
                                setItem));
// Appends in place and returns the same list, as the JIT does: the caller's list changes too.
SRT_REGISTER_KERNEL("aten::append", kNative,
                    whenMatches("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
                                [](ProcessedNode& p) {
                                  c10::impl::GenericList list = p.input(0).toList();
                                  list.push_back(p.input(1));
                                  p.output(0) = std::move(list);
                                }));

} // namespace srt::ops
