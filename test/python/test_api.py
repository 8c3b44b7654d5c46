"""The package's surface as a whole: every entry point on every kind of source, every option keyword, errors
through every entry point, and stubs and docstrings that match the binding."""

import ast
import functools
import pathlib
from typing import Dict, Set

import pytest
import torch

import static_runtime
import zoo


@functools.lru_cache(maxsize=None)
def _entries():
    """The zoo, built once for this file (building it scripts every model)."""
    return zoo.entries()


def _stub() -> ast.Module:
    path = pathlib.Path(static_runtime.__file__).with_name("__init__.pyi")
    return ast.parse(path.read_text(), filename=str(path))


def _stub_classes() -> Dict[str, Set[str]]:
    """Class name -> the public names the stub declares on it (methods, properties, attributes)."""
    classes = {}
    for node in _stub().body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            classes[node.name] = names
    return classes


def _public(names) -> Set[str]:
    return {name for name in names if not name.startswith("_") or name in ("__init__", "__call__")}


def test_stubs_declare_exactly_the_bound_api_and_everything_is_documented():
    classes = _stub_classes()
    assert set(static_runtime.__all__) - {"__version__", "pass_names"} == set(classes)
    for class_name, declared in classes.items():
        cls = getattr(static_runtime, class_name)
        assert cls.__doc__, class_name
        bound = _public(name for name in dir(cls) if name in vars(cls))
        if "__init__" not in declared:
            # pybind11's placeholder: such objects are only returned, never built by callers.
            with pytest.raises(TypeError, match="No constructor defined"):
                cls()
            bound.discard("__init__")
        assert declared == bound, f"{class_name}: stub only {declared - bound}, binding only {bound - declared}"
        if class_name == "IndividualMetrics":
            continue  # plain read-only fields, described in the class docstring
        for name in bound:
            assert getattr(cls, name).__doc__, f"{class_name}.{name} has no docstring"
    functions = {node.name for node in _stub().body if isinstance(node, ast.FunctionDef)}
    assert functions == {"pass_names"}
    assert static_runtime.pass_names.__doc__


def _init_keywords() -> Set[str]:
    for node in _stub().body:
        if isinstance(node, ast.ClassDef) and node.name == "StaticModule":
            init = next(item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__")
            return {argument.arg for argument in init.args.kwonlyargs}
    raise AssertionError("no StaticModule.__init__ in the stub")


def test_unknown_keyword_lists_every_option_the_stub_declares():
    keywords = _init_keywords()
    entry = _entries()["mlp"]
    with pytest.raises(TypeError, match="unknown option 'optimise_memory'") as error:
        static_runtime.StaticModule(torch.jit.script(entry.module), optimise_memory=True)
    listed = str(error.value).split("valid options are: ", 1)[1]
    assert set(listed.split(", ")) == keywords
    # ...and they are exactly what `options` reports.
    assert set(static_runtime.StaticModule(torch.jit.script(entry.module)).options) == keywords


# Every option keyword with a value other than its default.
NON_DEFAULT_OPTIONS = [
    ("enable_out_variant", False, {"optimize_memory": False}),
    ("optimize_memory", False, {}),
    ("manage_output_tensors", True, {}),
    ("use_copy_variants", False, {}),
    ("use_maybe_copy_variants", False, {}),
    ("gemm_backend", "aten", {}),
    ("fp32_precision", "bf16", {}),
    ("memory_planner", "naive", {}),
    ("disabled_passes", ["dead_code"], {}),
    ("unbound_constants", ["2.weight"], {}),
]


def test_the_option_table_covers_every_keyword():
    assert {name for name, _, _ in NON_DEFAULT_OPTIONS} == _init_keywords()


@pytest.mark.parametrize("name, value, others", NON_DEFAULT_OPTIONS, ids=[name for name, _, _ in NON_DEFAULT_OPTIONS])
def test_each_option_keyword(name, value, others):
    entry = _entries()["traced_mlp"]
    traced = zoo.to_torchscript(entry)
    module = static_runtime.StaticModule(traced, **{name: value}, **others)
    assert module.options[name] == value
    if name == "unbound_constants":
        module.set_constant("2.weight", entry.module[2].weight.detach())
    # bfloat16 products round the weights and activations to 8 mantissa bits.
    tolerance = 3e-2 if name == "fp32_precision" else 1e-5
    for (x,) in entry.inputs:
        with torch.no_grad():
            expected = entry.module(x)
        for _ in range(2):
            torch.testing.assert_close(module(x), expected, rtol=tolerance, atol=tolerance)


@pytest.fixture(params=["scripted", "traced", "path"])
def source(request, tmp_path):
    """The MLP as each kind of source StaticModule accepts, with its eager module and inputs."""
    entry = _entries()["mlp"]
    if request.param == "scripted":
        made = torch.jit.script(entry.module)
    elif request.param == "traced":
        made = torch.jit.trace(entry.module, entry.inputs[0])
    else:
        made = str(tmp_path / "mlp.pt")
        torch.jit.save(torch.jit.script(entry.module), made)
    return made, entry


def test_every_entry_point_on_every_kind_of_source(source):
    made, entry = source
    module = static_runtime.StaticModule(made)
    (x,) = entry.inputs[1]
    with torch.no_grad():
        expected = entry.module(x)

    def check(actual):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)

    check(module(x))
    check(module.run([x]))
    check(module.run({module.input_names[0]: x}))
    check(module.run_async(x).wait())
    pool = static_runtime.RuntimePool(module, num_runtimes=2)
    check(pool(x))
    check(pool.run([x]))
    check(pool.run_async(x).wait())
    assert module.benchmark((x,), main_runs=2) > 0
    metrics = module.benchmark_individual_ops((x,), main_runs=2)
    assert metrics.total_nodes_count == module.stats()["nodes"]
    assert module.memory_plan(), "the MLP has intermediates in the arena"
    stats = module.stats()
    assert stats["nodes"] == stats["out_variant_nodes"] + stats["native_nodes"] + stats["fallback_nodes"]
    assert "graph(" in module.graph and module.schema.startswith("forward(")
    assert "StaticModule" in repr(module)
    check(module(x))


@pytest.fixture(scope="module")
def mlp():
    entry = _entries()["mlp"]
    return entry, static_runtime.StaticModule(torch.jit.script(entry.module))


# (call, what must appear in the message) for every way of running the module.
ENTRY_POINTS = {
    "__call__": lambda module, args: module(*args),
    "run-list": lambda module, args: module.run(list(args)),
    "run-dict": lambda module, args: module.run(dict(zip(["x", "y", "z"], args))),
    "run_async": lambda module, args: module.run_async(*args).wait(),
    "pool": lambda module, args: static_runtime.RuntimePool(module, 1)(*args),
    "benchmark": lambda module, args: module.benchmark(list(args), main_runs=1),
    "benchmark_individual_ops": lambda module, args: module.benchmark_individual_ops(list(args), main_runs=1),
    "memory_plan": lambda module, args: module.memory_plan(*args),
}

WRONG_INPUTS = {
    "arity": ((torch.randn(2, 64), torch.randn(2, 64)), r"at most 1 argument|Unknown keyword argument 'y'"),
    "missing": ((), r"missing value for argument 'x'"),
    "dtype": ((torch.ones(2, 64, dtype=torch.int64),), r"dtype|Long|expected scalar type"),
    "shape": ((torch.randn(2, 7),), r"shapes cannot be multiplied|mat1 and mat2|size"),
}


@pytest.mark.parametrize("wrong", list(WRONG_INPUTS))
@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_wrong_inputs_through_every_entry_point(mlp, entry_point, wrong):
    entry, module = mlp
    args, message = WRONG_INPUTS[wrong]
    if entry_point == "memory_plan" and wrong == "missing":
        pytest.skip("memory_plan() without arguments runs nothing: it returns the last plan")
    with pytest.raises(RuntimeError, match=message):
        ENTRY_POINTS[entry_point](module, args)
    (x,) = entry.inputs[0]
    with torch.no_grad():
        expected = entry.module(x)
    for _ in range(2):
        torch.testing.assert_close(module(x), expected, rtol=1e-5, atol=1e-5)


def test_pass_names_can_all_be_disabled():
    names = static_runtime.pass_names()
    assert names and len(set(names)) == len(names) and all(isinstance(name, str) for name in names)
    entry = _entries()["transformer_block"]
    scripted = torch.jit.script(entry.module)
    module = static_runtime.StaticModule(scripted, disabled_passes=set(names))
    assert not any(report["ran"] for report in module.stats()["passes"])
    optimized = static_runtime.StaticModule(scripted)
    assert optimized.stats()["nodes"] < module.stats()["nodes"], "the passes shrink the transformer block"
    for args, kwargs in zip(entry.inputs, entry.kwargs):
        with torch.no_grad():
            expected = entry.module(*args, **kwargs)
        torch.testing.assert_close(module(*args, **kwargs), expected, rtol=1e-5, atol=1e-5)
