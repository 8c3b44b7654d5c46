#include "static_runtime/argument_binding.h"

#include <string>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema_inl.h>
#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

namespace srt {
namespace {

// What every kernel and the memory planner assume of a tensor: dense, strided CPU memory in a
// plain dtype. The JIT would run some other tensors through its generic operators, but our
// out-variant kernels write CPU outputs and the planner points storages into a CPU arena, so a
// meta, sparse, quantized or nested tensor would fail deep inside a node, or worse, not fail at
// all. None for an Optional[Tensor] (an undefined tensor) is the kernels' business.
bool isRunnable(const at::Tensor& tensor) {
  return !tensor.defined() || (tensor.device().is_cpu() && tensor.layout() == c10::kStrided &&
                               !tensor.is_quantized() && !tensor.is_nested());
}

// Where an element sits in its container; spelled out only for an error message.
struct Position {
  size_t index = 0;
  const c10::IValue* key = nullptr; // for a dict entry
  bool is_key = false;              // the dict's key itself rather than its value
  std::string str() const {
    return key == nullptr ? std::to_string(index) : (is_key ? "key " : "") + c10::str(*key);
  }
};

// Walks containers too: a List[Tensor] or a Dict[str, Tensor] argument carries caller tensors.
// Stops at the first element `visit` returns false for.
template <typename Visit> bool forEachElement(const c10::IValue& value, Visit visit) {
  if (value.isList()) { // any element type, List[Tensor] included
    const c10::List<c10::IValue> list = value.toList();
    for (size_t i = 0; i < list.size(); ++i) {
      if (!visit(list.get(i), Position{i})) {
        return false;
      }
    }
  } else if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      if (!visit(elements[i], Position{i})) {
        return false;
      }
    }
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      if (!visit(entry.key(), Position{0, &entry.key(), true}) ||
          !visit(entry.value(), Position{0, &entry.key(), false})) {
        return false;
      }
    }
  }
  return true;
}

// Called on every argument of every run: builds no strings.
bool allRunnable(const c10::IValue& value) {
  if (value.isTensor()) {
    return isRunnable(value.toTensor());
  }
  if (!value.isList() && !value.isTuple() && !value.isGenericDict()) {
    return true;
  }
  return forEachElement(
      value, [](const c10::IValue& element, const Position&) { return allRunnable(element); });
}

// Throws for the first tensor in `value` that isRunnable refuses, naming it and what was expected.
void explainFirst(const c10::IValue& value, const std::string& name) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    TORCH_CHECK(tensor.device().is_cpu(), "static_runtime: input ", name, " is on device ",
                tensor.device(), "; expected a CPU tensor (static_runtime runs on the CPU only)");
    TORCH_CHECK(tensor.layout() == c10::kStrided, "static_runtime: input ", name, " has layout ",
                tensor.layout(), "; expected a dense (strided) tensor: call .to_dense() first");
    TORCH_CHECK(!tensor.is_quantized(), "static_runtime: input ", name, " is a quantized tensor (",
                tensor.scalar_type(),
                "); expected a float or integer tensor: call .dequantize() first");
    TORCH_CHECK(!tensor.is_nested(), "static_runtime: input ", name,
                " is a nested tensor; expected a dense one: call .to_padded_tensor(0.0) first");
    return;
  }
  forEachElement(value, [&](const c10::IValue& element, const Position& position) {
    explainFirst(element, name + "[" + position.str() + "]");
    return true;
  });
}

// A graph's inputs may declare dtype, sizes or device (an IR graph, a traced one); LibTorch's
// own check then prints both sides as plain 'Tensor'. Says what was declared and what came
// (operator<< prints a TensorType in full; str() would not).
void checkDeclaredType(const c10::Argument& argument, size_t position, const c10::IValue& value) {
  const auto declared = argument.type()->cast<c10::TensorType>();
  if (!declared || !value.isTensor() || !value.toTensor().defined() ||
      (!declared->scalarType() && !declared->dim() && !declared->device())) {
    return; // a plain Tensor: any tensor binds
  }
  const c10::TensorTypePtr actual = c10::TensorType::create(value.toTensor());
  TORCH_CHECK(actual->isSubtypeOf(*declared), "static_runtime: input '", argument.name(),
              "' (argument ", position, ") is ", *actual, "; forward declares ", *declared);
}

} // namespace

void bindArguments(const c10::FunctionSchema& schema, std::vector<c10::IValue>& args,
                   const Kwargs& kwargs) {
  const std::vector<c10::Argument>& arguments = schema.arguments();
  for (size_t i = 0; i < args.size() && i < arguments.size(); ++i) {
    checkDeclaredType(arguments[i], i, args[i]);
  }
  for (size_t i = args.size(); i < arguments.size() && !kwargs.empty(); ++i) {
    const auto found = kwargs.find(arguments[i].name());
    if (found != kwargs.end()) {
      checkDeclaredType(arguments[i], i, found->second);
    }
  }
  try {
    schema.checkAndNormalizeInputs<c10::Type>(args, kwargs);
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    // LibTorch reports unknown or duplicated keywords as std::runtime_error.
    TORCH_CHECK(false, e.what());
  }
  // Bound: args now holds every argument in schema order.
  for (size_t i = 0; i < args.size(); ++i) {
    if (!allRunnable(args[i])) {
      explainFirst(args[i], "'" + arguments[i].name() + "' (argument " + std::to_string(i) + ")");
    }
  }
}

} // namespace srt
