#include "harness/differential.h"

#include <sstream>

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
      << ", gemm_backend=" << ops::toString(options.gemm_backend) << "}";
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

std::string compareTensors(const at::Tensor& expected, const at::Tensor& actual, double tolerance,
                           const std::string& path) {
  std::ostringstream out;
  if (expected.defined() != actual.defined()) {
    out << path << ": one tensor is undefined";
  } else if (!expected.defined()) {
    return "";
  } else if (expected.scalar_type() != actual.scalar_type()) {
    out << path << ": dtype " << actual.scalar_type() << ", expected " << expected.scalar_type();
  } else if (expected.sizes() != actual.sizes()) {
    out << path << ": shape " << actual.sizes() << ", expected " << expected.sizes();
  } else if (expected.is_floating_point()) {
    if (!at::allclose(expected, actual, tolerance, tolerance, /*equal_nan=*/true)) {
      out << path << ": max abs difference "
          << (expected - actual).abs().nan_to_num(0).max().item<double>() << " > " << tolerance;
    }
  } else if (!at::equal(expected, actual)) {
    out << path << ": values differ";
  }
  return out.str();
}

template <typename Elements>
std::string compareSequences(const Elements& expected, const Elements& actual, double tolerance,
                             const std::string& path) {
  if (expected.size() != actual.size()) {
    return path + ": " + std::to_string(actual.size()) + " elements, expected " +
           std::to_string(expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string difference =
        compareIValues(expected[i], actual[i], tolerance, path + "[" + std::to_string(i) + "]");
    if (!difference.empty()) {
      return difference;
    }
  }
  return "";
}

} // namespace

std::string compareIValues(const c10::IValue& expected, const c10::IValue& actual, double tolerance,
                           const std::string& path) {
  if (expected.tagKind() != actual.tagKind()) {
    return path + ": a " + actual.tagKind() + ", expected a " + expected.tagKind();
  }
  if (expected.isTensor()) {
    return compareTensors(expected.toTensor(), actual.toTensor(), tolerance, path);
  }
  if (expected.isTuple()) {
    return compareSequences(expected.toTupleRef().elements().vec(),
                            actual.toTupleRef().elements().vec(), tolerance, path);
  }
  if (expected.isList()) {
    return compareSequences(expected.toList().vec(), actual.toList().vec(), tolerance, path);
  }
  if (expected.isGenericDict()) {
    auto expected_dict = expected.toGenericDict();
    auto actual_dict = actual.toGenericDict();
    if (expected_dict.size() != actual_dict.size()) {
      return path + ": dict of " + std::to_string(actual_dict.size()) + " entries, expected " +
             std::to_string(expected_dict.size());
    }
    for (const auto& entry : expected_dict) {
      const std::string key_path = path + "[" + c10::str(entry.key()) + "]";
      auto found = actual_dict.find(entry.key());
      if (found == actual_dict.end()) {
        return key_path + ": missing";
      }
      std::string difference = compareIValues(entry.value(), found->value(), tolerance, key_path);
      if (!difference.empty()) {
        return difference;
      }
    }
    return "";
  }
  if (expected.isDouble()) {
    return std::abs(expected.toDouble() - actual.toDouble()) <= tolerance
               ? ""
               : path + ": " + c10::str(actual) + ", expected " + c10::str(expected);
  }
  return expected == actual ? ""
                            : path + ": " + c10::str(actual) + ", expected " + c10::str(expected);
}

torch::jit::Module scriptModule(const std::string& source) {
  torch::jit::Module module("TestModule");
  module.define(source);
  module.eval();
  return module;
}

namespace {

c10::IValue runReference(const torch::jit::Module& module, const InputSet& inputs) {
  torch::NoGradGuard no_grad;
  std::vector<c10::IValue> args;
  for (const auto& arg : inputs.args) {
    args.push_back(deepClone(arg));
  }
  auto method = module.get_method("forward");
  return method(std::move(args), inputs.kwargs);
}

void expectUnmodified(const InputSet& original, const InputSet& after, const std::string& where) {
  for (size_t i = 0; i < original.args.size(); ++i) {
    std::string difference =
        compareIValues(original.args[i], after.args[i], 0.0, "input[" + std::to_string(i) + "]");
    EXPECT_EQ(difference, "") << where << ": the runtime modified a caller's input";
  }
}

} // namespace

void expectMatchesJit(const torch::jit::Module& module, const std::vector<InputSet>& inputs,
                      const StaticModuleOptions& options, double tolerance) {
  ASSERT_GE(inputs.size(), 1u);
  std::vector<c10::IValue> expected;
  for (const InputSet& set : inputs) {
    expected.push_back(runReference(module, set));
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
    const InputSet& set = inputs[order[run]];
    InputSet pristine{{}, set.kwargs};
    for (const auto& arg : set.args) {
      pristine.args.push_back(deepClone(arg));
    }
    const std::string where = "input set " + std::to_string(order[run]) + ", run " +
                              std::to_string(run) + ", options " + describe(options);
    c10::IValue actual = runtime(set.args, set.kwargs);
    EXPECT_EQ(compareIValues(expected[order[run]], actual, tolerance), "") << where;
    expectUnmodified(pristine, set, where);
    // With manage_output_tensors the outputs live in the runtime until handed back.
    runtime.deallocateOutputTensors();
    // The module's own thread-safe entry point must agree too.
    c10::IValue through_module = static_module(set.args, set.kwargs);
    EXPECT_EQ(compareIValues(expected[order[run]], through_module, tolerance), "")
        << where << " (StaticModule::operator())";
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
