// libFuzzer harness 1: fuzzed call arguments against zoo models.
//
// The bytes decode into a model choice, an arity, positional arguments (tensors of any dtype,
// rank, shape and memory layout, or scalars, strings, lists, None) and keyword arguments (valid,
// unknown, empty and duplicate names). Properties checked on every case:
//   1. the run ends in a result or a c10::Error / std::exception (a crash, an abort, a sanitizer
//      report or another exception is a finding);
//   2. when both the JIT and static_runtime accept the arguments, they agree;
//   3. afterwards the same runtime still runs a valid input set and matches the JIT.
// Models come from the zoo directory ($SRT_FUZZ_ZOO_DIR, else the one compiled in).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include "fuzz_support.h"
#include "harness/compare.h"
#include "harness/zoo.h"
#include "static_runtime/static_runtime.h"

namespace {

using srt::fuzz::Fill;

// Models with tensor, optional-tensor, scalar and keyword parameters, control flow, in-place ops,
// integer indices, list/dict/tuple outputs and the fused transformer and GEMM paths.
const char* const kModels[] = {
    "mlp",
    "transformer_block",
    "deep_and_wide",
    "kwargs_defaults",
    "branch_on_value",
    "loop_on_value",
    "inplace_ops",
    "int_tensor_input",
    "embedding_bag",
    "view_chain",
    "dict_output",
    "cat",
    "split",
    "reductions",
    "scalar_arithmetic",
    "layer_norm",
};

struct Target {
  std::string name;
  torch::jit::Module jit;
  std::unique_ptr<srt::StaticModule> module;
  std::unique_ptr<srt::StaticRuntime> runtime;
  std::vector<srt::testing::InputSet> valid;
  std::vector<c10::IValue> expected; // the JIT's result for each valid set
};

// Outcomes, printed at exit: how many cases got past binding and how many were compared.
struct Outcomes {
  size_t cases = 0, succeeded = 0, c10_errors = 0, other_exceptions = 0, compared = 0;
} g_outcomes;

void printOutcomes() {
  std::fprintf(stderr,
               "fuzz_inputs: %zu cases: %zu ran, %zu c10::Error, %zu other std::exception; "
               "%zu compared with the JIT; every case followed by a valid run\n",
               g_outcomes.cases, g_outcomes.succeeded, g_outcomes.c10_errors,
               g_outcomes.other_exceptions, g_outcomes.compared);
}

std::vector<Target>& targets() {
  static std::vector<Target> all;
  return all;
}

// Loop counts bound the work one case can ask for.
constexpr int64_t kMaxInt = 48;

// loop_on_value halves a tensor until its largest magnitude is <= 1: an infinite input never
// gets there, in the JIT or in static_runtime. Such models get finite values only.
bool g_finite_values_only = false;

struct Case {
  std::vector<c10::IValue> args;
  srt::Kwargs kwargs;
  // Inputs holding NaN/Inf/extremes, or too big to also run through the JIT cheaply: checked
  // only for "no crash", not compared.
  bool compare = true;
  size_t bytes = 0;
};

std::vector<int64_t> mutateShape(FuzzedDataProvider& fdp, std::vector<int64_t> shape) {
  // Up to 2^22: a zero-size tensor may have a 2^40-long dimension, but split/unbind/chunk of it
  // must return 2^38 views, a list no machine can allocate (ATen's split is the same): under
  // ASan that is an abort in operator new, not a finding.
  static const int64_t kDims[] = {0,  1,  2,  3,   4,    5,    7,     8,       16,
                                  31, 64, 65, 128, 1000, 4096, 65536, 1 << 20, 1 << 22};
  switch (fdp.ConsumeIntegralInRange<int>(0, 6)) {
  case 0: // keep: the common case reaches the deepest code
  case 1:
    break;
  case 2: // one dimension changed
    if (!shape.empty()) {
      shape[fdp.ConsumeIntegralInRange<size_t>(0, shape.size() - 1)] = fdp.PickValueInArray(kDims);
    }
    break;
  case 3: // one dimension dropped
    if (!shape.empty()) {
      shape.erase(shape.begin() + fdp.ConsumeIntegralInRange<size_t>(0, shape.size() - 1));
    }
    break;
  case 4: // one dimension added
    shape.insert(shape.begin() + fdp.ConsumeIntegralInRange<size_t>(0, shape.size()),
                 fdp.PickValueInArray(kDims));
    break;
  case 5: // zero-size
    if (!shape.empty()) {
      shape[fdp.ConsumeIntegralInRange<size_t>(0, shape.size() - 1)] = 0;
    }
    break;
  default: { // anything, up to rank 6
    shape.assign(fdp.ConsumeIntegralInRange<size_t>(0, 6), 0);
    for (int64_t& dim : shape) {
      dim = fdp.ConsumeBool() ? fdp.PickValueInArray(kDims)
                              : fdp.ConsumeIntegralInRange<int64_t>(0, 300);
    }
  }
  }
  return shape;
}

c10::IValue fuzzTensor(FuzzedDataProvider& fdp, const at::Tensor* like, Case& c) {
  std::vector<int64_t> shape = like ? like->sizes().vec() : std::vector<int64_t>{};
  shape = mutateShape(fdp, shape);
  const c10::ScalarType dtype = like && fdp.ConsumeProbability<float>() < 0.7f
                                    ? like->scalar_type()
                                    : srt::fuzz::pickDtype(fdp);
  Fill fill = Fill::kSmall;
  at::Tensor tensor = srt::fuzz::makeTensor(fdp, shape, dtype, fill, !g_finite_values_only);
  if (!tensor.defined()) {
    // Over the size cap: a small tensor keeps the case going.
    tensor = at::zeros({2, 2}, at::TensorOptions().dtype(dtype));
  }
  if (fill == Fill::kSpecial) {
    c.compare = false;
  }
  if (c10::isFloatingType(dtype) && fdp.ConsumeProbability<float>() < 0.05f) {
    tensor = tensor.detach().requires_grad_(true);
  }
  c.bytes += tensor.numel() * tensor.element_size();
  return tensor;
}

c10::IValue fuzzValue(FuzzedDataProvider& fdp, const c10::IValue* like, Case& c, int depth = 0) {
  // Mostly a variation of the valid argument at this position, so the run gets past binding.
  if (like && fdp.ConsumeProbability<float>() < 0.75f) {
    if (like->isTensor()) {
      return fuzzTensor(fdp, &like->toTensor(), c);
    }
    if (like->isInt()) {
      return fdp.ConsumeIntegralInRange<int64_t>(-3, kMaxInt);
    }
    if (like->isDouble()) {
      return fdp.PickValueInArray({0.0, -1.5, 2.0, 1e300, std::nan("")});
    }
    return *like;
  }
  switch (fdp.ConsumeIntegralInRange<int>(0, depth < 2 ? 8 : 5)) {
  case 0:
  case 1:
    return fuzzTensor(fdp, nullptr, c);
  case 2:
    return c10::IValue();
  case 3:
    return fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(-3, kMaxInt)
                             : c10::IValue(fdp.ConsumeFloatingPoint<double>());
  case 4:
    return fdp.ConsumeBool();
  case 5:
    return fdp.ConsumeRandomLengthString(16);
  case 6: {
    c10::List<int64_t> ints;
    for (size_t n = fdp.ConsumeIntegralInRange<size_t>(0, 4); n > 0; --n) {
      ints.push_back(fdp.ConsumeIntegralInRange<int64_t>(-3, 70));
    }
    return ints;
  }
  case 7: {
    c10::List<at::Tensor> tensors;
    for (size_t n = fdp.ConsumeIntegralInRange<size_t>(0, 3); n > 0; --n) {
      tensors.push_back(fuzzTensor(fdp, nullptr, c).toTensor());
    }
    return tensors;
  }
  default: {
    std::vector<c10::IValue> elements;
    for (size_t n = fdp.ConsumeIntegralInRange<size_t>(0, 3); n > 0; --n) {
      elements.push_back(fuzzValue(fdp, nullptr, c, depth + 1));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  }
}

Case fuzzCase(FuzzedDataProvider& fdp, const Target& target, const srt::testing::InputSet& base) {
  Case c;
  const auto& schema = target.module->schema();
  // Arity: usually the valid one, sometimes fewer or more than forward takes.
  size_t arity = base.args.size();
  if (fdp.ConsumeProbability<float>() < 0.25f) {
    arity = fdp.ConsumeIntegralInRange<size_t>(0, schema.arguments().size() + 2);
  }
  for (size_t i = 0; i < arity; ++i) {
    c.args.push_back(fuzzValue(fdp, i < base.args.size() ? &base.args[i] : nullptr, c));
  }
  for (const auto& [name, value] : base.kwargs) {
    if (fdp.ConsumeBool()) {
      c.kwargs.emplace(name, fuzzValue(fdp, &value, c));
    }
  }
  // Extra keywords: forward's own names (duplicating a positional one or not), "self", unknown.
  for (size_t n = fdp.ConsumeIntegralInRange<size_t>(0, 3); n > 0; --n) {
    std::string name;
    switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
    case 1:
      if (!schema.arguments().empty()) {
        name =
            schema.arguments()[fdp.ConsumeIntegralInRange<size_t>(0, schema.arguments().size() - 1)]
                .name();
      }
      break;
    case 2:
      name = "self";
      break;
    default:
      name = fdp.ConsumeRandomLengthString(12);
    }
    c.kwargs[name] = fuzzValue(fdp, nullptr, c);
  }
  return c;
}

// Bytes and count of the tensors in a result: a reduction over a zero-size dimension of a fuzzed
// shape can return hundreds of MiB from an empty input, a split of one a million empty views.
struct ResultSize {
  size_t bytes = 0;
  size_t tensors = 0;
};

void addResultSize(const c10::IValue& value, ResultSize& size) {
  if (value.isTensor()) {
    size.bytes += value.toTensor().defined() ? value.toTensor().nbytes() : 0;
    ++size.tensors;
  } else if (value.isTuple() || value.isList()) {
    for (const auto& element :
         value.isTuple() ? value.toTupleRef().elements().vec() : value.toList().vec()) {
      addResultSize(element, size);
    }
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      addResultSize(entry.value(), size);
    }
  }
}

bool cheapToCompare(const c10::IValue& result) {
  ResultSize size;
  addResultSize(result, size);
  return size.bytes <= (size_t{16} << 20) && size.tensors <= 1024;
}

std::string describeCase(const Target& target, const Case& c) {
  std::string text = "model " + target.name + ", args:";
  for (const auto& arg : c.args) {
    text += "\n  " + srt::fuzz::describe(arg);
  }
  for (const auto& [name, value] : c.kwargs) {
    text += "\n  kwarg '" + name + "': " + srt::fuzz::describe(value);
  }
  return text;
}

// The arguments are copied per run, layouts kept: a runtime that wrote into its inputs must not
// make the JIT see different values.
std::vector<c10::IValue> cloneArgs(const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> copies;
  for (const auto& arg : args) {
    copies.push_back(srt::fuzz::cloneExact(arg));
  }
  return copies;
}

srt::Kwargs cloneKwargs(const srt::Kwargs& kwargs) {
  srt::Kwargs copies;
  for (const auto& [name, value] : kwargs) {
    copies.emplace(name, srt::fuzz::cloneExact(value));
  }
  return copies;
}

// The tolerance for comparing with the JIT: kernels differ in summation order and fused
// activation code, and half/bfloat16 round at every step.
double toleranceFor(const Case& c) {
  for (const auto& arg : c.args) {
    if (arg.isTensor() && arg.toTensor().defined() &&
        (arg.toTensor().scalar_type() == at::kHalf ||
         arg.toTensor().scalar_type() == at::kBFloat16)) {
      return 5e-2;
    }
  }
  return 1e-3;
}

void checkStillWorks(Target& target, size_t set, const std::string& after) {
  const auto& valid = target.valid[set];
  c10::IValue result;
  try {
    result = (*target.runtime)(cloneArgs(valid.args), cloneKwargs(valid.kwargs));
  } catch (const std::exception& error) {
    srt::fuzz::reportFinding("runtime broken: a valid input set of " + target.name +
                             " fails after " + after + ":\n" + error.what());
  }
  std::string difference = srt::testing::compareIValues(target.expected[set], result, 1e-4);
  if (!difference.empty()) {
    srt::fuzz::reportFinding("runtime broken: " + target.name +
                             " gives a wrong result for a valid input set after " + after + ": " +
                             difference);
  }
}

void loadTargets() {
  const char* dir = std::getenv("SRT_FUZZ_ZOO_DIR");
  if (dir) {
    setenv("SRT_ZOO_DIR", dir, 1); // what harness/zoo.cpp reads
  }
  for (const char* name : kModels) {
    Target target;
    target.name = name;
    try {
      target.jit = srt::testing::loadZooModel(name);
      target.valid = srt::testing::loadZooInputs(name);
      target.module = std::make_unique<srt::StaticModule>(target.jit);
      target.runtime = std::make_unique<srt::StaticRuntime>(*target.module);
      for (const auto& set : target.valid) {
        target.expected.push_back(target.jit.forward(cloneArgs(set.args), cloneKwargs(set.kwargs)));
      }
    } catch (const std::exception& error) {
      std::cerr << "fuzz_inputs: cannot load zoo model '" << name << "' from "
                << srt::testing::zooDir()
                << " (build the model_zoo target or set SRT_FUZZ_ZOO_DIR): " << error.what()
                << "\n";
      std::exit(2);
    }
    targets().push_back(std::move(target));
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // One thread: the machine is shared, and the fuzzer wants exec/s, not parallel kernels.
  at::set_num_threads(1);
  loadTargets();
  std::atexit(printOutcomes);
  // From here the reference is the plain interpreter: no profiling re-specialization per fuzzed
  // shape. Only after the StaticModules are built: freezing does not inline without it.
  torch::jit::setGraphExecutorOptimize(false);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  auto& all = targets();
  Target& target = all[fdp.ConsumeIntegralInRange<size_t>(0, all.size() - 1)];
  const size_t set = fdp.ConsumeIntegralInRange<size_t>(0, target.valid.size() - 1);
  g_finite_values_only = target.name == "loop_on_value";
  Case c;
  try {
    c = fuzzCase(fdp, target, target.valid[set]);
  } catch (const c10::Error&) {
    // ATen refused to build the fuzzed input itself (e.g. as_strided's numel overflows for
    // sizes whose product exceeds int64 even when one of them is 0): nothing to run.
    return 0;
  }

  c10::IValue ours;
  bool ok = false;
  std::string outcome;
  try {
    ours = (*target.runtime)(cloneArgs(c.args), cloneKwargs(c.kwargs));
    ok = true;
    outcome = "a fuzzed run that succeeded";
    ++g_outcomes.succeeded;
  } catch (const c10::Error& error) {
    outcome = std::string("a fuzzed run that threw c10::Error: ") + error.what_without_backtrace();
    ++g_outcomes.c10_errors;
  } catch (const std::exception& error) {
    outcome = std::string("a fuzzed run that threw: ") + error.what();
    ++g_outcomes.other_exceptions;
  }
  ++g_outcomes.cases;
  outcome += "\n" + describeCase(target, c);
  static const bool verbose = std::getenv("SRT_FUZZ_VERBOSE") != nullptr;
  if (verbose) {
    std::fprintf(stderr, "fuzz_inputs case: %s\n", outcome.c_str());
  }

  // Property 2: agreement with the JIT where both accept the arguments. Big inputs or results
  // (over 16 MiB or 1024 tensors) would cost seconds to compare; they only check "no crash".
  if (ok && c.compare && c.bytes <= (size_t{4} << 20) && cheapToCompare(ours)) {
    c10::IValue reference;
    bool reference_ok = false;
    try {
      reference = target.jit.forward(cloneArgs(c.args), cloneKwargs(c.kwargs));
      reference_ok = true;
    } catch (const std::exception&) {
      // The JIT refuses what we accept (e.g. a kwarg it binds differently): not a property.
    }
    if (reference_ok) {
      ++g_outcomes.compared;
      std::string difference = srt::testing::compareIValues(reference, ours, toleranceFor(c));
      if (!difference.empty()) {
        srt::fuzz::reportFinding("static_runtime and the JIT disagree: " + difference + "\n" +
                                 describeCase(target, c) +
                                 "\nJIT result: " + srt::fuzz::describe(reference) +
                                 "\nstatic_runtime result: " + srt::fuzz::describe(ours));
      }
    }
  }
  // Property 3: the runtime keeps working.
  checkStillWorks(target, (set + 1) % target.valid.size(), outcome);
  return 0;
}
