// The extension module static_runtime._C: StaticModule for Python callers.
//
// torch must be imported before this module loads (static_runtime/__init__.py does it): the
// casters for Tensor, ScriptModule and Graph are torch's pybind11 classes, registered by torch._C.
#include <string>
#include <utility>

#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "static_runtime/static_runtime.h"

#ifndef SRT_VERSION
#define SRT_VERSION "unknown"
#endif

namespace py = pybind11;

namespace srt::python {

// Defined in arguments.cpp.
std::vector<c10::IValue> toArguments(const c10::FunctionSchema& schema, const py::args& args,
                                     const py::kwargs& kwargs, Kwargs& bound_kwargs);
// Defined in serving.cpp.
void bindServing(py::module_& m, py::class_<StaticModule, std::shared_ptr<StaticModule>>& cls);
// Defined in profiling.cpp.
void bindProfiling(py::module_& m, py::class_<StaticModule, std::shared_ptr<StaticModule>>& cls);

namespace {

struct OptionField {
  const char* name;
  bool StaticModuleOptions::*field;
};

constexpr OptionField kOptionFields[] = {
    {"enable_out_variant", &StaticModuleOptions::enable_out_variant},
    {"optimize_memory", &StaticModuleOptions::optimize_memory},
    {"manage_output_tensors", &StaticModuleOptions::manage_output_tensors},
    {"use_copy_variants", &StaticModuleOptions::use_copy_variants},
    {"use_maybe_copy_variants", &StaticModuleOptions::use_maybe_copy_variants},
};

// Options whose value is one of a few names (C++ enums); each enum has a toString.
template <typename Enum> struct ChoiceOption {
  const char* name;
  Enum StaticModuleOptions::*field;
  std::vector<Enum> choices;

  std::string validChoices() const {
    std::string valid;
    for (Enum choice : choices) {
      valid += std::string(valid.empty() ? "'" : ", '") + toString(choice) + "'";
    }
    return valid;
  }

  void set(StaticModuleOptions& options, const py::handle& value) const {
    if (py::isinstance<py::str>(value)) {
      const std::string wanted = py::str(value);
      for (Enum choice : choices) {
        if (wanted == toString(choice)) {
          options.*field = choice;
          return;
        }
      }
    }
    throw py::type_error(std::string("StaticModule() option '") + name + "' must be one of " +
                         validChoices() + ", got " + std::string(py::repr(value)));
  }
};

const ChoiceOption<GemmBackend> kGemmBackendOption{
    "gemm_backend",
    &StaticModuleOptions::gemm_backend,
    {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten}};
const ChoiceOption<Fp32Precision> kFp32PrecisionOption{
    "fp32_precision",
    &StaticModuleOptions::fp32_precision,
    {Fp32Precision::kIeee, Fp32Precision::kBf16}};
const ChoiceOption<MemoryPlannerAlgorithm> kMemoryPlannerOption{
    "memory_planner",
    &StaticModuleOptions::memory_planner,
    {MemoryPlannerAlgorithm::kGreedyBySize, MemoryPlannerAlgorithm::kNaive}};

std::string validOptionNames() {
  std::string names;
  for (const OptionField& option : kOptionFields) {
    names += names.empty() ? "" : ", ";
    names += option.name;
  }
  return names + ", " + kGemmBackendOption.name + ", " + kFp32PrecisionOption.name + ", " +
         kMemoryPlannerOption.name + ", disabled_passes, unbound_constants";
}

// A list or set of str option value; a bare string is iterable too, and would be taken letter by
// letter.
std::vector<std::string> stringList(const py::handle& value, const std::string& option,
                                    const std::string& what) {
  if (py::isinstance<py::str>(value) || !py::isinstance<py::iterable>(value)) {
    throw py::type_error("StaticModule() option '" + option + "' must be a list or set of " + what +
                         ", got " + std::string(py::str(value.get_type().attr("__name__"))));
  }
  std::vector<std::string> names;
  for (const py::handle& item : value) {
    if (!py::isinstance<py::str>(item)) {
      throw py::type_error("StaticModule() option '" + option + "' must hold " + what +
                           " (str), got " + std::string(py::str(item.get_type().attr("__name__"))));
    }
    names.push_back(item.cast<std::string>());
  }
  return names;
}

StaticModuleOptions optionsFromKwargs(const py::kwargs& kwargs) {
  StaticModuleOptions options;
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    if (name == kGemmBackendOption.name) {
      kGemmBackendOption.set(options, value);
      continue;
    }
    if (name == kFp32PrecisionOption.name) {
      kFp32PrecisionOption.set(options, value);
      continue;
    }
    if (name == kMemoryPlannerOption.name) {
      kMemoryPlannerOption.set(options, value);
      continue;
    }
    if (name == "disabled_passes") {
      for (std::string& pass : stringList(value, "disabled_passes", "pass names")) {
        options.disabled_passes.insert(std::move(pass));
      }
      continue;
    }
    if (name == "unbound_constants") {
      options.unbound_constants = stringList(value, "unbound_constants", "attribute names");
      continue;
    }
    const OptionField* match = nullptr;
    for (const OptionField& option : kOptionFields) {
      match = name == option.name ? &option : match;
    }
    if (match == nullptr) {
      throw py::type_error("StaticModule() got an unknown option '" + name +
                           "'; valid options are: " + validOptionNames());
    }
    // Strict: a truthy string or tensor here is almost certainly a mistake.
    if (!py::isinstance<py::bool_>(value)) {
      throw py::type_error("StaticModule() option '" + name + "' must be a bool, got " +
                           std::string(py::str(value.get_type().attr("__name__"))));
    }
    options.*(match->field) = value.cast<bool>();
  }
  return options;
}

py::dict optionsToDict(const StaticModuleOptions& options) {
  py::dict dict;
  for (const OptionField& option : kOptionFields) {
    dict[option.name] = options.*(option.field);
  }
  dict[kGemmBackendOption.name] = toString(options.gemm_backend);
  dict[kFp32PrecisionOption.name] = toString(options.fp32_precision);
  dict[kMemoryPlannerOption.name] = toString(options.memory_planner);
  py::list disabled;
  for (const std::string& name : options.disabled_passes) {
    disabled.append(name);
  }
  dict["disabled_passes"] = disabled;
  py::list unbound;
  for (const std::string& name : options.unbound_constants) {
    unbound.append(name);
  }
  dict["unbound_constants"] = unbound;
  return dict;
}

py::dict statsToDict(const ModuleStats& stats) {
  py::dict fallback_ops;
  for (const auto& [op, count] : stats.fallback_ops) {
    fallback_ops[py::str(op)] = count;
  }
  py::dict dict;
  dict["nodes"] = stats.nodes;
  dict["out_variant_nodes"] = stats.out_variant_nodes;
  dict["native_nodes"] = stats.native_nodes;
  dict["fallback_nodes"] = stats.fallback_nodes;
  dict["fallback_ops"] = fallback_ops;
  dict["num_managed_tensors"] = stats.num_managed_tensors;
  dict["num_unmanaged_tensors"] = stats.num_unmanaged_tensors;
  dict["managed_bytes"] = stats.managed_bytes;
  dict["managed_lower_bound_bytes"] = stats.managed_lower_bound_bytes;
  dict["arena_reallocations"] = stats.arena_reallocations;
  dict["memory_planner"] = stats.memory_planner;
  dict["planned_scratch_blocks"] = stats.planned_scratch_blocks;
  dict["planned_scratch_bytes"] = stats.planned_scratch_bytes;
  dict["unplanned_scratch_requests"] = stats.unplanned_scratch_requests;
  dict["unplanned_scratch_bytes"] = stats.unplanned_scratch_bytes;
  py::list passes;
  for (const passes::PassReport& report : stats.passes) {
    py::dict entry;
    entry["name"] = report.name;
    entry["ran"] = report.ran;
    entry["changed"] = report.changed;
    entry["nodes_before"] = report.nodes_before;
    entry["nodes_after"] = report.nodes_after;
    passes.append(entry);
  }
  dict["passes"] = passes;
  return dict;
}

std::string typeName(py::handle object) {
  py::handle type = object.get_type();
  return py::str(type.attr("__module__")).cast<std::string>() + "." +
         py::str(type.attr("__qualname__")).cast<std::string>();
}

// Preparing a module (freezing, passes) touches no Python object: other threads may run.
template <typename Source>
std::shared_ptr<StaticModule> build(const Source& source, StaticModuleOptions options) {
  py::gil_scoped_release no_gil;
  return std::make_shared<StaticModule>(source, options);
}

std::shared_ptr<StaticModule> makeStaticModule(const py::object& source, const py::kwargs& kwargs) {
  const StaticModuleOptions options = optionsFromKwargs(kwargs);
  const py::module_ os = py::module_::import("os");
  const py::module_ torch = py::module_::import("torch");
  const py::object jit = torch.attr("jit");

  if (py::isinstance<py::str>(source) || py::isinstance<py::bytes>(source) ||
      py::isinstance(source, os.attr("PathLike"))) {
    const auto path = os.attr("fsdecode")(source).cast<std::string>();
    py::gil_scoped_release no_gil;
    return StaticModule::load(path, options);
  }
  if (py::isinstance(source, jit.attr("ScriptModule"))) {
    return build(source.attr("_c").cast<torch::jit::Module>(), options);
  }
  if (py::isinstance(source, torch.attr("_C").attr("ScriptModule"))) {
    return build(source.cast<torch::jit::Module>(), options);
  }
  if (py::isinstance(source, jit.attr("ScriptFunction"))) {
    return build(source.attr("graph").cast<std::shared_ptr<torch::jit::Graph>>(), options);
  }
  if (py::isinstance(source, torch.attr("nn").attr("Module"))) {
    throw py::type_error("StaticModule() got a plain torch.nn.Module (" + typeName(source) +
                         "); script or trace it first: StaticModule(torch.jit.script(model)) "
                         "or StaticModule(torch.jit.trace(model, example_inputs))");
  }
  throw py::type_error("StaticModule() expects a torch.jit.ScriptModule, a scripted function or "
                       "the path of a torch.jit.save archive (str or os.PathLike), got " +
                       typeName(source));
}

py::object call(const StaticModule& module, const py::args& args, const py::kwargs& kwargs) {
  Kwargs bound_kwargs;
  std::vector<c10::IValue> inputs = toArguments(module.schema(), args, kwargs, bound_kwargs);
  c10::IValue result;
  {
    py::gil_scoped_release no_gil;
    result = module(std::move(inputs), bound_kwargs);
  }
  return torch::jit::toPyObject(std::move(result));
}

std::string repr(const StaticModule& module) {
  const ModuleStats stats = module.stats();
  return "<static_runtime.StaticModule " + c10::toString(module.schema()) + ", " +
         std::to_string(stats.nodes) + " nodes (" + std::to_string(stats.out_variant_nodes) +
         " out-variant, " + std::to_string(stats.native_nodes) + " native, " +
         std::to_string(stats.fallback_nodes) + " fallback)>";
}

void translateExceptions(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    // The C++ backtrace is noise to a Python caller; the message names the input or node.
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  }
}

} // namespace
} // namespace srt::python

PYBIND11_MODULE(_C, m) {
  using namespace srt;
  using namespace srt::python;

  m.doc() = "Static Runtime: runs a TorchScript module as a flat, pre-planned program.";
  m.attr("__version__") = SRT_VERSION;
  // Local, so it wins over any translator another extension registered for c10::Error; other
  // std::exceptions keep pybind11's default mapping (std::exception -> RuntimeError).
  py::register_local_exception_translator(translateExceptions);
  m.def("pass_names", &passNames,
        "Names of the optimization passes, in the order they run; any can go in disabled_passes.");

  py::class_<StaticModule, std::shared_ptr<StaticModule>> static_module(m, "StaticModule", R"doc(
A TorchScript module prepared once into an immutable program.

Built from a ``torch.jit.ScriptModule`` (scripted, traced or frozen; left untouched: a frozen
copy is prepared), a scripted function, or the path of an archive written by ``torch.jit.save``.
Calls are thread-safe: each concurrent caller runs on its own runtime, and the GIL is released
while the model runs. Gradients are not recorded.)doc");
  static_module
      .def(py::init(&makeStaticModule), py::arg("module_or_path"), R"doc(
__init__(module_or_path, **options)

module_or_path: a torch.jit.ScriptModule, a torch.jit.ScriptFunction (whose argument defaults
    are not kept: pass every argument), or a str / os.PathLike path to a TorchScript archive.
options: keyword flags of StaticModuleOptions (enable_out_variant, optimize_memory,
    manage_output_tensors, use_copy_variants, use_maybe_copy_variants; optimize_memory and
    manage_output_tensors require enable_out_variant); gemm_backend, one of "onednn",
    "openblas", "aten": the library that runs linear / matmul / mm / addmm / bmm;
    fp32_precision, "ieee" (the default) or "bf16": "bf16" lets linear layers, convolutions
    and recurrent layers with constant weights multiply in bfloat16, summing in float32 (faster
    on CPUs with AMX or AVX512-BF16; results differ from float32 as under PyTorch's bfloat16
    autocast); and
    memory_planner, "greedy_by_size" or "naive": how managed tensors are placed in the arena.

Raises TypeError for a plain nn.Module, an unknown option or a non-bool option value, and
RuntimeError for an invalid option combination, an unreadable file or an unsupported model.)doc")
      .def("__call__", &call, R"doc(
__call__(*args, **kwargs)

Runs forward. Arguments bind like a TorchScript method call: positionally, then by keyword,
then defaults; each is converted to the type forward declares. Returns what forward returns
(tensor, tuple, list, dict or scalar); returned tensors belong to the caller. Raises
RuntimeError naming the argument or node (and its source line) on any error; the module stays
usable afterwards.)doc")
      .def(
          "stats", [](const StaticModule& module) { return statsToDict(module.stats()); },
          R"doc(
stats() -> dict

Kernel counts and planned memory: "nodes" (= out_variant_nodes + native_nodes +
fallback_nodes), "out_variant_nodes", "native_nodes", "fallback_nodes", "fallback_ops"
(operator name -> node count), "managed_bytes", "managed_lower_bound_bytes", and kernel
scratch placed in the arena: "planned_scratch_blocks", "planned_scratch_bytes",
"unplanned_scratch_requests", and the fallback scratch buffer held outside it now,
"unplanned_scratch_bytes" (0 once a plan covers every request).)doc")
      .def_property_readonly(
          "graph", [](const StaticModule& module) { return module.graph().toString(); },
          "The prepared (frozen, inlined, optimized) TorchScript graph the program runs, as text.")
      .def_property_readonly(
          "schema", [](const StaticModule& module) { return c10::toString(module.schema()); },
          "forward's schema without `self`, e.g. 'forward(Tensor x, int n=2) -> Tensor'.")
      .def_property_readonly(
          "options", [](const StaticModule& module) { return optionsToDict(module.options()); },
          "The StaticModuleOptions the module was built with, as a dict.")
      .def_property_readonly(
          "batch_independent",
          [](const StaticModule& module) { return module.batchIndependence().independent; },
          "Whether forward treats every item of a batch (dim 0 of its tensor arguments) on its "
          "own, so that runtimes may run a batch as slices (RuntimePool's split_batch).")
      .def_property_readonly(
          "batch_independence_reason",
          [](const StaticModule& module) { return module.batchIndependence().reason; },
          "Where batch_independent is False: the node or argument that is not, and why.")
      .def("__repr__", &repr);
  bindServing(m, static_module);
  bindProfiling(m, static_module);
}
