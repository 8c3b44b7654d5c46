"""Python values in and out: every TorchScript argument and return type a model commonly uses."""

from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest
import torch
from torch import Tensor, nn

import static_runtime
from conftest import assert_same, assert_unchanged, clone_tree


class Scalars(nn.Module):
    def forward(self, a: int, b: float, c: bool, s: str) -> Tuple[int, float, bool, str]:
        return a * 2, b / 2, not c, s + "!"


class Containers(nn.Module):
    def forward(
        self, pair: Tuple[Tensor, Tensor], counts: List[int], weights: Dict[str, float]
    ) -> Tuple[List[Tensor], Dict[str, Tensor]]:
        total = pair[0] + pair[1] * counts[0]
        scaled: Dict[str, Tensor] = {}
        for key, weight in weights.items():
            scaled[key] = total * weight
        return [total, pair[0]], scaled


class OptionalArg(nn.Module):
    def forward(self, x: Tensor, y: Optional[Tensor] = None) -> Optional[Tensor]:
        if y is None:
            return None
        return x + y


class Reduce(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sum(0) + 1


class Scores(NamedTuple):
    logits: Tensor
    aux: Optional[Tensor]
    count: int


class NamedTupleInOut(nn.Module):
    """torchvision's GoogLeNet and Inception return a NamedTuple like this one."""

    def forward(self, x: Tensor, previous: Scores) -> Scores:
        logits = x * 2 + previous.logits
        aux = previous.aux
        if aux is not None:
            aux = aux + logits
        return Scores(logits, aux, previous.count + 1)


class Aliases(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        y = x + 1
        return y, y, x


@torch.jit.script
class Batch:
    """A TorchScript class used as a record, as torchvision's detection ImageList is."""

    def __init__(self, tensors: Tensor, sizes: List[List[int]]):
        self.tensors = tensors
        self.sizes = sizes


class Records(nn.Module):
    """A record built, read and rewritten in the forward; a tensor's numbers as Python lists."""

    def forward(self, images: List[Tensor]) -> Tuple[Tensor, List[List[int]], List[float], List[List[int]]]:
        sizes: List[List[int]] = []
        for image in images:
            sizes.append([image.shape[-2], image.shape[-1]])
        batch = Batch(torch.stack(images), sizes)
        batch.tensors = batch.tensors * 2
        corners: List[float] = batch.tensors[:, 0, 0, :2].reshape(-1).tolist()
        counts: List[List[int]] = (batch.tensors > 1).sum([2, 3]).tolist()
        return batch.tensors + 1, batch.sizes, corners, counts


class MixedNumbers(nn.Module):
    """Python's int/float arithmetic, len() of a tensor and dict() of pairs (torchvision's
    detection transform and SSDlite's feature dict)."""

    def forward(self, x: Tensor, n: int, f: float) -> Tuple[float, float, float, float, float, int, Dict[str, Tensor]]:
        features = dict([(str(i), x * i) for i in range(len(x))])
        return n * f, f * n, n + f, f - n, n / f, len(x), features


CASES = [
    (Scalars, (3, 1.5, True, "hi")),
    (Scalars, (-1, 2, False, "")),  # an int where float is declared
    (Containers, ((torch.ones(2), torch.arange(2.0)), [2, 5], {"a": 0.5, "b": 3.0})),
    (Containers, ((torch.ones(3, 1), torch.ones(3, 4)), [1], {})),
    (OptionalArg, (torch.ones(2),)),
    (OptionalArg, (torch.ones(2), None)),
    (OptionalArg, (torch.ones(2), torch.full((2,), 3.0))),
    (Reduce, (torch.zeros(0, 3),)),
    (Reduce, (torch.ones(2, 3, dtype=torch.float64),)),
    (Reduce, (torch.arange(6, dtype=torch.int32).reshape(2, 3),)),
    (Reduce, (torch.tensor(2.5),)),
    (NamedTupleInOut, (torch.ones(2), Scores(torch.arange(2.0), None, 3))),
    (NamedTupleInOut, (torch.ones(3, 1), Scores(torch.ones(1, 4), torch.zeros(3, 4), 0))),
    (Records, ([torch.rand(2, 3, 4), torch.rand(2, 3, 4)],)),
    (Records, ([torch.rand(3, 2, 5)],)),
    (MixedNumbers, (torch.ones(3, 2), 3, 0.5)),
    (MixedNumbers, (torch.ones(1), -2, 4.0)),
]


@pytest.mark.parametrize("model, args", CASES, ids=lambda value: getattr(value, "__name__", None))
def test_values_round_trip(model, args):
    scripted = torch.jit.script(model())
    module = static_runtime.StaticModule(scripted)
    before = clone_tree(args)
    for _ in range(2):
        assert_same(scripted(*clone_tree(args)), module(*args))
        assert_unchanged(before, args)


def test_named_tuple_output_keeps_its_fields():
    scripted = torch.jit.script(NamedTupleInOut())
    module = static_runtime.StaticModule(scripted)
    out = module(torch.ones(2), Scores(torch.zeros(2), None, 1))
    assert type(out).__name__ == "Scores"
    assert out._fields == ("logits", "aux", "count")
    assert out.count == 2 and out.aux is None
    assert module.stats()["fallback_nodes"] == 0


def test_records_numbers_and_tolist_run_natively():
    module = static_runtime.StaticModule(torch.jit.script(Records()))
    module([torch.rand(2, 3, 4)])
    assert module.stats()["fallback_nodes"] == 0
    module = static_runtime.StaticModule(torch.jit.script(MixedNumbers()))
    module(torch.ones(2), 1, 2.0)
    assert module.stats()["fallback_nodes"] == 0
    with pytest.raises(RuntimeError, match="len\\(\\) of a 0-d tensor"):
        module(torch.tensor(1.0), 1, 2.0)
    assert module(torch.ones(2), 1, 2.0)[5] == 2


def test_output_identity_matches_torchscript():
    # One value returned twice is one tensor; an input returned as is, is the caller's tensor.
    module = static_runtime.StaticModule(torch.jit.script(Aliases()))
    x = torch.ones(2)
    first, second, same = module(x)
    assert first is second
    assert same is x
    # A result is the caller's: the next run does not write into it.
    module(torch.zeros(2))
    assert torch.equal(first, torch.full((2,), 2.0))


def test_inputs_requiring_grad():
    torch.manual_seed(0)
    scripted = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval())
    module = static_runtime.StaticModule(scripted)
    x = torch.randn(3, 4, requires_grad=True)
    with torch.no_grad():
        expected = scripted(x)
    out = module(x)
    assert not out.requires_grad
    assert_same(expected, out)
