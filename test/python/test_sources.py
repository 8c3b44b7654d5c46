"""Every way to hand a model to StaticModule, and what the module reports about itself."""

import ast
import os
import pathlib
import re
from typing import Dict, List, Optional, Tuple

import pytest
import torch
from torch import Tensor, nn

import static_runtime

GEMM_BACKENDS = ("onednn", "openblas", "aten")
from conftest import OPTION_NAMES, Case, assert_same, make_case, run_and_compare


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class BranchAndLoop(nn.Module):
    """Control flow that depends on input values, which neither tracing nor freezing can fold."""

    def forward(self, x: Tensor, n: int) -> Tuple[Tensor, List[Tensor]]:
        if bool(x.mean() > 0):
            y = x * 2
        else:
            y = -x
        parts: List[Tensor] = []
        for i in range(n):
            y = torch.sin(y) + i
            parts.append(y.sum(0))
        while bool(y.abs().max() > 4.0):
            y = y / 3
        return y, parts


class NamedIO(nn.Module):
    def forward(self, x: Tensor, scale: float = 2.0, extra: Optional[Dict[str, Tensor]] = None) -> Dict[str, Tensor]:
        out = {"scaled": x * scale}
        if extra is not None:
            for key, value in extra.items():
                out[key] = value + x
        return out


def _net_case(module: torch.jit.ScriptModule) -> Case:
    generator = torch.Generator().manual_seed(0)
    inputs = [(torch.randn(3, 8, generator=generator),), (torch.randn(5, 2, 8, generator=generator),)]
    return make_case("net", module, inputs)


@pytest.fixture(scope="module")
def net() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


def test_scripted(net):
    case = _net_case(torch.jit.script(net))
    run_and_compare(static_runtime.StaticModule(case.scripted), case)


def test_module_in_training_mode_runs_in_eval_mode():
    # Prepared from a frozen copy in eval mode (dropout off); the caller's module is left as it was.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
    scripted = torch.jit.script(model.train())
    module = static_runtime.StaticModule(scripted)
    assert scripted.training
    x = torch.randn(4, 8)
    with torch.no_grad():
        expected = model.eval()(x)
    assert_same(expected, module(x))
    assert_same(expected, module(x))


def test_traced(net):
    case = _net_case(torch.jit.trace(net, (torch.randn(3, 8),)))
    run_and_compare(static_runtime.StaticModule(case.scripted), case)


def test_frozen(net):
    case = _net_case(torch.jit.freeze(torch.jit.script(net)))
    run_and_compare(static_runtime.StaticModule(case.scripted), case)


def test_cpp_script_module(net):
    # torch._C.ScriptModule, what `._c` of a ScriptModule is.
    case = _net_case(torch.jit.script(net))
    run_and_compare(static_runtime.StaticModule(case.scripted._c), case)


@pytest.mark.parametrize("as_type", [str, pathlib.Path, os.fsencode], ids=["str", "Path", "bytes"])
def test_saved_file(net, tmp_path, as_type):
    scripted = torch.jit.script(net)
    path = tmp_path / "net.pt"
    torch.jit.save(scripted, str(path))
    case = _net_case(scripted)
    run_and_compare(static_runtime.StaticModule(as_type(path)), case)


def test_saved_file_with_options(net, tmp_path):
    path = tmp_path / "net.pt"
    torch.jit.save(torch.jit.script(net), str(path))
    module = static_runtime.StaticModule(path, optimize_memory=False, use_copy_variants=False)
    assert module.options["optimize_memory"] is False
    assert module.options["use_copy_variants"] is False
    assert module.options["enable_out_variant"] is True


def test_script_function():
    @torch.jit.script
    def scaled_sum(a: Tensor, b: Tensor, alpha: float = 0.5) -> Tensor:
        return (a + b * alpha).sum(dim=-1)

    module = static_runtime.StaticModule(scaled_sum)
    assert module.schema.startswith("forward(Tensor a, Tensor b, float alpha)")
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    assert_same(scaled_sum(a, b, 0.5), module(a, b, 0.5))
    assert_same(scaled_sum(a, b, 2.0), module(a, b, alpha=2.0))


def test_transformer_encoder_layer_scripted_eval():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True).eval()
    scripted = torch.jit.script(layer)
    module = static_runtime.StaticModule(scripted)
    mask = torch.triu(torch.full((6, 6), float("-inf")), diagonal=1)
    inputs = [
        ((torch.randn(2, 6, 32),), {}),
        ((torch.randn(3, 6, 32),), {"src_mask": mask}),
        ((torch.randn(1, 9, 32),), {}),
    ]
    for _ in range(2):
        for args, kwargs in inputs:
            with torch.no_grad():
                expected = scripted(*args, **kwargs)
            assert_same(expected, module(*args, **kwargs))


def test_branch_and_loop_on_input_values():
    scripted = torch.jit.script(BranchAndLoop())
    module = static_runtime.StaticModule(scripted)
    torch.manual_seed(0)
    inputs = [
        (torch.rand(3, 4) + 0.5, 0),  # positive branch, no loop iterations
        (-torch.rand(5, 2) - 0.5, 3),  # negative branch
        (torch.rand(2, 2) * 10 + 1, 6),  # large values: the while loop runs
    ]
    for _ in range(2):
        for args in inputs:
            assert_same(scripted(*args), module(*args))


def test_keyword_arguments_and_containers():
    scripted = torch.jit.script(NamedIO())
    module = static_runtime.StaticModule(scripted)
    x = torch.randn(2, 3)
    extra = {"a": torch.ones(2, 3), "b": torch.zeros(3)}
    assert_same(scripted(x), module(x))
    assert_same(scripted(x, 3.0), module(x, scale=3.0))
    assert_same(scripted(x, extra=extra), module(x, extra=extra))
    assert_same(scripted(x, 1, extra), module(x, 1, extra))  # int where float is declared


def test_properties(net):
    module = static_runtime.StaticModule(torch.jit.script(net))
    assert module.schema.startswith("forward(Tensor x)")
    assert "graph(" in module.graph
    assert "srt::fused_linear" in module.graph or "aten::linear" in module.graph
    assert module.options == {
        "enable_out_variant": True,
        "optimize_memory": True,
        "manage_output_tensors": False,
        "use_copy_variants": True,
        "use_maybe_copy_variants": True,
        "gemm_backend": module.options["gemm_backend"],
        "fp32_precision": "ieee",
        "memory_planner": "greedy_by_size",
        "disabled_passes": [],
        "unbound_constants": [],
    }
    assert module.options["gemm_backend"] in GEMM_BACKENDS
    assert set(module.options) == set(OPTION_NAMES) | {"gemm_backend", "fp32_precision", "memory_planner",
                                                       "disabled_passes", "unbound_constants"}
    assert "static_runtime.StaticModule" in repr(module)


def test_stats(net):
    module = static_runtime.StaticModule(torch.jit.script(net))
    module(torch.randn(3, 8))
    stats = module.stats()
    assert set(stats) == {
        "nodes",
        "out_variant_nodes",
        "native_nodes",
        "fallback_nodes",
        "fallback_ops",
        "num_managed_tensors",
        "num_unmanaged_tensors",
        "managed_bytes",
        "managed_lower_bound_bytes",
        "arena_reallocations",
        "memory_planner",
        "planned_scratch_blocks",
        "planned_scratch_bytes",
        "unplanned_scratch_requests",
        "unplanned_scratch_bytes",
        "passes",
    }
    assert stats["memory_planner"] == "greedy_by_size"
    assert stats["nodes"] > 0
    assert stats["nodes"] == stats["out_variant_nodes"] + stats["native_nodes"] + stats["fallback_nodes"]
    assert isinstance(stats["fallback_ops"], dict)
    assert sum(stats["fallback_ops"].values()) == stats["fallback_nodes"]
    assert all(isinstance(name, str) and "::" in name for name in stats["fallback_ops"])
    assert stats["managed_lower_bound_bytes"] <= stats["managed_bytes"]


def _count_graph_nodes(graph_text: str) -> int:
    """Nodes in a printed graph, sub-blocks included, prim::Constant excluded (constants are values)."""
    count = 0
    for line in graph_text.splitlines():
        line = line.strip()
        # "%out : Type = kind(...)"; types never contain " = ", a node without outputs starts with its kind.
        rest = line.split(" = ", 1)[1] if line.startswith("%") and " = " in line else line
        match = re.match(r"(\w+::\w+)", rest)
        count += bool(match) and match.group(1) != "prim::Constant"
    return count


@pytest.mark.parametrize("model", [Net, BranchAndLoop])
def test_stats_count_every_node_of_the_graph(model):
    module = static_runtime.StaticModule(torch.jit.script(model().eval()))
    stats = module.stats()
    assert stats["nodes"] == _count_graph_nodes(module.graph), module.graph
    assert stats["nodes"] == stats["out_variant_nodes"] + stats["native_nodes"] + stats["fallback_nodes"]


def test_package_surface():
    assert static_runtime.StaticModule.__doc__
    for name in ("__init__", "__call__", "stats"):
        assert getattr(static_runtime.StaticModule, name).__doc__
    for name in ("graph", "schema", "options"):
        assert getattr(static_runtime.StaticModule, name).__doc__
    assert isinstance(static_runtime.__version__, str)
    stub = pathlib.Path(static_runtime.__file__).with_name("__init__.pyi")
    assert stub.exists(), "the type stubs are copied next to the package"
    ast.parse(stub.read_text(), filename=str(stub))


@pytest.mark.parametrize("backend", GEMM_BACKENDS)
def test_every_gemm_backend_matches_torchscript(net, backend):
    scripted = torch.jit.script(net)
    module = static_runtime.StaticModule(scripted, gemm_backend=backend)
    assert module.options["gemm_backend"] == backend
    for batch in (1, 5):
        x = torch.randn(batch, 8)
        for _ in range(2):
            torch.testing.assert_close(module(x), scripted(x), rtol=1e-5, atol=1e-5)
