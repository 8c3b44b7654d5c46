// Python call arguments -> IValues, converted by the types forward's schema declares.
//
// Only conversion happens here. Arity, missing and unknown keywords are left to the C++
// module's own binding so that Python and C++ callers get the same messages: an argument the
// schema does not know is passed through with its inferred type (or as None) to be reported.
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "static_runtime/argument_binding.h"

namespace py = pybind11;

namespace srt::python {
namespace {

bool acceptsNone(const c10::TypePtr& type) {
  switch (type->kind()) {
  case c10::TypeKind::OptionalType:
  case c10::TypeKind::NoneType:
  case c10::TypeKind::AnyType:
    return true;
  default:
    return false;
  }
}

[[noreturn]] void throwMismatch(const c10::FunctionSchema& schema, size_t position,
                                py::handle object, const std::string& details) {
  const c10::Argument& argument = schema.arguments()[position];
  TORCH_CHECK(false, "static_runtime: ",
              schema.formatTypeMismatchMsg(argument, torch::jit::friendlyTypeName(object), position,
                                           py::repr(object).cast<std::string>()),
              details.empty() ? "" : "\nDetails: ", details);
}

c10::IValue toArgument(const c10::FunctionSchema& schema, size_t position, py::handle object) {
  const c10::Argument& argument = schema.arguments()[position];
  // toIValue turns None into an undefined Tensor; a kernel would fail on it far from here.
  if (object.is_none() && !acceptsNone(argument.real_type())) {
    throwMismatch(schema, position, object, "");
  }
  try {
    return torch::jit::toIValue(object, argument.real_type(), argument.N());
  } catch (const py::error_already_set& e) {
    throwMismatch(schema, position, object, e.what());
  } catch (const c10::Error& e) {
    throwMismatch(schema, position, object, e.what_without_backtrace());
  } catch (const std::exception& e) {
    // py::cast_error and the std::runtime_error toIValue throws for unconvertible objects.
    throwMismatch(schema, position, object, e.what());
  }
}

// For an argument the schema has no place for: only its presence matters, the binder rejects it.
c10::IValue passThrough(py::handle object) {
  try {
    return torch::jit::toTypeInferredIValue(object);
  } catch (const std::exception&) {
    return c10::IValue();
  }
}

} // namespace

std::vector<c10::IValue> toArguments(const c10::FunctionSchema& schema, const py::args& args,
                                     const py::kwargs& kwargs, Kwargs& bound_kwargs) {
  const size_t num_parameters = schema.arguments().size();
  std::vector<c10::IValue> inputs;
  inputs.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    inputs.push_back(i < num_parameters ? toArgument(schema, i, args[i]) : passThrough(args[i]));
  }
  for (const auto& [key, value] : kwargs) {
    std::string name = py::str(key);
    const c10::optional<int> position = schema.argumentIndexWithName(name);
    c10::IValue converted = position ? toArgument(schema, *position, value) : passThrough(value);
    bound_kwargs.emplace(std::move(name), std::move(converted));
  }
  return inputs;
}

} // namespace srt::python
