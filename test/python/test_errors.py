"""Errors a caller can cause: each is a clear Python exception, and the module keeps working after it."""

import inspect
import pathlib
import random
import re
from typing import Dict

import pytest
import torch
from torch import Tensor, nn

import static_runtime
from conftest import assert_same


class Guarded(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: Tensor, n: int = 1) -> Tensor:
        if bool(x.min() < -100.0):
            raise ValueError("negative input")
        y = self.fc(x)  # FC_LINE
        return y * n


def _line_of(marker: str) -> int:
    lines, first = inspect.getsourcelines(Guarded)
    return first + next(i for i, line in enumerate(lines) if marker in line)


@pytest.fixture(scope="module")
def guarded():
    torch.manual_seed(0)
    scripted = torch.jit.script(Guarded().eval())
    return scripted, static_runtime.StaticModule(scripted)


@pytest.fixture
def check_still_works(guarded):
    """Called after an error: the same StaticModule must still give correct results."""
    scripted, module = guarded

    def check() -> None:
        for shape in ((2, 4), (5, 4)):
            x = torch.randn(*shape)
            with torch.no_grad():
                expected = scripted(x, 2)
            assert_same(expected, module(x, 2))
            assert_same(expected, module(x, n=2))

    return check


def _message(error: pytest.ExceptionInfo) -> str:
    return str(error.value)


def test_too_many_arguments(guarded, check_still_works):
    _, module = guarded
    with pytest.raises(RuntimeError, match=r"at most 2 argument\(s\).*received 3") as error:
        module(torch.randn(2, 4), 1, 2)
    assert "forward(Tensor x, int n=1)" in _message(error)
    check_still_works()


def test_missing_argument(guarded, check_still_works):
    _, module = guarded
    with pytest.raises(RuntimeError, match="missing value for argument 'x'"):
        module()
    with pytest.raises(RuntimeError, match="missing value for argument 'x'"):
        module(n=3)
    check_still_works()


def test_unknown_keyword(guarded, check_still_works):
    _, module = guarded
    with pytest.raises(RuntimeError, match="Unknown keyword argument 'scale'"):
        module(torch.randn(2, 4), scale=2.0)
    # Even when the value is something TorchScript has no type for.
    with pytest.raises(RuntimeError, match="Unknown keyword argument 'callback'"):
        module(torch.randn(2, 4), callback=print)
    check_still_works()


def test_argument_given_twice(guarded, check_still_works):
    _, module = guarded
    with pytest.raises(RuntimeError, match="'x' specified both as positional and keyword"):
        module(torch.randn(2, 4), x=torch.randn(2, 4))
    check_still_works()


@pytest.mark.parametrize(
    "args, kwargs, argument, expected_type",
    [
        ((3,), {}, "x", "Tensor"),
        ((None,), {}, "x", "Tensor"),
        (("a string",), {}, "x", "Tensor"),
        ((torch.randn(2, 4), "two"), {}, "n", "int"),
        ((torch.randn(2, 4),), {"n": 1.5}, "n", "int"),
        ((), {"x": [1, 2]}, "x", "Tensor"),
    ],
    ids=["int-for-tensor", "none-for-tensor", "str-for-tensor", "str-for-int", "float-kwarg-for-int", "list-kwarg"],
)
def test_wrong_argument_type(guarded, check_still_works, args, kwargs, argument, expected_type):
    _, module = guarded
    with pytest.raises(RuntimeError) as error:
        module(*args, **kwargs)
    message = _message(error)
    assert f"argument '{argument}'" in message
    assert f"type '{expected_type}" in message
    check_still_works()


@pytest.mark.parametrize(
    "x, detail",
    [
        (torch.randn(2, 5), "shapes cannot be multiplied"),
        (torch.ones(2, 4, dtype=torch.int64), "dtype"),
    ],
    ids=["shape", "dtype"],
)
def test_kernel_failure_names_node_and_source_line(guarded, check_still_works, x, detail):
    _, module = guarded
    with pytest.raises(RuntimeError) as error:
        module(x)
    message = _message(error)
    # The node as it runs (weight packing made the Linear an srt::fused_linear), then the source
    # the user wrote.
    assert "srt::fused_linear" in message
    assert "F.linear(input, self.weight, self.bias)" in message
    assert detail in message
    # The model's own line (the call into the Linear), as TorchScript records it.
    assert f"{pathlib.Path(__file__).name}:{_line_of('FC_LINE')}" in message, message
    # No C++ backtrace in what Python shows.
    assert "frame #" not in message
    check_still_works()


def test_model_raises(guarded, check_still_works):
    _, module = guarded
    with pytest.raises(RuntimeError, match="negative input"):
        module(torch.full((2, 4), -1000.0))
    check_still_works()


def test_missing_file(tmp_path):
    path = tmp_path / "does_not_exist.pt"
    with pytest.raises(RuntimeError, match=re.escape(str(path))):
        static_runtime.StaticModule(str(path))


def test_corrupt_file(tmp_path):
    path = tmp_path / "corrupt.pt"
    path.write_bytes(random.Random(0).randbytes(4096))
    with pytest.raises(RuntimeError, match=re.escape(str(path))):
        static_runtime.StaticModule(path)


def test_truncated_archive(tmp_path):
    torch.manual_seed(0)
    good = tmp_path / "good.pt"
    torch.jit.save(torch.jit.script(Guarded()), str(good))
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(RuntimeError, match=re.escape(str(truncated))):
        static_runtime.StaticModule(truncated)


def test_plain_nn_module():
    with pytest.raises(TypeError, match=r"torch\.jit\.script.*torch\.jit\.trace"):
        static_runtime.StaticModule(Guarded())


@pytest.mark.parametrize("source", [42, None, [1, 2], torch.randn(2)], ids=["int", "None", "list", "tensor"])
def test_not_a_model(source):
    with pytest.raises(TypeError, match="expects a torch.jit.ScriptModule"):
        static_runtime.StaticModule(source)


def test_unknown_option(guarded):
    scripted, _ = guarded
    with pytest.raises(TypeError, match="unknown option 'optimise_memory'") as error:
        static_runtime.StaticModule(scripted, optimise_memory=False)
    for name in ("enable_out_variant", "optimize_memory", "manage_output_tensors", "use_copy_variants",
                 "use_maybe_copy_variants"):
        assert name in _message(error)


def test_unknown_gemm_backend(guarded):
    scripted, _ = guarded
    with pytest.raises(TypeError, match="'gemm_backend' must be one of 'onednn', 'openblas', 'aten'"):
        static_runtime.StaticModule(scripted, gemm_backend="mkl")


def test_unknown_fp32_precision(guarded):
    scripted, _ = guarded
    with pytest.raises(TypeError, match="'fp32_precision' must be one of 'ieee', 'bf16', got 'tf32'"):
        static_runtime.StaticModule(scripted, fp32_precision="tf32")


def test_unknown_memory_planner(guarded):
    scripted, _ = guarded
    with pytest.raises(TypeError, match="'memory_planner' must be one of 'greedy_by_size', 'naive'"):
        static_runtime.StaticModule(scripted, memory_planner="best")


def test_non_bool_option(guarded):
    scripted, _ = guarded
    with pytest.raises(TypeError, match="'optimize_memory' must be a bool, got str"):
        static_runtime.StaticModule(scripted, optimize_memory="no")


class MutatesAttribute(nn.Module):
    """State across runs the runtime does not keep (a dict; numbers and tensors it keeps)."""

    seen: Dict[str, int]

    def __init__(self) -> None:
        super().__init__()
        self.seen = {}

    def forward(self, x: Tensor) -> Tensor:
        self.seen = {"calls": len(self.seen) + 1}
        return x + len(self.seen)


class CallsPython(nn.Module):
    @torch.jit.ignore
    def in_python(self, x: Tensor) -> Tensor:
        return x * 3

    def forward(self, x: Tensor) -> Tensor:
        return self.in_python(x) + 1


@torch.jit.script
def _doubled(x: Tensor) -> Tensor:
    return x * 2


class Forks(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        future = torch.jit.fork(_doubled, x)
        return torch.jit.wait(future) + 1


@pytest.mark.parametrize(
    "model, node_kind",
    [
        (MutatesAttribute, "prim::SetAttr"),
        (CallsPython, "prim::PythonOp"),
        (Forks, "prim::fork"),
    ],
    ids=["mutated-attribute", "python-op", "fork"],
)
def test_unsupported_model_is_rejected_when_built(model, node_kind):
    with pytest.raises(RuntimeError, match="static_runtime") as error:
        static_runtime.StaticModule(torch.jit.script(model()))
    # Names the node that cannot run, and where it is when TorchScript recorded a source line.
    assert node_kind in _message(error)
    assert pathlib.Path(__file__).name in _message(error) or "no source location" in _message(error)
