// Measuring from Python: benchmark, benchmark_individual_ops (PyTorch's IndividualMetrics), the
// memory plan as data, and the profiling switch of the module's runtimes.
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "static_runtime/benchmark.h"
#include "static_runtime/static_runtime.h"

namespace py = pybind11;

namespace srt::python {

// Defined in arguments.cpp.
std::vector<c10::IValue> toArguments(const c10::FunctionSchema& schema, const py::args& args,
                                     const py::kwargs& kwargs, Kwargs& bound_kwargs);

namespace {

bool isSequence(const py::handle& object) {
  return py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object);
}

bool takesSequenceFirst(const c10::FunctionSchema& schema) {
  if (schema.arguments().empty()) {
    return false;
  }
  const c10::TypeKind kind = schema.arguments()[0].real_type()->kind();
  return kind == c10::TypeKind::ListType || kind == c10::TypeKind::TupleType;
}

// `args` is one input set (a tuple or list of forward's arguments) or a list of input sets. A list
// whose every element is a tuple or list is a list of sets, unless forward's first parameter is
// itself a list or tuple: then each set must start with a list or tuple too, which tells
// benchmark([[a, b]]) (one set: forward([a, b])) from benchmark([[[a, b]], [[c]]]) (two sets).
std::vector<py::tuple> inputSets(const c10::FunctionSchema& schema, const py::object& args,
                                 const char* method) {
  if (!isSequence(args)) {
    throw py::type_error(std::string(method) +
                         "(): args must be a tuple or list of forward's arguments, or a list of "
                         "such input sets; got " +
                         py::str(args.get_type().attr("__name__")).cast<std::string>());
  }
  const bool sequence_first = takesSequenceFirst(schema);
  auto is_set = [&](const py::handle& element) {
    if (!isSequence(element)) {
      return false;
    }
    const py::sequence set = py::reinterpret_borrow<py::sequence>(element);
    return !sequence_first || (py::len(set) > 0 && isSequence(set[0]));
  };
  bool many = py::isinstance<py::list>(args) && py::len(args) > 0;
  for (const py::handle& element : args) {
    many = many && is_set(element);
  }
  std::vector<py::tuple> sets;
  if (many) {
    for (const py::handle& element : args) {
      sets.emplace_back(py::tuple(py::reinterpret_borrow<py::object>(element)));
    }
  } else {
    sets.emplace_back(py::tuple(args));
  }
  return sets;
}

// kwargs: None, one dict for every set, or a list of dicts, one per set.
std::vector<py::dict> kwargsSets(const py::object& kwargs, size_t num_sets, const char* method) {
  if (kwargs.is_none()) {
    return std::vector<py::dict>(num_sets);
  }
  if (py::isinstance<py::dict>(kwargs)) {
    return std::vector<py::dict>(num_sets, py::reinterpret_borrow<py::dict>(kwargs));
  }
  if (py::isinstance<py::list>(kwargs) || py::isinstance<py::tuple>(kwargs)) {
    std::vector<py::dict> sets;
    for (const py::handle& element : kwargs) {
      if (!py::isinstance<py::dict>(element)) {
        throw py::type_error(std::string(method) + "(): kwargs must be a dict or a list of dicts");
      }
      sets.push_back(py::reinterpret_borrow<py::dict>(element));
    }
    if (sets.size() != num_sets) {
      throw py::value_error(std::string(method) + "(): kwargs holds " +
                            std::to_string(sets.size()) + " dicts for " + std::to_string(num_sets) +
                            " input sets");
    }
    return sets;
  }
  throw py::type_error(std::string(method) + "(): kwargs must be None, a dict or a list of dicts");
}

struct Inputs {
  ArgsList args;
  KwargsList kwargs;
};

Inputs toInputs(const StaticModule& module, const py::object& args, const py::object& kwargs,
                const char* method) {
  const std::vector<py::tuple> sets = inputSets(module.schema(), args, method);
  const std::vector<py::dict> keywords = kwargsSets(kwargs, sets.size(), method);
  Inputs inputs;
  for (size_t i = 0; i < sets.size(); ++i) {
    Kwargs bound;
    inputs.args.push_back(
        toArguments(module.schema(), py::args(sets[i]), py::kwargs(keywords[i]), bound));
    inputs.kwargs.push_back(std::move(bound));
  }
  return inputs;
}

// Measurements run on a runtime of their own (with the module's runtime options), so that
// first_iter_time is a real first run and callers on other threads are not held up.
template <typename Measure>
auto measure(const StaticModule& module, const py::object& args, const py::object& kwargs,
             const char* method, Measure&& what) {
  const Inputs inputs = toInputs(module, args, kwargs, method);
  py::gil_scoped_release no_gil;
  StaticRuntime runtime(module, module.pool().options());
  return what(runtime, inputs);
}

py::list planToList(const std::vector<MemoryPlanEntry>& entries) {
  py::list list;
  for (const MemoryPlanEntry& entry : entries) {
    py::dict dict;
    dict["name"] = entry.name;
    dict["kind"] = toString(entry.kind);
    dict["first_node"] = entry.first_node;
    dict["last_node"] = entry.last_node;
    dict["offset"] = entry.offset;
    dict["bytes"] = entry.bytes;
    list.append(dict);
  }
  return list;
}

py::list memoryPlan(const StaticModule& module, const py::args& args, const py::kwargs& kwargs) {
  const bool run_first = py::len(args) > 0 || py::len(kwargs) > 0;
  Kwargs bound_kwargs;
  std::vector<c10::IValue> inputs;
  if (run_first) {
    inputs = toArguments(module.schema(), args, kwargs, bound_kwargs);
  }
  std::vector<MemoryPlanEntry> entries;
  {
    py::gil_scoped_release no_gil;
    // The pool lends the runtime returned last: without inputs, the one the latest call used.
    RuntimePool::Lease lease = module.pool().acquire();
    if (run_first) {
      c10::IValue outputs = lease.runtime()(std::move(inputs), bound_kwargs);
      outputs = c10::IValue();
      lease->deallocateOutputTensors();
    }
    entries = lease->memoryPlanEntries();
  }
  return planToList(entries);
}

std::string repr(const IndividualMetrics& metrics) {
  return "<static_runtime.IndividualMetrics total_time=" + std::to_string(metrics.total_time) +
         " ms, " + std::to_string(metrics.total_nodes_count) + " nodes (" +
         std::to_string(metrics.out_nodes_count) + " out-variant, " +
         std::to_string(metrics.native_nodes_count) + " native, " +
         std::to_string(metrics.fallback_nodes_count) + " fallback)>";
}

const char* kBenchmarkDoc = R"doc(
benchmark(args, kwargs=None, warmup_runs=1, main_runs=100) -> float

Mean milliseconds per run of forward, like PyTorch's StaticModule.benchmark. args is one input
set (a tuple or list of forward's arguments) or a list of input sets; kwargs is None, a dict for
every set, or a list of dicts, one per set. Each set runs warmup_runs times, then main_runs times
on the clock; every run counts. Runs on a fresh runtime of the module.)doc";

const char* kIndividualOpsDoc = R"doc(
benchmark_individual_ops(args, kwargs=None, warmup_runs=1, main_runs=100) -> IndividualMetrics

Times every phase of a run and every top-level node, like PyTorch's
StaticModule.benchmark_individual_ops (same fields, milliseconds, means per run): one first run,
warmup_runs passes over the input sets, then main_runs timed passes. args and kwargs as in
benchmark(). Runs on a fresh runtime of the module, so first_iter_time includes planning.)doc";

const char* kMemoryPlanDoc = R"doc(
memory_plan(*args, **kwargs) -> list[dict]

The arena layout of a runtime after a run, one dict per buffer that holds memory, sorted by
offset: name (value or node), kind ("tensor" or "scratch"), first_node and last_node (top-level
node indices, inclusive), offset and bytes. With arguments, runs forward on them first and
returns the plan of the runtime that ran; without, the plan of the runtime the last call used
([] before any run, or with optimize_memory=False).)doc";

} // namespace

void bindProfiling(py::module_& m, py::class_<StaticModule, std::shared_ptr<StaticModule>>& cls) {
  py::class_<IndividualMetrics>(m, "IndividualMetrics", R"doc(
What benchmark_individual_ops measured, with the fields of PyTorch's
StaticModule.IndividualMetrics, in milliseconds per run (means over the main runs):
setup_time (binding arguments), memory_alloc_time, memory_dealloc_time, output_dealloc_time,
first_iter_time, total_time (= sum of time_per_node); time_per_node (top-level nodes in order);
time_per_node_type, percent_per_node_type, instances_per_node_type (by node kind); out_nodes,
native_nodes, fallback_nodes (kinds by kernel) and their *_count, total_nodes_count. str() gives
PyTorch's report.)doc")
      .def_readonly("setup_time", &IndividualMetrics::setup_time)
      .def_readonly("memory_alloc_time", &IndividualMetrics::memory_alloc_time)
      .def_readonly("memory_dealloc_time", &IndividualMetrics::memory_dealloc_time)
      .def_readonly("output_dealloc_time", &IndividualMetrics::output_dealloc_time)
      .def_readonly("first_iter_time", &IndividualMetrics::first_iter_time)
      .def_readonly("total_time", &IndividualMetrics::total_time)
      .def_readonly("time_per_node", &IndividualMetrics::time_per_node)
      .def_readonly("time_per_node_type", &IndividualMetrics::time_per_node_type)
      .def_readonly("percent_per_node_type", &IndividualMetrics::percent_per_node_type)
      .def_readonly("instances_per_node_type", &IndividualMetrics::instances_per_node_type)
      .def_readonly("out_nodes", &IndividualMetrics::out_nodes)
      .def_readonly("native_nodes", &IndividualMetrics::native_nodes)
      .def_readonly("fallback_nodes", &IndividualMetrics::fallback_nodes)
      .def_readonly("out_nodes_count", &IndividualMetrics::out_nodes_count)
      .def_readonly("native_nodes_count", &IndividualMetrics::native_nodes_count)
      .def_readonly("fallback_nodes_count", &IndividualMetrics::fallback_nodes_count)
      .def_readonly("total_nodes_count", &IndividualMetrics::total_nodes_count)
      .def("__str__", [](const IndividualMetrics& metrics) { return toString(metrics); })
      .def("__repr__", &repr);

  cls.def(
         "benchmark",
         [](const StaticModule& module, const py::object& args, const py::object& kwargs,
            int warmup_runs, int main_runs) {
           return measure(module, args, kwargs, "benchmark",
                          [&](StaticRuntime& runtime, const Inputs& inputs) {
                            return benchmark(runtime, inputs.args, inputs.kwargs, warmup_runs,
                                             main_runs);
                          });
         },
         py::arg("args"), py::arg("kwargs") = py::none(), py::arg("warmup_runs") = 1,
         py::arg("main_runs") = 100, kBenchmarkDoc)
      .def(
          "benchmark_individual_ops",
          [](const StaticModule& module, const py::object& args, const py::object& kwargs,
             int warmup_runs, int main_runs) {
            return measure(module, args, kwargs, "benchmark_individual_ops",
                           [&](StaticRuntime& runtime, const Inputs& inputs) {
                             return benchmarkIndividualOps(runtime, inputs.args, inputs.kwargs,
                                                           warmup_runs, main_runs);
                           });
          },
          py::arg("args"), py::arg("kwargs") = py::none(), py::arg("warmup_runs") = 1,
          py::arg("main_runs") = 100, kIndividualOpsDoc)
      .def("memory_plan", &memoryPlan, kMemoryPlanDoc)
      .def_property(
          "profiling", [](const StaticModule& module) { return module.pool().options().profiling; },
          [](const StaticModule& module, bool profiling) {
            RuntimeOptions options = module.pool().options();
            options.profiling = profiling;
            module.pool().setOptions(options);
          },
          "Whether runs record a profiler event per node (named by its kind, e.g. "
          "'srt::fused_linear') and one per run ('forward') while torch.profiler or another "
          "RecordFunction observer is active. True by default; costs nothing without a "
          "profiler. Applies from the next run.");
}

} // namespace srt::python
