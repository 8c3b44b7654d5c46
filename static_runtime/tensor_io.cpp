#include "static_runtime/tensor_io.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "static_runtime/runtime.h"
#include "static_runtime/static_module.h"

namespace srt {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

size_t indexOf(const std::vector<std::string>& names, const std::string& name, const char* what) {
  auto found = std::find(names.begin(), names.end(), name);
  TORCH_CHECK(found != names.end(), "static_runtime: no ", what, " named '", name, "'; ", what,
              "s are: ", joined(names));
  return found - names.begin();
}

// Writes `result` into the front of the caller's buffer, laid out contiguously.
void writeInto(const at::Tensor& buffer, const at::Tensor& result, const std::string& name) {
  TORCH_CHECK(buffer.defined(), "static_runtime: output '", name, "' was given no tensor");
  TORCH_CHECK(buffer.scalar_type() == result.scalar_type(), "static_runtime: output '", name,
              "' has dtype ", buffer.scalar_type(), " but the model produces ",
              result.scalar_type());
  TORCH_CHECK(buffer.device() == result.device(), "static_runtime: output '", name, "' is on ",
              buffer.device(), " but the model produces it on ", result.device());
  TORCH_CHECK(buffer.is_contiguous(), "static_runtime: output '", name,
              "' must be contiguous to be written into");
  TORCH_CHECK(buffer.numel() >= result.numel(), "static_runtime: output '", name, "' holds ",
              buffer.numel(), " elements but the result has shape ", result.sizes(), " (",
              result.numel(), " elements)");
  buffer.view({-1}).narrow(0, 0, result.numel()).view(result.sizes()).copy_(result);
}

} // namespace

TensorIO::TensorIO(StaticRuntime& runtime) : runtime_(runtime) {
  const c10::FunctionSchema& schema = runtime.module().schema();
  for (const c10::Argument& argument : schema.arguments()) {
    input_names_.push_back(argument.name());
  }
  const c10::TypePtr output_type = runtime.module().outputType();
  const size_t num_outputs =
      output_type->kind() == c10::TypeKind::TupleType ? output_type->containedTypes().size() : 1;
  for (size_t i = 0; i < num_outputs; ++i) {
    output_names_.push_back("output_" + std::to_string(i));
  }
  maximum_shapes_.resize(num_outputs);
}

size_t TensorIO::inputIndex(const std::string& name) const {
  return indexOf(input_names_, name, "input");
}

size_t TensorIO::outputIndex(const std::string& name) const {
  return indexOf(output_names_, name, "output");
}

std::vector<Shape> TensorIO::run(const std::vector<at::Tensor>& inputs,
                                 const std::vector<at::Tensor>& outputs) {
  return runInto(std::vector<c10::IValue>(inputs.begin(), inputs.end()), {}, outputs);
}

std::vector<Shape> TensorIO::runInto(std::vector<c10::IValue> args, const Kwargs& kwargs,
                                     const std::vector<at::Tensor>& outputs) {
  TORCH_CHECK(outputs.size() == output_names_.size(), "static_runtime: the model has ",
              output_names_.size(), " outputs (", joined(output_names_), ") but ", outputs.size(),
              " output tensors were given");
  c10::IValue returned = runtime_(std::move(args), kwargs);
  std::vector<c10::IValue> results;
  if (output_names_.size() == 1 && !returned.isTuple()) {
    results.push_back(std::move(returned));
  } else {
    results = returned.toTupleRef().elements().vec();
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < results.size(); ++i) {
    TORCH_CHECK(results[i].isTensor(), "static_runtime: output '", output_names_[i], "' is a ",
                results[i].tagKind(), ", not a tensor; run it with operator() instead");
    const at::Tensor& result = results[i].toTensor();
    writeInto(outputs[i], result, output_names_[i]);
    shapes.emplace_back(result.sizes().begin(), result.sizes().end());
  }
  // Only once every output was written: a failed run leaves the maxima as they were.
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::optional<Shape>& maximum = maximum_shapes_[i];
    if (!maximum) {
      maximum = shapes[i];
    } else if (maximum->size() == shapes[i].size()) {
      for (size_t d = 0; d < shapes[i].size(); ++d) {
        (*maximum)[d] = std::max((*maximum)[d], shapes[i][d]);
      }
    }
  }
  return shapes;
}

std::vector<Shape> TensorIO::runByName(const NamedTensors& inputs, const NamedTensors& outputs) {
  // Inputs bind as keyword arguments: unknown names are refused and defaults fill the rest.
  Kwargs kwargs;
  for (const auto& [name, tensor] : inputs) {
    inputIndex(name);
    kwargs.emplace(name, tensor);
  }
  for (const auto& [name, tensor] : outputs) {
    outputIndex(name);
  }
  std::vector<at::Tensor> ordered_outputs;
  for (const std::string& name : output_names_) {
    auto found = outputs.find(name);
    TORCH_CHECK(found != outputs.end(), "static_runtime: no tensor given for output '", name, "'");
    ordered_outputs.push_back(found->second);
  }
  return runInto({}, kwargs, ordered_outputs);
}

std::optional<Shape> TensorIO::outputMaximumShape(const std::string& name) const {
  return maximum_shapes_[outputIndex(name)];
}

} // namespace srt
