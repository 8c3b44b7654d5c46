"""Real models (test/models/real_models.py) through static_runtime against eager PyTorch.

Every model is scripted (traced where it cannot be), run on two input shapes, each twice, and
compared with eager PyTorch in inference (no_grad) and with the same TorchScript module; results
handed out earlier must still hold after the last call, and inputs stay untouched. The vision
classifiers must run without a single JIT fallback.
"""

import pathlib
import sys
from typing import Any

import pytest
import torch

import static_runtime
from conftest import assert_unchanged, clone_tree

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "models"))
import real_models  # noqa: E402

pytest.importorskip("torchvision")
pytest.importorskip("torchaudio")

ENTRIES = real_models.entries()

# What torchvision and torch 1.13 say about their own modules when they are scripted and run.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Scripted GoogleNet always returns GoogleNetOutputs Tuple"),
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage"),
    pytest.mark.filterwarnings("ignore:'norm' was found in ScriptModule constants"),
]


def assert_close(expected: Any, actual: Any, tolerance: float, where: str) -> None:
    """Same structure; tensors of the same dtype and shape, within `tolerance` of the reference's scale.

    Deep float32 networks with random weights accumulate rounding differently in different (equally
    valid) kernels: the bound is relative to the largest magnitude of the reference, at least 1.
    """
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: expected a Tensor, got {type(actual).__name__}"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {list(actual.shape)} != {list(expected.shape)}"
        if not expected.is_floating_point():
            assert torch.equal(actual, expected), f"{where}: values differ"
            return
        assert torch.equal(actual.isnan(), expected.isnan()), f"{where}: NaN in different places"
        finite = ~expected.isnan()
        scale = max(1.0, expected[finite].abs().max().item()) if finite.any() else 1.0
        difference = (actual[finite].double() - expected[finite].double()).abs().max().item() if finite.any() else 0.0
        assert difference <= tolerance * scale, f"{where}: max difference {difference} (scale {scale})"
        return
    if expected is None:
        assert actual is None, f"{where}: expected None, got {type(actual).__name__}"
        return
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), f"{where}: {actual!r}"
        if hasattr(expected, "_fields"):
            assert getattr(actual, "_fields", None) == expected._fields, f"{where}: fields differ"
        for index, (want, got) in enumerate(zip(expected, actual)):
            assert_close(want, got, tolerance, f"{where}[{index}]")
        return
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_close(expected[key], actual[key], tolerance, f"{where}[{key!r}]")
        return
    assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def _is_close(expected: Any, actual: Any, tolerance: float) -> bool:
    try:
        assert_close(expected, actual, tolerance, "")
    except AssertionError:
        return False
    return True


def _same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))
    return type(a) is type(b)


@pytest.mark.parametrize("name", list(ENTRIES))
def test_real_model_matches_eager(name):
    entry = ENTRIES[name]
    model, scripted = real_models.instantiate(entry)
    module = static_runtime.StaticModule(scripted)
    kept = []
    for repeat in range(2):
        for index, args in enumerate(entry.inputs):
            with torch.no_grad():
                eager = model(*args)
                torchscript = scripted(*args)
            before = clone_tree(args)
            actual = module(*args)
            where = f"{name} input set {index} call {repeat}"
            assert_unchanged(before, args, f"{where} arguments")
            assert_close(torchscript, actual, entry.tolerance, f"{where} vs TorchScript")
            # Eager is compared where it computes what TorchScript does. It may not: torchvision's
            # GoogLeNet returns a NamedTuple once scripted and a tensor in eager; and once a process
            # has scripted a second nn.TransformerEncoderLayer configuration, TorchScript 1.13 mangles
            # the class name, `isinstance(layer, TransformerEncoderLayer)` turns false in the
            # scripted encoder, and it takes the dense path (padded rows computed) where eager takes
            # the nested one (padded rows zero). We run the scripted graph, so TorchScript decides.
            if _same_structure(eager, torchscript) and _is_close(eager, torchscript, entry.tolerance):
                assert_close(eager, actual, entry.tolerance, f"{where} vs eager")
            kept.append((torchscript, actual, where))
    for expected, actual, where in kept:
        assert_close(expected, actual, entry.tolerance, f"{where}, after the last call")
    fallback_ops = module.stats()["fallback_ops"]
    if entry.zero_fallbacks:
        assert not fallback_ops, f"{name} falls back on {fallback_ops}"
    # The README's table (real_models.py --table) says why each remaining fallback op remains.
    unexplained = set(fallback_ops) - set(real_models.FALLBACK_REASONS)
    assert not unexplained, f"{name}: no reason recorded for fallback ops {sorted(unexplained)}"


def _cpu_multiplies_bfloat16() -> bool:
    try:
        flags = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


# bfloat16 keeps 8 mantissa bits: each product's operands are rounded by up to 2^-9 relative.
BF16_TOLERANCE = 3e-2


@pytest.mark.parametrize("name", list(ENTRIES))
def test_real_model_in_bf16_matches_torchscript_within_its_rounding(name):
    """fp32_precision="bf16": the same results to bfloat16's rounding, and still no fallbacks."""
    entry = ENTRIES[name]
    _, scripted = real_models.instantiate(entry)
    module = static_runtime.StaticModule(scripted, fp32_precision="bf16")
    for repeat in range(2):
        for index, args in enumerate(entry.inputs):
            with torch.no_grad():
                torchscript = scripted(*args)
            actual = module(*args)
            tolerance = max(entry.tolerance, BF16_TOLERANCE)
            assert_close(torchscript, actual, tolerance, f"{name} input set {index} call {repeat}")
    if entry.zero_fallbacks:
        assert not module.stats()["fallback_ops"]
    repacked = next(p for p in module.stats()["passes"] if p["name"] == "bf16_weights")
    # Every entry has a linear layer or a convolution with a constant weight.
    assert repacked["changed"] == _cpu_multiplies_bfloat16()
