// AITemplate-style I/O: tensors in and out by position or by name, results written into
// buffers the caller preallocated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include "static_runtime/argument_binding.h"

namespace srt {

class StaticRuntime;

using Shape = std::vector<int64_t>;
using NamedTensors = std::unordered_map<std::string, at::Tensor>;

// Runs one StaticRuntime with tensor inputs and writes each tensor output into the caller's
// preallocated tensor. Outputs are named "output_0", "output_1", ... in forward's return order
// (the elements of a returned tuple); inputs by forward's parameter names. Not thread-safe, like
// the runtime it wraps, which must outlive it.
class TensorIO {
public:
  explicit TensorIO(StaticRuntime& runtime);

  const std::vector<std::string>& inputNames() const { return input_names_; }
  const std::vector<std::string>& outputNames() const { return output_names_; }
  // Throws c10::Error listing the valid names when `name` is not one.
  size_t inputIndex(const std::string& name) const;
  size_t outputIndex(const std::string& name) const;

  // Inputs in forward's order; outputs[i] receives output i: it must be contiguous, of the
  // output's dtype, and hold at least as many elements as the result (a buffer of the maximum
  // shape, say). Returns the actual shape of each output. Errors name the offending output.
  std::vector<Shape> run(const std::vector<at::Tensor>& inputs,
                         const std::vector<at::Tensor>& outputs);
  // The same by name: inputs bind like keyword arguments (defaults fill the rest); every output
  // must be given.
  std::vector<Shape> runByName(const NamedTensors& inputs, const NamedTensors& outputs);

  // The elementwise largest shape `name` has had in the runs so far; std::nullopt before the
  // first run (or when its rank changed between runs).
  std::optional<Shape> outputMaximumShape(const std::string& name) const;

private:
  std::vector<Shape> runInto(std::vector<c10::IValue> args, const Kwargs& kwargs,
                             const std::vector<at::Tensor>& outputs);

  StaticRuntime& runtime_;
  std::vector<std::string> input_names_;
  std::vector<std::string> output_names_;
  std::vector<std::optional<Shape>> maximum_shapes_;
};

} // namespace srt
