#include "harness/differential.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace srt::testing {

std::vector<StaticModuleOptions> allValidOptions() {
  std::vector<StaticModuleOptions> result;
  for (int bits = 0; bits < 32; ++bits) {
    StaticModuleOptions options;
    options.enable_out_variant = bits & 1;
    options.optimize_memory = bits & 2;
    options.manage_output_tensors = bits & 4;
    options.use_copy_variants = bits & 8;
    options.use_maybe_copy_variants = bits & 16;
    if (!options.enable_out_variant && (options.optimize_memory || options.manage_output_tensors)) {
      continue;
    }
    result.push_back(options);
  }
  return result;
}

std::string describe(const StaticModuleOptions& options) {
  std::ostringstream out;
  out << "{enable_out_variant=" << options.enable_out_variant
      << ", optimize_memory=" << options.optimize_memory
      << ", manage_output_tensors=" << options.manage_output_tensors
      << ", use_copy_variants=" << options.use_copy_variants
      << ", use_maybe_copy_variants=" << options.use_maybe_copy_variants
      << ", gemm_backend=" << toString(options.gemm_backend) << "}";
  return out.str();
}

c10::IValue deepClone(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    return tensor.defined() ? c10::IValue(tensor.clone()) : value;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const auto& element : value.toTupleRef().elements()) {
      elements.push_back(deepClone(element));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (value.isList()) {
    auto list = value.toList();
    c10::impl::GenericList copy(list.elementType());
    for (const c10::IValue& element : list) {
      copy.push_back(deepClone(element));
    }
    return copy;
  }
  if (value.isGenericDict()) {
    auto dict = value.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) {
      copy.insert(entry.key(), deepClone(entry.value()));
    }
    return copy;
  }
  return value;
}

namespace {

// Visits every tensor in a (possibly nested) value in a fixed order, with its position.
template <typename Visit>
void forEachTensor(const c10::IValue& value, const std::string& path, Visit& visit) {
  if (value.isTensor()) {
    visit(value.toTensor(), path);
  } else if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      forEachTensor(elements[i], path + "[" + std::to_string(i) + "]", visit);
    }
  } else if (value.isList()) {
    const c10::List<c10::IValue> list = value.toList();
    for (size_t i = 0; i < list.size(); ++i) {
      forEachTensor(list.get(i), path + "[" + std::to_string(i) + "]", visit);
    }
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      forEachTensor(entry.key(), path + "[key " + c10::str(entry.key()) + "]", visit);
      forEachTensor(entry.value(), path + "[" + c10::str(entry.key()) + "]", visit);
    }
  }
}

} // namespace

TensorBytes::TensorBytes(const c10::IValue& value) {
  auto record = [this](const at::Tensor& tensor, const std::string&) {
    Record& r = records_.emplace_back();
    if (!tensor.defined()) {
      return;
    }
    r.sizes = tensor.sizes().vec();
    r.strides = tensor.strides().vec();
    r.storage_offset = tensor.storage_offset();
    r.dtype = tensor.scalar_type();
    if (tensor.device().is_cpu() && tensor.has_storage() && tensor.storage().data() != nullptr) {
      const auto* data = static_cast<const uint8_t*>(tensor.storage().data());
      r.bytes.assign(data, data + tensor.storage().nbytes());
    }
  };
  forEachTensor(value, "", record);
}

std::string TensorBytes::compare(const c10::IValue& value, const std::string& name) const {
  size_t index = 0;
  std::string problem;
  auto check = [&](const at::Tensor& tensor, const std::string& position) {
    if (!problem.empty()) {
      return;
    }
    const std::string where = name + position;
    if (index >= records_.size()) {
      problem = where + ": a tensor that was not there before";
      return;
    }
    const Record& r = records_[index++];
    if (!tensor.defined()) {
      problem = r.dtype == c10::ScalarType::Undefined ? "" : where + ": became undefined";
      return;
    }
    if (tensor.scalar_type() != r.dtype || tensor.sizes().vec() != r.sizes ||
        tensor.strides().vec() != r.strides || tensor.storage_offset() != r.storage_offset) {
      problem = where + ": dtype, sizes, strides or offset changed (now " +
                c10::str(tensor.scalar_type(), tensor.sizes(), " strides ", tensor.strides(),
                         " offset ", tensor.storage_offset()) +
                ", was " +
                c10::str(r.dtype, c10::IntArrayRef(r.sizes), " strides ",
                         c10::IntArrayRef(r.strides), " offset ", r.storage_offset) +
                ")";
      return;
    }
    if (r.bytes.empty()) {
      return;
    }
    const auto* data = static_cast<const uint8_t*>(tensor.storage().data());
    if (tensor.storage().nbytes() != r.bytes.size() || data == nullptr) {
      problem = where + ": its storage was resized or freed";
      return;
    }
    const auto mismatch = std::mismatch(r.bytes.begin(), r.bytes.end(), data);
    if (mismatch.first != r.bytes.end()) {
      problem = where + ": byte " + std::to_string(mismatch.first - r.bytes.begin()) + " of " +
                std::to_string(r.bytes.size()) + " in its storage was written";
    }
  };
  forEachTensor(value, "", check);
  if (problem.empty() && index != records_.size()) {
    problem = name + ": holds fewer tensors than before";
  }
  return problem;
}

torch::jit::Module scriptModule(const std::string& source) {
  torch::jit::Module module("TestModule");
  module.define(source);
  module.eval();
  return module;
}

namespace {

// What the JIT returns for an input set, and what it leaves in (its copy of) the inputs: an
// in-place op on an argument writes into the caller's tensor in TorchScript, and must with us too.
struct Reference {
  c10::IValue outputs;
  InputSet inputs_after;
  bool mutates_inputs = false;
};

InputSet cloneInputs(const InputSet& inputs) {
  InputSet copy;
  for (const auto& arg : inputs.args) {
    copy.args.push_back(deepClone(arg));
  }
  for (const auto& [name, value] : inputs.kwargs) {
    copy.kwargs.emplace(name, deepClone(value));
  }
  return copy;
}

Reference runReference(const torch::jit::Module& module, const InputSet& inputs) {
  torch::NoGradGuard no_grad;
  Reference reference;
  reference.inputs_after = cloneInputs(inputs);
  InputSet passed = reference.inputs_after; // the same tensors: the JIT writes into inputs_after
  auto method = module.get_method("forward");
  reference.outputs = method(std::move(passed.args), passed.kwargs);
  for (size_t i = 0; i < inputs.args.size(); ++i) {
    reference.mutates_inputs |=
        !compareIValues(inputs.args[i], reference.inputs_after.args[i], 0.0).empty();
  }
  for (const auto& [name, value] : inputs.kwargs) {
    reference.mutates_inputs |=
        !compareIValues(value, reference.inputs_after.kwargs.at(name), 0.0).empty();
  }
  return reference;
}

// "'x' (input 0)" for the i-th positional argument; keyword arguments go by their keyword.
std::string argumentName(const StaticModule& module, size_t i) {
  const auto& arguments = module.schema().arguments();
  return "'" + (i < arguments.size() ? arguments[i].name() : "?") + "' (input " +
         std::to_string(i) + ")";
}

// The inputs of one run, recorded byte for byte before it.
struct InputBytes {
  explicit InputBytes(const InputSet& inputs) {
    for (const auto& arg : inputs.args) {
      args.emplace_back(arg);
    }
    for (const auto& [name, value] : inputs.kwargs) {
      kwargs.emplace(name, TensorBytes(value));
    }
  }
  std::vector<TensorBytes> args;
  std::unordered_map<std::string, TensorBytes> kwargs;
};

// Caller tensors are never written: every input holds exactly the bytes it held before the run.
void expectUnwritten(const StaticModule& module, const InputBytes& before, const InputSet& after,
                     const std::string& where) {
  for (size_t i = 0; i < after.args.size(); ++i) {
    EXPECT_EQ(before.args[i].compare(after.args[i], argumentName(module, i)), "")
        << where << ": the runtime wrote into a caller's input";
  }
  for (const auto& [name, value] : after.kwargs) {
    EXPECT_EQ(before.kwargs.at(name).compare(value, "'" + name + "' (keyword)"), "")
        << where << ": the runtime wrote into a caller's input";
  }
}

// Where TorchScript writes into its inputs, ours must end up holding what the JIT's did.
void expectWrittenLikeJit(const StaticModule& module, const InputSet& jit_after,
                          const InputSet& after, double tolerance, const std::string& where) {
  for (size_t i = 0; i < after.args.size(); ++i) {
    EXPECT_EQ(compareIValues(jit_after.args[i], after.args[i], tolerance, argumentName(module, i)),
              "")
        << where << ": the model writes into this input in TorchScript; ours must too";
  }
  for (const auto& [name, value] : after.kwargs) {
    EXPECT_EQ(compareIValues(jit_after.kwargs.at(name), value, tolerance, "'" + name + "'"), "")
        << where << ": the model writes into this input in TorchScript; ours must too";
  }
}

} // namespace

void expectMatchesJit(const torch::jit::Module& module, const std::vector<InputSet>& inputs,
                      const StaticModuleOptions& options, double tolerance) {
  ASSERT_GE(inputs.size(), 1u);
  std::vector<Reference> references;
  for (const InputSet& set : inputs) {
    references.push_back(runReference(module, set));
  }
  StaticModule static_module(module, options);
  StaticRuntime runtime(static_module);

  // Each set twice (the second run reuses the first run's memory), then back to the first set.
  std::vector<size_t> order;
  for (size_t i = 0; i < inputs.size(); ++i) {
    order.insert(order.end(), {i, i});
  }
  order.push_back(0);

  for (size_t run = 0; run < order.size(); ++run) {
    const Reference& reference = references[order[run]];
    const std::string where = "input set " + std::to_string(order[run]) + ", run " +
                              std::to_string(run) + ", options " + describe(options);
    // The caller's own tensors, unless the model writes into them: then each run gets fresh
    // copies (as the JIT did), or the runs would compound the writes.
    auto check_run = [&](auto&& run_once, const std::string& entry_point) {
      const InputSet& original = inputs[order[run]];
      InputSet set = reference.mutates_inputs ? cloneInputs(original) : original;
      const InputBytes before(set);
      c10::IValue actual = run_once(set);
      EXPECT_EQ(compareIValues(reference.outputs, actual, tolerance), "") << where << entry_point;
      if (reference.mutates_inputs) {
        expectWrittenLikeJit(static_module, reference.inputs_after, set, tolerance,
                             where + entry_point);
      } else {
        expectUnwritten(static_module, before, set, where + entry_point);
      }
    };
    check_run([&](const InputSet& set) { return runtime(set.args, set.kwargs); }, "");
    // With manage_output_tensors the outputs live in the runtime until handed back.
    runtime.deallocateOutputTensors();
    // The module's own thread-safe entry point must agree too.
    check_run([&](const InputSet& set) { return static_module(set.args, set.kwargs); },
              " (StaticModule::operator())");
  }
}

void expectRuntimeMatchesJit(const torch::jit::Module& module,
                             const std::vector<at::Tensor>& inputs,
                             const StaticModuleOptions& options,
                             const RuntimeOptions& runtime_options, double tolerance) {
  torch::jit::Module reference = module.clone();
  StaticModule prepared(module, options);
  StaticRuntime runtime(prepared, runtime_options);
  for (size_t input = 0; input < inputs.size(); ++input) {
    const c10::IValue expected = reference.forward({inputs[input]});
    for (int run = 0; run < 2; ++run) {
      const std::string difference = compareIValues(expected, runtime({inputs[input]}), tolerance);
      EXPECT_TRUE(difference.empty())
          << describe(options) << ", input " << input << " " << inputs[input].sizes() << ", run "
          << run << ": " << difference;
    }
  }
}

void expectMatchesJit(const std::string& source, const std::vector<InputSet>& inputs,
                      double tolerance) {
  torch::jit::Module module = scriptModule(source);
  for (const StaticModuleOptions& options : allValidOptions()) {
    expectMatchesJit(module, inputs, options, tolerance);
  }
}

} // namespace srt::testing
