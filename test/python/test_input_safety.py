"""Inputs the runtime cannot run are refused with a RuntimeError naming the input; callers' tensors are never
written; results do not change when the module runs again."""

from typing import List

import pytest
import torch
from torch import Tensor, nn

import static_runtime
from conftest import assert_same


class TwoInputs(nn.Module):
    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        return torch.relu(x) + y


class ListInput(nn.Module):
    def forward(self, xs: List[Tensor], scale: float = 2.0) -> Tensor:
        return torch.cat(xs, 0) * scale


@pytest.fixture(scope="module")
def two_inputs():
    scripted = torch.jit.script(TwoInputs().eval())
    return scripted, static_runtime.StaticModule(scripted)


def _still_works(scripted, module) -> None:
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    with torch.no_grad():
        assert_same(scripted(x, y), module(x, y))


def test_meta_tensor_is_refused_naming_the_input(two_inputs):
    scripted, module = two_inputs
    meta = torch.empty(3, 4, device="meta")
    with pytest.raises(RuntimeError, match=r"input 'y' \(argument 1\) is on device meta; expected a CPU tensor"):
        module(torch.randn(3, 4), meta)
    with pytest.raises(RuntimeError, match=r"input 'x' \(argument 0\) is on device meta"):
        module(y=torch.randn(3, 4), x=meta)
    _still_works(scripted, module)


def test_sparse_tensor_is_refused_naming_the_input(two_inputs):
    scripted, module = two_inputs
    dense = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match=r"input 'x' \(argument 0\) has layout Sparse.*to_dense"):
        module(dense.to_sparse(), dense)
    _still_works(scripted, module)


def test_quantized_tensor_is_refused_naming_the_input(two_inputs):
    scripted, module = two_inputs
    dense = torch.randn(3, 4)
    quantized = torch.quantize_per_tensor(dense, 0.1, 0, torch.qint8)
    with pytest.raises(RuntimeError, match=r"input 'y' \(argument 1\) is a quantized tensor \(QInt8\).*dequantize"):
        module(dense, quantized)
    _still_works(scripted, module)


def test_nested_tensor_is_refused_naming_the_input(two_inputs):
    scripted, module = two_inputs
    dense = torch.randn(3, 4)
    nested = torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(1, 4)])
    with pytest.raises(RuntimeError, match=r"input 'x' \(argument 0\) is a nested tensor.*to_padded_tensor"):
        module(nested, dense)
    _still_works(scripted, module)


def test_tensor_inside_a_list_is_refused_with_its_position():
    module = static_runtime.StaticModule(torch.jit.script(ListInput().eval()))
    xs = [torch.randn(1, 2), torch.empty(1, 2, device="meta")]
    with pytest.raises(RuntimeError, match=r"input 'xs' \(argument 0\)\[1\] is on device meta"):
        module(xs)
    xs[1] = torch.randn(1, 2)
    assert_same(torch.cat(xs, 0) * 2.0, module(xs))


def test_requires_grad_inputs_run(two_inputs):
    scripted, module = two_inputs
    x = torch.randn(3, 4, requires_grad=True)
    y = torch.randn(3, 4)
    result = module(x, y)
    assert not result.requires_grad
    with torch.no_grad():
        assert_same(scripted(x, y), result)


def test_caller_tensors_are_not_written_and_results_outlive_later_runs(two_inputs):
    scripted, module = two_inputs
    storage = torch.randn(6, 4)
    x = storage[1:4]  # a view into a larger storage
    y = torch.randn(4, 3).t()  # a transposed input
    storage_before, y_before = storage.clone(), y.clone()
    first = module(x, y)
    first_before = first.clone()
    for shape in ((5, 7), (3, 4)):
        module(torch.randn(*shape), torch.randn(*shape))
    assert torch.equal(storage, storage_before)
    assert torch.equal(y, y_before)
    assert torch.equal(first, first_before)
    with torch.no_grad():
        assert_same(scripted(x, y), first)
