// Serving from Python: run_async, run(inputs, outputs) into preallocated tensors, RuntimePool.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "static_runtime/static_runtime.h"

namespace py = pybind11;

namespace srt::python {

// Defined in arguments.cpp.
std::vector<c10::IValue> toArguments(const c10::FunctionSchema& schema, const py::args& args,
                                     const py::kwargs& kwargs, Kwargs& bound_kwargs);

namespace {

// A pool and the module it borrows runtimes of, which must outlive it.
struct PyRuntimePool {
  std::shared_ptr<StaticModule> module;
  RuntimePool pool;
};

py::object toFuture(c10::intrusive_ptr<c10::ivalue::Future> future) {
  // torch._C.Future: what torch.futures.Future wraps, with wait(), done(), value(), then().
  return py::cast(std::make_shared<torch::jit::PythonFutureWrapper>(std::move(future)));
}

template <typename Runner>
py::object runAsync(Runner& runner, const c10::FunctionSchema& schema, const py::args& args,
                    const py::kwargs& kwargs) {
  Kwargs bound_kwargs;
  std::vector<c10::IValue> inputs = toArguments(schema, args, kwargs, bound_kwargs);
  return toFuture(runner.runAsync(std::move(inputs), std::move(bound_kwargs)));
}

std::vector<at::Tensor> tensorList(const py::handle& list, const char* what) {
  std::vector<at::Tensor> tensors;
  for (const py::handle& item : list) {
    if (!THPVariable_Check(item.ptr())) {
      throw py::type_error(std::string("run(): ") + what + " must be tensors, got " +
                           py::str(item.get_type().attr("__name__")).cast<std::string>());
    }
    tensors.push_back(THPVariable_Unpack(item.ptr()));
  }
  return tensors;
}

NamedTensors tensorDict(const py::dict& dict, const char* what) {
  NamedTensors tensors;
  for (const auto& [key, value] : dict) {
    if (!py::isinstance<py::str>(key) || !THPVariable_Check(value.ptr())) {
      throw py::type_error(std::string("run(): ") + what + " must map names (str) to tensors");
    }
    tensors.emplace(key.cast<std::string>(), THPVariable_Unpack(value.ptr()));
  }
  return tensors;
}

// run(inputs, outputs=None): without outputs, a call with inputs as a list (positional) or a
// dict (keywords); with outputs, results are written into them and their shapes returned.
py::object runTensors(RuntimePool& pool, const c10::FunctionSchema& schema,
                      const py::object& inputs, const py::object& outputs) {
  const bool named = py::isinstance<py::dict>(inputs);
  if (!named && !py::isinstance<py::list>(inputs) && !py::isinstance<py::tuple>(inputs)) {
    throw py::type_error("run(): inputs must be a list of tensors or a dict of name -> tensor");
  }
  if (outputs.is_none()) {
    py::args args = named ? py::tuple() : py::tuple(inputs);
    py::kwargs kwargs = named ? py::kwargs(inputs) : py::kwargs();
    Kwargs bound_kwargs;
    std::vector<c10::IValue> arguments = toArguments(schema, args, kwargs, bound_kwargs);
    c10::IValue result;
    {
      py::gil_scoped_release no_gil;
      result = pool.run(std::move(arguments), bound_kwargs);
    }
    return torch::jit::toPyObject(std::move(result));
  }
  if (named != py::isinstance<py::dict>(outputs)) {
    throw py::type_error("run(): give inputs and outputs both as lists or both as dicts");
  }
  std::vector<Shape> shapes;
  if (named) {
    NamedTensors in = tensorDict(inputs, "inputs");
    NamedTensors out = tensorDict(outputs, "outputs");
    py::gil_scoped_release no_gil;
    RuntimePool::Lease lease = pool.acquire();
    shapes = TensorIO(lease.runtime()).runByName(in, out);
  } else {
    std::vector<at::Tensor> in = tensorList(inputs, "inputs");
    std::vector<at::Tensor> out = tensorList(outputs, "outputs");
    py::gil_scoped_release no_gil;
    RuntimePool::Lease lease = pool.acquire();
    shapes = TensorIO(lease.runtime()).run(in, out);
  }
  py::list result;
  for (const Shape& shape : shapes) {
    result.append(py::tuple(py::cast(shape)));
  }
  return std::move(result);
}

IntraOpWorkers intraOpWorkers(const std::string& name) {
  if (name == "auto") {
    return IntraOpWorkers::kAuto;
  }
  if (name == "openmp") {
    return IntraOpWorkers::kOpenMp;
  }
  TORCH_CHECK(name == "own", "RuntimePool: workers must be \"auto\", \"openmp\" or \"own\", got \"",
              name, "\"");
  return IntraOpWorkers::kOwn;
}

std::string intraOpWorkersName(IntraOpWorkers workers) {
  switch (workers) {
  case IntraOpWorkers::kOpenMp:
    return "openmp";
  case IntraOpWorkers::kOwn:
    return "own";
  case IntraOpWorkers::kAuto:
    break;
  }
  return "auto";
}

RuntimeOptions runtimeOptions(int intra_op_threads, IntraOpWorkers workers, bool profiling,
                              bool split_batch) {
  RuntimeOptions options;
  options.intra_op_threads = intra_op_threads;
  options.workers = workers;
  options.profiling = profiling;
  options.split_batch = split_batch;
  return options;
}

const char* kRunDoc = R"doc(
run(inputs, outputs=None)

Without outputs: runs forward with inputs as a list (positional) or a dict (by name) and returns
what forward returns. With outputs (a list, or a dict keyed "output_0", "output_1", ...): writes
each tensor output into the given preallocated tensor (contiguous, same dtype, at least as many
elements) and returns the actual shapes as a list of tuples. Errors name the offending output.)doc";

const char* kRunAsyncDoc = R"doc(
run_async(*args, **kwargs) -> torch.futures.Future

Runs forward on another thread (ATen's inter-op pool); the future's wait() returns the outputs or
raises the run's error.)doc";

} // namespace

void bindServing(py::module_& m, py::class_<StaticModule, std::shared_ptr<StaticModule>>& cls) {
  cls.def(
         "set_constant",
         [](StaticModule& module, const std::string& name, const at::Tensor& value) {
           module.setConstant(name, value);
         },
         py::arg("name"), py::arg("value"),
         "Supplies an unbound constant (option unbound_constants) by attribute name; shared by "
         "every runtime of the module from its next run.")
      .def(
          "run_async",
          [](const StaticModule& module, const py::args& args, const py::kwargs& kwargs) {
            return runAsync(module, module.schema(), args, kwargs);
          },
          kRunAsyncDoc)
      .def(
          "run",
          [](const StaticModule& module, const py::object& inputs, const py::object& outputs) {
            return runTensors(module.pool(), module.schema(), inputs, outputs);
          },
          py::arg("inputs"), py::arg("outputs") = py::none(), kRunDoc)
      .def_property_readonly(
          "input_names",
          [](const StaticModule& module) {
            std::vector<std::string> names;
            for (const c10::Argument& argument : module.schema().arguments()) {
              names.push_back(argument.name());
            }
            return names;
          },
          "forward's parameter names, in order.")
      .def_property_readonly(
          "output_names",
          [](const StaticModule& module) {
            StaticRuntime runtime(module);
            return TensorIO(runtime).outputNames();
          },
          "Names run(inputs, outputs) gives the outputs: output_0, output_1, ...");

  py::class_<PyRuntimePool, std::shared_ptr<PyRuntimePool>>(m, "RuntimePool", R"doc(
A bounded pool of runtimes of one StaticModule, lent to one caller at a time.

RuntimePool(module, num_runtimes, intra_op_threads=0, profiling=True, workers="auto",
split_batch=True): runtimes
are created lazily, each running with intra_op_threads threads (0: the caller's setting) on the
calling thread only, and recording a profiler event per node while a profiler is active unless
profiling=False. workers says whose threads carry the intra-op threads in the kernels that split
work themselves (convolutions): "own" (each runtime's own workers, which spin between the nodes
of a run; with OMP_WAIT_POLICY=ACTIVE a warning, since OpenMP's threads then never stop spinning
and compete with them), "openmp" (OpenMP's), or "auto" (own where OpenMP's sleep between
parallel regions, i.e. under OMP_WAIT_POLICY=PASSIVE; OpenMP's where they never sleep; with the
policy unset, the first runs of each input shape try both and keep the faster). split_batch: where
the model treats every item of a batch on its own (StaticModule.batch_independent) and a call has
at least 2 threads and 2 items, run the batch as one dim-0 slice per thread, each single-threaded,
and join the results. A call blocks while all runtimes are busy.)doc")
      .def(py::init([](std::shared_ptr<StaticModule> module, size_t num_runtimes,
                       int intra_op_threads, bool profiling, const std::string& workers,
                       bool split_batch) {
             auto pool = std::shared_ptr<PyRuntimePool>(new PyRuntimePool{
                 module, RuntimePool(*module, num_runtimes,
                                     runtimeOptions(intra_op_threads, intraOpWorkers(workers),
                                                    profiling, split_batch))});
             return pool;
           }),
           py::arg("module"), py::arg("num_runtimes"), py::arg("intra_op_threads") = 0,
           py::arg("profiling") = true, py::arg("workers") = "auto", py::arg("split_batch") = true)
      .def(
          "__call__",
          [](PyRuntimePool& self, const py::args& args, const py::kwargs& kwargs) {
            Kwargs bound_kwargs;
            std::vector<c10::IValue> inputs =
                toArguments(self.module->schema(), args, kwargs, bound_kwargs);
            c10::IValue result;
            {
              py::gil_scoped_release no_gil;
              result = self.pool.run(std::move(inputs), bound_kwargs);
            }
            return torch::jit::toPyObject(std::move(result));
          },
          "Runs forward on a free runtime of the pool (blocking while none is free).")
      .def(
          "run_async",
          [](PyRuntimePool& self, const py::args& args, const py::kwargs& kwargs) {
            return runAsync(self.pool, self.module->schema(), args, kwargs);
          },
          kRunAsyncDoc)
      .def(
          "run",
          [](PyRuntimePool& self, const py::object& inputs, const py::object& outputs) {
            return runTensors(self.pool, self.module->schema(), inputs, outputs);
          },
          py::arg("inputs"), py::arg("outputs") = py::none(), kRunDoc)
      .def_property_readonly(
          "num_runtimes", [](const PyRuntimePool& self) { return self.pool.numRuntimes(); },
          "The most runtimes the pool creates: its bound on concurrent runs.")
      .def_property_readonly(
          "num_created", [](const PyRuntimePool& self) { return self.pool.numCreated(); },
          "Runtimes created so far (lazily, up to num_runtimes).")
      .def_property(
          "intra_op_threads",
          [](const PyRuntimePool& self) { return self.pool.options().intra_op_threads; },
          [](PyRuntimePool& self, int threads) {
            RuntimeOptions options = self.pool.options();
            options.intra_op_threads = threads;
            self.pool.setOptions(options);
          },
          "Intra-op threads of every runtime of the pool from its next run (0: the caller's).")
      .def_property(
          "profiling", [](const PyRuntimePool& self) { return self.pool.options().profiling; },
          [](PyRuntimePool& self, bool profiling) {
            RuntimeOptions options = self.pool.options();
            options.profiling = profiling;
            self.pool.setOptions(options);
          },
          "Whether the pool's runtimes record profiler events (see StaticModule.profiling).")
      .def_property_readonly(
          "workers",
          [](const PyRuntimePool& self) { return intraOpWorkersName(self.pool.options().workers); },
          "Whose threads the pool's runtimes split convolutions over: auto, openmp or own.")
      .def_property_readonly(
          "split_batch", [](const PyRuntimePool& self) { return self.pool.options().split_batch; },
          "Whether the pool's runtimes run a batch as slices where the model allows it.");
}

} // namespace srt::python
