"""TorchScript class instances a forward creates, and the run-time type checks Union values need.

torchvision's MultiScaleRoIAlign (Faster/Mask/Keypoint R-CNN) builds a LevelMapper record on its
first call and keeps it on itself, `self.map_levels`: state across runs, as on the module in
eager, which the runtime holds in a cell of its own (the caller's module is never written). Its
roi_align takes Union[Tensor, List[Tensor]] boxes and branches on isinstance at run time.
"""

import copy
from typing import List, Optional, Union

import torch
from torch import Tensor, nn

import static_runtime


@torch.jit.script
class Affine:
    def __init__(self, scale: float, shift: float) -> None:
        self.scale = scale
        self.shift = shift

    def __call__(self, x: Tensor) -> Tensor:
        return x * self.scale + self.shift


class LazyAffine(nn.Module):
    """Builds its Affine from the first input it sees and keeps it for every later call."""

    affine: Optional[Affine]

    def __init__(self) -> None:
        super().__init__()
        self.affine = None

    def forward(self, x: Tensor) -> Tensor:
        if self.affine is None:
            self.affine = Affine(float(x.shape[-1]), 0.5)
        affine = self.affine
        assert affine is not None
        return affine(x)


def _count(boxes: Union[Tensor, List[Tensor]]) -> int:
    if isinstance(boxes, (list, tuple)):
        return len(boxes)
    if isinstance(boxes, Tensor):
        return boxes.size(0)
    return -1


class CountsBoxes(nn.Module):
    def forward(self, x: Tensor, boxes: List[Tensor]) -> Tensor:
        return x * _count(boxes) + _count(x)


def test_an_object_the_forward_keeps_is_state_across_runs():
    scripted = torch.jit.script(LazyAffine())
    reference = copy.deepcopy(scripted)
    module = static_runtime.StaticModule(scripted)
    # The first call fixes the scale (its last dim, 3); later calls of other shapes keep it.
    for shape in [(2, 3), (4, 5), (2, 3), (1, 7)]:
        x = torch.randn(*shape)
        expected = reference(x)
        assert torch.equal(module(x), expected), shape
        assert torch.equal(module(x), x * 3.0 + 0.5), shape
    assert scripted.affine is None, "the caller's module was written"
    # A second StaticModule starts from the caller's module, as a fresh copy of it would.
    fresh = static_runtime.StaticModule(scripted)
    x = torch.randn(2, 5)
    assert torch.equal(fresh(x), x * 5.0 + 0.5)
    assert module.stats()["fallback_ops"] == {}


def test_isinstance_of_a_union_is_decided_at_run_time():
    module = static_runtime.StaticModule(torch.jit.script(CountsBoxes()))
    for rows, boxes in [(2, 3), (5, 1), (3, 0)]:
        x = torch.randn(rows, 4)
        listed = [torch.randn(2, 4) for _ in range(boxes)]
        assert torch.equal(module(x, listed), x * boxes + rows)
    assert module.stats()["fallback_ops"] == {}
