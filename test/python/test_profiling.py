"""Measuring from Python: benchmark, benchmark_individual_ops, memory_plan, and torch.profiler events."""

import collections
import functools
import json
import re
from typing import Counter, List

import pytest
import torch
from torch import Tensor, nn

import static_runtime
import zoo


@functools.lru_cache(maxsize=None)
def _entries():
    """The zoo, built once for this file (building it scripts every model)."""
    return zoo.entries()

# at::RecordScope values (ATen/record_function.h): one event per node, one per run.
STATIC_RUNTIME_OP = 8
STATIC_RUNTIME_MODEL = 9
# Kineto reports event times in whole microseconds: two events that end within the same
# microsecond can come out one apart.
PROFILER_RESOLUTION_US = 1

INDIVIDUAL_METRICS_FIELDS = {
    "setup_time": float,
    "memory_alloc_time": float,
    "memory_dealloc_time": float,
    "output_dealloc_time": float,
    "first_iter_time": float,
    "total_time": float,
    "time_per_node": list,
    "time_per_node_type": dict,
    "percent_per_node_type": dict,
    "instances_per_node_type": dict,
    "out_nodes": set,
    "native_nodes": set,
    "fallback_nodes": set,
    "out_nodes_count": int,
    "native_nodes_count": int,
    "fallback_nodes_count": int,
    "total_nodes_count": int,
}


def _zoo(name: str):
    entry = _entries()[name]
    return entry, static_runtime.StaticModule(zoo.to_torchscript(entry))


def _node_kinds(graph_text: str) -> Counter[str]:
    """Kinds of the nodes of a printed graph without sub-blocks, prim::Constant excluded (constants are values)."""
    assert "block0" not in graph_text, "only for graphs without control flow"
    kinds: Counter[str] = collections.Counter()
    for line in graph_text.splitlines():
        line = line.strip()
        rest = line.split(" = ", 1)[1] if line.startswith("%") and " = " in line else line
        match = re.match(r"(\w+::\w+)", rest)
        if match and match.group(1) != "prim::Constant":
            kinds[match.group(1)] += 1
    return kinds


# --- benchmark -------------------------------------------------------------------------------------------


def test_benchmark_takes_one_input_set_or_many():
    entry, module = _zoo("mlp")
    x, y = entry.inputs[0][0], entry.inputs[1][0]
    for args in ((x,), [x], [(x,), (y,)], [[x], [y]]):
        ms = module.benchmark(args, warmup_runs=1, main_runs=3)
        assert isinstance(ms, float)
        assert 0 < ms < 1000, args
    # Positional like PyTorch's StaticModule.benchmark(args, kwargs, warmup_runs, main_runs).
    assert module.benchmark([x], {}, 0, 2) > 0


def test_benchmark_keyword_arguments():
    entry, module = _zoo("transformer_block")
    x = entry.inputs[2][0]
    mask = entry.kwargs[2]["mask"]
    assert module.benchmark((x,), {"mask": mask}, main_runs=2) > 0
    assert module.benchmark([(x,), (x,)], [{}, {"mask": mask}], main_runs=2) > 0
    with pytest.raises(ValueError, match="kwargs holds 1 dicts for 2 input sets"):
        module.benchmark([(x,), (x,)], [{}], main_runs=2)
    with pytest.raises(TypeError, match="kwargs must be None, a dict or a list of dicts"):
        module.benchmark((x,), "mask", main_runs=2)


class TakesAList(nn.Module):
    def forward(self, xs: List[Tensor]) -> Tensor:
        return torch.cat(xs).sum()


def test_benchmark_tells_a_list_argument_from_a_list_of_input_sets():
    module = static_runtime.StaticModule(torch.jit.script(TakesAList()))
    a, b = torch.ones(2), torch.ones(3)
    # One set whose argument is a list, then two sets.
    assert module.benchmark([[a, b]], main_runs=2) > 0
    assert module.benchmark([[[a, b]], [[a]]], main_runs=2) > 0
    metrics = module.benchmark_individual_ops([[[a, b]], ([b],)], main_runs=2)
    assert metrics.total_nodes_count == module.stats()["nodes"]


def test_benchmark_errors_are_clear_and_the_module_still_works():
    entry, module = _zoo("mlp")
    x = entry.inputs[0][0]
    with pytest.raises(TypeError, match="args must be a tuple or list"):
        module.benchmark(x)
    with pytest.raises(RuntimeError, match="main_runs must be >= 1, got 0"):
        module.benchmark([x], main_runs=0)
    with pytest.raises(RuntimeError, match="warmup_runs must be >= 0, got -1"):
        module.benchmark_individual_ops([x], warmup_runs=-1)
    with pytest.raises(RuntimeError, match="at most 1 argument"):
        module.benchmark([x, x])
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor'"):
        module.benchmark_individual_ops(["not a tensor"])
    with pytest.raises(RuntimeError):
        module.benchmark([torch.randn(2, 7)])  # the first linear layer wants 64 features
    with torch.no_grad():
        torch.testing.assert_close(module(x), entry.module(x))


# --- benchmark_individual_ops ----------------------------------------------------------------------------


def test_individual_metrics_has_pytorchs_fields():
    entry, module = _zoo("mlp")
    metrics = module.benchmark_individual_ops(entry.inputs[0], warmup_runs=1, main_runs=5)
    assert isinstance(metrics, static_runtime.IndividualMetrics)
    for field, kind in INDIVIDUAL_METRICS_FIELDS.items():
        assert isinstance(getattr(metrics, field), kind), field
    # Every field of PyTorch's own Static Runtime metrics is here, by the same name.
    theirs = {name for name in dir(torch._C.StaticModule.IndividualMetrics) if not name.startswith("_")}
    assert theirs <= set(INDIVIDUAL_METRICS_FIELDS)


@pytest.mark.parametrize("name", ["mlp", "deep_and_wide", "transformer_encoder_layer", "traced_mlp"])
def test_individual_metrics_add_up_and_match_stats(name):
    entry, module = _zoo(name)
    metrics = module.benchmark_individual_ops(list(entry.inputs), warmup_runs=1, main_runs=5)
    stats = module.stats()
    assert len(metrics.time_per_node) == metrics.total_nodes_count
    assert metrics.total_time == pytest.approx(sum(metrics.time_per_node), rel=1e-4, abs=1e-6)
    assert sum(metrics.time_per_node_type.values()) == pytest.approx(metrics.total_time, rel=1e-4, abs=1e-6)
    assert sum(metrics.percent_per_node_type.values()) == pytest.approx(100.0, abs=0.01)
    assert sum(metrics.instances_per_node_type.values()) == metrics.total_nodes_count
    assert set(metrics.time_per_node_type) == set(metrics.instances_per_node_type)
    assert metrics.out_nodes | metrics.native_nodes | metrics.fallback_nodes == set(metrics.instances_per_node_type)
    assert (
        metrics.out_nodes_count + metrics.native_nodes_count + metrics.fallback_nodes_count
        == metrics.total_nodes_count
    )
    if "block0" not in module.graph:
        assert metrics.total_nodes_count == stats["nodes"]
        assert metrics.out_nodes_count == stats["out_variant_nodes"]
        assert metrics.native_nodes_count == stats["native_nodes"]
        assert metrics.fallback_nodes_count == stats["fallback_nodes"]
        assert dict(metrics.instances_per_node_type) == dict(_node_kinds(module.graph))
        assert sum(stats["fallback_ops"].values()) == metrics.fallback_nodes_count
    else:
        assert metrics.total_nodes_count < stats["nodes"]
    assert metrics.total_time > 0 and metrics.first_iter_time > 0
    for phase in ("setup_time", "memory_alloc_time", "memory_dealloc_time", "output_dealloc_time"):
        assert getattr(metrics, phase) >= 0, phase
    report = str(metrics)
    assert "ms. in Total" in report and "First iter time" in report
    for kind in metrics.instances_per_node_type:
        assert kind in report
    assert f"{metrics.total_nodes_count} nodes" in repr(metrics)


def test_individual_ops_of_a_loop_are_timed_within_it():
    entry, module = _zoo("loop_on_value")
    x = entry.inputs[0][0]
    # 1.5**100 stays finite in float32: the last loop halves it back below 1.
    metrics = module.benchmark_individual_ops((x, 100), main_runs=3)
    assert metrics.total_nodes_count < module.stats()["nodes"]
    assert metrics.percent_per_node_type["prim::Loop"] > 50


# --- memory_plan -----------------------------------------------------------------------------------------


def _check_plan(plan, module):
    assert plan, module.graph
    offsets = [entry["offset"] for entry in plan]
    assert offsets == sorted(offsets)
    for i, entry in enumerate(plan):
        assert set(entry) == {"name", "kind", "first_node", "last_node", "offset", "bytes"}
        assert entry["kind"] in ("tensor", "scratch")
        assert entry["bytes"] > 0 and entry["offset"] % 64 == 0
        assert entry["first_node"] <= entry["last_node"]
        for other in plan[:i]:
            same_time = entry["first_node"] <= other["last_node"] and other["first_node"] <= entry["last_node"]
            same_bytes = (
                entry["offset"] < other["offset"] + other["bytes"] and other["offset"] < entry["offset"] + entry["bytes"]
            )
            assert not (same_time and same_bytes), (entry, other)
    assert max(entry["offset"] + entry["bytes"] for entry in plan) <= module.stats()["managed_bytes"]


def test_memory_plan_after_a_run():
    entry, module = _zoo("cnn")
    assert module.memory_plan() == []
    module(*entry.inputs[0])
    plan = module.memory_plan()
    _check_plan(plan, module)
    assert any(item["kind"] == "tensor" for item in plan)
    # With inputs: runs them first, on the runtime whose plan it returns.
    fresh = static_runtime.StaticModule(zoo.to_torchscript(entry))
    _check_plan(fresh.memory_plan(*entry.inputs[1]), fresh)


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2"])
def test_convolutions_write_their_output_over_the_residual_they_add(name):
    """A residual block's last convolution adds the block's input, which dies there: the plan
    gives its output the input's slot ("x > y" in one entry), and the results stay eager's, at
    two shapes, each run twice (the second run writes over the residual in place)."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval()
    module = static_runtime.StaticModule(torch.jit.script(model))
    for shape in [(1, 3, 64, 64), (2, 3, 48, 80)]:
        x = torch.randn(shape)
        with torch.no_grad():
            expected = model(x)
        for _ in range(2):
            actual = module(x)
            assert (actual - expected).abs().max() <= 1e-4 * expected.abs().max()
        plan = module.memory_plan()
        _check_plan(plan, module)
        assert any(" > " in entry["name"] for entry in plan if entry["kind"] == "tensor"), plan


def test_memory_plan_shows_kernel_scratch_and_is_empty_without_a_planner():
    class Norm(nn.Module):
        def forward(self, x: Tensor, mean: Tensor, var: Tensor) -> Tensor:
            # batch_norm folds its statistics into per-channel scale and shift: kernel scratch.
            return torch.batch_norm(torch.relu(x), None, None, mean, var, False, 0.1, 1e-5,
                                    False) + 1

    scripted = torch.jit.script(Norm())
    inputs = (torch.randn(2, 3, 8, 8), torch.randn(3), torch.rand(3) + 0.5)
    module = static_runtime.StaticModule(scripted)
    module(*inputs)
    plan = module.memory_plan(*inputs)
    scratch = [item for item in plan if item["kind"] == "scratch"]
    assert len(scratch) == module.stats()["planned_scratch_blocks"] == 1
    assert scratch[0]["name"].startswith("aten::batch_norm")
    assert scratch[0]["first_node"] == scratch[0]["last_node"]
    assert static_runtime.StaticModule(scripted, optimize_memory=False).memory_plan(*inputs) == []


# --- torch.profiler --------------------------------------------------------------------------------------


def _profile(module, args, kwargs=None, **profile_options):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **profile_options) as prof:
        module(*args, **(kwargs or {}))
    return prof


# Models without control flow: their graph lists every node that runs, once.
@pytest.mark.parametrize("name", ["mlp", "deep_and_wide", "traced_mlp", "view_chain"])
def test_profiler_shows_one_event_per_node_named_by_kind(name):
    entry, module = _zoo(name)
    args = entry.inputs[0]
    module(*args)  # the first run plans memory; profile a steady-state one
    prof = _profile(module, args)
    events = prof.events()
    node_events = collections.Counter(event.name for event in events if event.scope == STATIC_RUNTIME_OP)
    assert node_events == _node_kinds(module.graph), module.graph
    runs = [event for event in events if event.scope == STATIC_RUNTIME_MODEL]
    assert [event.name for event in runs] == ["forward"]
    # Node events lie within the run's event, to the profiler's resolution.
    run = runs[0].time_range
    for event in events:
        if event.scope == STATIC_RUNTIME_OP:
            assert run.start - PROFILER_RESOLUTION_US <= event.time_range.start <= event.time_range.end
            assert event.time_range.end <= run.end + PROFILER_RESOLUTION_US, (event.name, event.time_range, run)


def test_chrome_trace_contains_the_nodes(tmp_path):
    entry, module = _zoo("transformer_block")
    args = entry.inputs[0]
    module(*args)
    prof = _profile(module, args)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    # The JSON Object Format ({"traceEvents": [...]}) or the JSON Array Format, as chrome://tracing reads both.
    trace_events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = collections.Counter(event.get("name") for event in trace_events)
    expected = collections.Counter(event.name for event in prof.events() if event.scope == STATIC_RUNTIME_OP)
    assert any(kind.startswith("srt::") for kind in expected), "the fused block shows our own ops"
    for kind, count in expected.items():
        # ATen ops called inside our kernels may add events of the same aten:: name; srt:: ops are only ours.
        if kind.startswith("srt::"):
            assert names[kind] == count, kind
        else:
            assert names[kind] >= count, kind
    assert names["forward"] >= 1


def test_profiler_records_input_shapes_when_asked():
    entry, module = _zoo("mlp")
    (x,) = entry.inputs[1]
    prof = _profile(module, (x,), record_shapes=True)
    first = next(event for event in prof.events() if event.scope == STATIC_RUNTIME_OP)
    assert list(x.shape) in first.input_shapes, (first.name, first.input_shapes)


def test_profiling_off_records_no_node_events():
    entry, module = _zoo("mlp")
    assert module.profiling is True
    module.profiling = False
    try:
        prof = _profile(module, entry.inputs[0])
        assert not [event for event in prof.events() if event.scope in (STATIC_RUNTIME_OP, STATIC_RUNTIME_MODEL)]
    finally:
        module.profiling = True
    prof = _profile(module, entry.inputs[0])
    assert [event for event in prof.events() if event.scope == STATIC_RUNTIME_OP]

    pool = static_runtime.RuntimePool(module, num_runtimes=1, profiling=False)
    assert pool.profiling is False
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        pool(*entry.inputs[0])
    assert not [event for event in prof.events() if event.scope == STATIC_RUNTIME_OP]
    pool.profiling = True
    pool.intra_op_threads = 1
    assert pool.profiling is True, "setting the threads keeps the profiling switch"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        pool(*entry.inputs[0])
    assert [event for event in prof.events() if event.scope == STATIC_RUNTIME_OP]


def test_results_are_the_same_under_the_profiler():
    entry, module = _zoo("transformer_block")
    for args, kwargs in zip(entry.inputs, entry.kwargs):
        with torch.no_grad():
            expected = entry.module(*args, **kwargs)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True):
            actual = module(*args, **kwargs)
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
