"""Shared fixtures for the static_runtime pytest suite.

Run from the repository root after building the extension:

    PYTHONPATH=build/python /usr/bin/python3 -m pytest test/python -q
"""

import itertools
import math
import pathlib
import sys
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import pytest
import torch

_MODELS_DIR = pathlib.Path(__file__).resolve().parents[1] / "models"
sys.path.insert(0, str(_MODELS_DIR))

import zoo  # noqa: E402  (needs the path above)

try:
    import static_runtime  # noqa: E402,F401
except ImportError as error:  # pragma: no cover - a setup problem, not a test failure
    raise ImportError(
        "cannot import static_runtime: build the `_C` target and put <build>/python on PYTHONPATH, "
        "e.g. PYTHONPATH=build/python /usr/bin/python3 -m pytest test/python"
    ) from error

# Tolerance for float32 results; both sides run the same ATen kernels, so this is generous.
ATOL = 1e-5
RTOL = 1e-5

OPTION_NAMES = (
    "enable_out_variant",
    "optimize_memory",
    "manage_output_tensors",
    "use_copy_variants",
    "use_maybe_copy_variants",
)


def _is_valid(options: Dict[str, bool]) -> bool:
    # optimize_memory and manage_output_tensors only make sense with out-variant kernels.
    return options["enable_out_variant"] or not (
        options["optimize_memory"] or options["manage_output_tensors"]
    )


def _all_option_combos() -> List[Dict[str, bool]]:
    return [dict(zip(OPTION_NAMES, values)) for values in itertools.product((False, True), repeat=5)]


VALID_OPTION_COMBOS = [options for options in _all_option_combos() if _is_valid(options)]
INVALID_OPTION_COMBOS = [options for options in _all_option_combos() if not _is_valid(options)]


def options_id(options: Dict[str, bool]) -> str:
    """A short test id: the initials of the options that are on, e.g. "eo-om-cv"."""
    short = {
        "enable_out_variant": "eo",
        "optimize_memory": "om",
        "manage_output_tensors": "mo",
        "use_copy_variants": "cv",
        "use_maybe_copy_variants": "mcv",
    }
    on = [short[name] for name in OPTION_NAMES if options[name]]
    return "-".join(on) or "none"


def assert_same(expected: Any, actual: Any, where: str = "output") -> None:
    """Recursively compares TorchScript results: same structure and types, tensors within fp32 tolerance."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: expected a Tensor, got {type(actual).__name__}"
        assert expected.dtype == actual.dtype, f"{where}: dtype {actual.dtype} != expected {expected.dtype}"
        assert expected.shape == actual.shape, f"{where}: shape {list(actual.shape)} != expected {list(expected.shape)}"
        if expected.is_floating_point() or expected.is_complex():
            close = torch.allclose(expected.detach(), actual.detach(), rtol=RTOL, atol=ATOL, equal_nan=True)
            if not close:
                difference = (expected.detach().double() - actual.detach().double()).abs().max().item()
                raise AssertionError(f"{where}: values differ (max abs difference {difference})")
        else:
            assert torch.equal(expected, actual), f"{where}: values differ"
        return
    if hasattr(expected, "_fields"):
        # A NamedTuple from TorchScript is a namedtuple class made per call: same name and fields.
        assert type(expected).__name__ == type(actual).__name__, f"{where}: expected {type(expected).__name__}, got {type(actual).__name__}"
        assert expected._fields == getattr(actual, "_fields", None), f"{where}: fields {getattr(actual, '_fields', None)} != expected {expected._fields}"
    else:
        assert type(expected) is type(actual), f"{where}: expected {type(expected).__name__}, got {type(actual).__name__}"
    if isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), f"{where}: length {len(actual)} != expected {len(expected)}"
        for index, (want, got) in enumerate(zip(expected, actual)):
            assert_same(want, got, f"{where}[{index}]")
    elif isinstance(expected, dict):
        assert list(expected) == list(actual), f"{where}: keys {list(actual)} != expected {list(expected)}"
        for key in expected:
            assert_same(expected[key], actual[key], f"{where}[{key!r}]")
    elif isinstance(expected, float):
        assert math.isclose(expected, actual, rel_tol=RTOL, abs_tol=ATOL) or (
            math.isnan(expected) and math.isnan(actual)
        ), f"{where}: {actual!r} != expected {expected!r}"
    else:
        assert expected == actual, f"{where}: {actual!r} != expected {expected!r}"


def clone_tree(value: Any) -> Any:
    """A deep copy of an argument structure, tensors cloned, to check later that a call left it untouched."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if hasattr(value, "_fields"):  # a namedtuple takes its fields as arguments
        return type(value)(*(clone_tree(element) for element in value))
    if isinstance(value, (list, tuple)):
        return type(value)(clone_tree(element) for element in value)
    if isinstance(value, dict):
        return {key: clone_tree(element) for key, element in value.items()}
    return value


def assert_unchanged(before: Any, after: Any, where: str = "input") -> None:
    """Exact comparison: an input must not be written to, not even within tolerance."""
    if isinstance(before, torch.Tensor):
        assert torch.equal(before, after), f"{where} was modified by the call"
    elif isinstance(before, (list, tuple)):
        for index, (old, new) in enumerate(zip(before, after)):
            assert_unchanged(old, new, f"{where}[{index}]")
    elif isinstance(before, dict):
        for key in before:
            assert_unchanged(before[key], after[key], f"{where}[{key!r}]")
    else:
        assert before == after, f"{where} was modified by the call"


class Case(NamedTuple):
    """A TorchScript module, the input sets to run it on, and its reference output for each set."""

    name: str
    scripted: torch.jit.ScriptModule
    inputs: List[Tuple[Any, ...]]
    kwargs: List[Dict[str, Any]]
    expected: List[Any]


def make_case(name: str, scripted: torch.jit.ScriptModule, inputs: List[Tuple[Any, ...]],
              kwargs: Optional[List[Dict[str, Any]]] = None) -> Case:
    """References are the TorchScript interpreter's outputs under no_grad: static_runtime never records
    gradients, and some modules (nn.TransformerEncoderLayer) take another path when grad is on."""
    kwargs = kwargs or [{} for _ in inputs]
    with torch.no_grad():
        expected = [scripted(*args, **kw) for args, kw in zip(inputs, kwargs)]
    return Case(name, scripted, inputs, kwargs, expected)


_ENTRIES = zoo.entries()
ZOO_NAMES = list(_ENTRIES)


@pytest.fixture(scope="session")
def zoo_case() -> Callable[[str], Case]:
    """zoo_case(name) -> Case, scripting (or tracing) each entry and computing its references once per session."""
    cache: Dict[str, Case] = {}

    def get(name: str) -> Case:
        if name not in cache:
            entry = _ENTRIES[name]
            cache[name] = make_case(name, zoo.to_torchscript(entry), entry.inputs, entry.kwargs)
        return cache[name]

    return get


def run_and_compare(module: "static_runtime.StaticModule", case: Case, repeats: int = 2,
                    keep_results: bool = True) -> None:
    """Runs every input set `repeats` times through `module` and compares with the references.

    With keep_results, results of earlier runs are checked again at the end: what a caller receives is
    theirs and must survive later runs (not so with manage_output_tensors).
    """
    kept = []
    for repeat in range(repeats):
        for index, (args, kwargs) in enumerate(zip(case.inputs, case.kwargs)):
            before = clone_tree((args, kwargs))
            actual = module(*args, **kwargs)
            where = f"{case.name} set {index} run {repeat}"
            assert_same(case.expected[index], actual, where)
            assert_unchanged(before, (args, kwargs), f"{where} arguments")
            kept.append((index, where, actual))
    if keep_results:
        for index, where, actual in kept:
            assert_same(case.expected[index], actual, f"{where} (after later runs)")


def pytest_configure(config):
    # torch.jit.script(nn.TransformerEncoderLayer) warns about its own __constants__ in torch 1.13.
    config.addinivalue_line("filterwarnings", "ignore:'batch_first' was found in ScriptModule constants:UserWarning")
