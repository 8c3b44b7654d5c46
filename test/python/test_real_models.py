"""Real models (test/models/real_models.py) through static_runtime against eager PyTorch.

Every model is scripted (traced where it cannot be), run on two input shapes, each twice, and
compared with eager PyTorch in inference (no_grad) and with the same TorchScript module; results
handed out earlier must still hold after the last call, and inputs stay untouched. The vision
classifiers must run without a single JIT fallback.
"""

import pathlib
import sys
from typing import Any, List, Optional, Tuple

import pytest
import torch
from torch import nn

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
    valid) kernels: the bound is relative to the largest magnitude of the reference (1 when it is
    all zeros), never a fixed floor, under which a network whose outputs vanish would pass with any
    result.
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
        scale = expected[finite].abs().max().item() if finite.any() else 0.0
        scale = scale if scale > 0 else 1.0
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


# The models whose forward the runtime proves treats every item of a batch on its own
# (StaticModule.batch_independent): these run a batch as one slice per thread.
BATCH_INDEPENDENT = {
    "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "googlenet",
    "convnext_tiny", "shufflenet_v2_x0_5", "squeezenet1_1", "inception_v3", "alexnet", "unet",
    "espcn", "dcgan_generator", "r3d_18", "audio_conv1d_classifier",
}


def _three_items(value: Any) -> Any:
    """A batch of three from a batch of one or more: the items, then them again, perturbed (float),
    then again: an odd batch, so two slices differ in size."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return value
    second = value + 0.1 * torch.randn_like(value) if value.is_floating_point() else value
    return torch.cat([value, second, value], 0)


def _expect_batch_slices_match(name: str, entry: Any, scripted: Any, module: Any) -> None:
    """Run as slices by a 2-thread runtime, each input set grown to an odd batch returns what
    TorchScript returns for the whole batch, twice (the second run on reused memory)."""
    pool = static_runtime.RuntimePool(module, 1, intra_op_threads=2, split_batch=True)
    for index, args in enumerate(entry.inputs):
        batch = tuple(_three_items(arg) for arg in args)
        with torch.no_grad():
            expected = scripted(*batch)
        for repeat in range(2):
            assert_close(expected, pool(*batch), entry.tolerance,
                         f"{name} input set {index} as batch slices, call {repeat}")


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
    assert module.batch_independent == (name in BATCH_INDEPENDENT), (
        f"{name}: batch_independent is {module.batch_independent} ({module.batch_independence_reason})")
    if module.batch_independent:
        _expect_batch_slices_match(name, entry, scripted, module)
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


# bfloat16 keeps 8 mantissa bits: each product's operands are rounded by up to 2^-9 relative, and
# deep networks accumulate it.
BF16_TOLERANCE = 3e-2


def _float_tensors(value: Any) -> List[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in _float_tensors(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in _float_tensors(item)]
    return []


def _largest_relative_difference(expected: Any, actual: Any) -> float:
    """Over the float tensors of two results, the largest difference relative to each expected
    tensor's largest magnitude (as assert_close measures it)."""
    worst = 0.0
    for want, got in zip(_float_tensors(expected), _float_tensors(actual)):
        finite = ~want.isnan()
        if not finite.any():
            continue
        scale = want[finite].abs().max().item() or 1.0
        worst = max(worst, (got.double()[finite] - want.double()[finite]).abs().max().item() / scale)
    return worst


def _autocast_bf16_difference(model: nn.Module, args: Tuple[Any, ...], expected: Any) -> Optional[float]:
    """How far PyTorch's own bfloat16 (CPU autocast: convolutions, linear layers and matmuls in
    bfloat16) lands from `expected`; None where autocast cannot run the model."""
    try:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            autocast = model(*args)
    except Exception:  # noqa: BLE001 - any op autocast does not take: no second opinion
        return None
    if len(_float_tensors(autocast)) != len(_float_tensors(expected)):
        return None
    return _largest_relative_difference(expected, autocast)


@pytest.mark.parametrize("name", list(ENTRIES))
def test_real_model_in_bf16_matches_torchscript_within_its_rounding(name):
    """fp32_precision="bf16": TorchScript's float32 results to within bfloat16's rounding, and
    still no fallbacks. How much rounding a network amplifies depends on it: random weights with
    BatchNorm statistics from one random batch amplify a lot (resnet50: 31% of the output's scale
    under PyTorch's own bfloat16 autocast), so the bound is BF16_TOLERANCE or twice what autocast
    makes of the same inputs, whichever is larger."""
    entry = ENTRIES[name]
    model, scripted = real_models.instantiate(entry)
    module = static_runtime.StaticModule(scripted, fp32_precision="bf16")
    bounds = []
    for args in entry.inputs:
        with torch.no_grad():
            autocast = _autocast_bf16_difference(model, args, scripted(*args))
        bound = max(entry.tolerance, BF16_TOLERANCE)
        bounds.append(max(bound, 2 * autocast) if autocast is not None else bound)
    for repeat in range(2):
        for index, args in enumerate(entry.inputs):
            with torch.no_grad():
                torchscript = scripted(*args)
            actual = module(*args)
            where = f"{name} input set {index} call {repeat}"
            if entry.selects_by_rank:
                assert _same_structure(torchscript, actual), where
            else:
                assert_close(torchscript, actual, bounds[index], where)
    if entry.zero_fallbacks:
        assert not module.stats()["fallback_ops"]
    repacked = next(p for p in module.stats()["passes"] if p["name"] == "bf16_weights")
    # Every other entry has a linear layer or a convolution with a constant weight.
    assert repacked["changed"] == (_cpu_multiplies_bfloat16() and not entry.kernels_pack_every_weight)
