"""The model zoo: small models written the way users write them, with the inputs to run them on.

The C++ differential tests load what `make_zoo.py` writes from this module, run each model through the
TorchScript interpreter and through static_runtime, and compare. Every model therefore has at least two input
sets with different shapes (so re-planning on a shape change is exercised) and deterministic outputs.

Importing this module has no side effects: models and inputs are only built when `entries()` is called, and the
fixed seeds they use do not disturb the caller's random state.
"""

import dataclasses
import io
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclasses.dataclass
class ZooEntry:
    name: str  # file-safe name, e.g. "mlp"
    module: nn.Module  # eval() mode, eager, deterministic weights
    inputs: List[Tuple[Any, ...]]  # >= 2 positional-argument tuples, with different shapes
    kwargs: List[Dict[str, Any]]  # same length as inputs; {} when not used
    scriptable: bool = True  # False -> traced with inputs[0] (then inputs are tensors only)


# ---------------------------------------------------------------------------------------------------------------
# Whole models
# ---------------------------------------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x: Tensor) -> Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class PreLNTransformerBlock(nn.Module):
    """A pre-LayerNorm encoder block with attention spelled out in plain ops, as in nanoGPT-style code.

    This is the shape of model the attention fusion passes are written for, so it must stay in plain ops rather
    than nn.MultiheadAttention.
    """

    def __init__(self, d_model: int = 64, num_heads: int = 4, ffn_dim: int = 256) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.ln_attn = nn.LayerNorm(d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.ln_ffn = nn.LayerNorm(d_model)
        self.ffn_in = nn.Linear(d_model, ffn_dim)
        self.ffn_out = nn.Linear(ffn_dim, d_model)

    def _split_heads(self, x: Tensor) -> Tensor:
        batch, seq = x.size(0), x.size(1)
        return x.view(batch, seq, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def attention(self, x: Tensor, mask: Optional[Tensor]) -> Tensor:
        batch, seq, d_model = x.size(0), x.size(1), x.size(2)
        q = self._split_heads(self.q_proj(x))
        k = self._split_heads(self.k_proj(x))
        v = self._split_heads(self.v_proj(x))
        scores = q @ k.transpose(-2, -1) * self.scale
        if mask is not None:
            scores = scores + mask
        weights = torch.softmax(scores, dim=-1)
        context = (weights @ v).permute(0, 2, 1, 3).reshape(batch, seq, d_model)
        return self.out_proj(context)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        x = x + self.attention(self.ln_attn(x), mask)
        return x + self.ffn_out(F.gelu(self.ffn_in(self.ln_ffn(x))))


class TwoBlockTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block0 = PreLNTransformerBlock()
        self.block1 = PreLNTransformerBlock()

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        return self.block1(self.block0(x, mask), mask)


class DeepAndWide(nn.Module):
    """The recommendation model PyTorch Static Runtime was benchmarked on (benchmarks/static_runtime)."""

    def __init__(self, num_features: int = 50) -> None:
        super().__init__()
        self.mu = nn.Parameter(torch.randn(1, num_features))
        self.sigma = nn.Parameter(torch.randn(1, num_features))
        self.fc_w = nn.Parameter(torch.randn(1, num_features + 1))
        self.fc_b = nn.Parameter(torch.randn(1))

    def forward(self, ad_emb_packed: Tensor, user_emb: Tensor, wide: Tensor) -> Tensor:
        wide_normalized = (wide + self.mu) * self.sigma
        wide_clamped = torch.clamp(wide_normalized, 0.0, 10.0)
        dot = torch.bmm(user_emb, ad_emb_packed.transpose(1, 2))
        features = torch.cat([torch.flatten(dot, 1), wide_clamped], dim=1)
        return torch.sigmoid(F.linear(features, self.fc_w, self.fc_b))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.bn2 = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, 10)
        # Fresh BatchNorm stats are the identity; random ones make folding BN into the conv observable.
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            nn.init.uniform_(bn.weight, 0.5, 1.5)
            nn.init.uniform_(bn.bias, -0.5, 0.5)

    def forward(self, x: Tensor) -> Tensor:
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1)
        return self.head(torch.flatten(x, 1))


# ---------------------------------------------------------------------------------------------------------------
# Single-op and language-feature models
# ---------------------------------------------------------------------------------------------------------------


class Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(16, 32))
        self.bias = nn.Parameter(torch.randn(16))

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)


class MatMul(nn.Module):
    """One module for every rank case; the zoo entries differ only in the ranks of their inputs."""

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.matmul(a, b)


class Bmm(nn.Module):
    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.bmm(a, b)


class Softmax(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return torch.softmax(x, dim=-1), F.softmax(x, dim=1)


class LogSoftmax(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, dim=-1)


class LayerNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(32)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x)


class Gelu(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return F.gelu(x), F.gelu(x, approximate="tanh")


class Cat(nn.Module):
    def forward(self, a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor]:
        return torch.cat([a, b], dim=0), torch.cat([a, b], dim=-1)


class Stack(nn.Module):
    def forward(self, a: Tensor, b: Tensor, c: Tensor) -> Tensor:
        return torch.stack([a, b, c], dim=1)


class Chunk(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        first, second, third = x.chunk(3, dim=-1)
        return first, second, third


class Split(nn.Module):
    """Splits into pieces of 4, so the number of outputs follows the input shape."""

    def forward(self, x: Tensor) -> List[Tensor]:
        return torch.split(x, 4, dim=1)


class ViewChain(nn.Module):
    """Only views, so the output aliases the input: the runtime must not hand out a planned buffer here."""

    def forward(self, x: Tensor) -> Tensor:
        batch = x.size(0)
        y = x.permute(0, 2, 1, 3)
        y = y.reshape(batch, y.size(1), -1)
        y = y.transpose(1, 2)
        y = torch.flatten(y, 1)
        return y.view(batch, -1, 2)


class EmbeddingBags(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bag_sum = nn.EmbeddingBag(20, 8, mode="sum")
        self.bag_mean = nn.EmbeddingBag(20, 8, mode="mean")

    def forward(self, indices: Tensor, offsets: Tensor) -> Tuple[Tensor, Tensor]:
        return self.bag_sum(indices, offsets), self.bag_mean(indices, offsets)


class Reductions(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
        return (
            x.sum(dim=1, keepdim=True),
            x.mean(dim=[1, 2]),
            x.mean(dim=-1, keepdim=True),
            torch.amax(x, dim=-1),
            x.argmax(dim=-1),
            x.sum(),
        )


class ScalarArithmetic(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        scaled = x * 2.5 + 1
        divided = x / 3
        rows = x.size(0) * 2
        folded = scaled.reshape(rows, -1)
        return folded, divided, 1.0 - x, x**2


class WhereClamp(nn.Module):
    def forward(self, x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        return torch.where(x > 0, x, y * 0.1), torch.clamp(x, -0.5, 0.5), x.clamp(min=0.0)


class Activations(nn.Module):
    def forward(self, x: Tensor) -> List[Tensor]:
        magnitude = x.abs() + 1
        return [
            torch.sigmoid(x),
            torch.tanh(x),
            F.silu(x),
            F.leaky_relu(x, 0.1),
            F.hardswish(x),
            torch.exp(x),
            torch.log(magnitude),
            torch.sqrt(magnitude),
            torch.rsqrt(magnitude),
            torch.pow(x, 2),
            magnitude**0.5,
        ]


class ListOutput(nn.Module):
    def forward(self, x: Tensor) -> List[Tensor]:
        return [x + 1, x * 2, torch.relu(x)]


class TupleOutput(nn.Module):
    def forward(self, x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
        return x + y, x.sum(dim=0)


class DictOutput(nn.Module):
    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        return {"sum": x.sum(dim=-1), "doubled": x * 2}


class ScalarOutput(nn.Module):
    def forward(self, x: Tensor) -> Tuple[float, int, int]:
        return float(x.sum().item()), int(x.argmax().item()), x.size(1)


class KwargsWithDefaults(nn.Module):
    def forward(self, x: Tensor, scale: float = 2.0, bias: Optional[Tensor] = None) -> Tensor:
        y = x * scale
        if bias is not None:
            y = y + bias
        return y


class BranchOnValue(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        if x.sum() > 0:
            return torch.relu(x) * 2
        return x - 1


class LoopOnValue(nn.Module):
    def forward(self, x: Tensor, n: int) -> Tensor:
        y = x
        for _ in range(n):
            y = torch.tanh(y) + x
        step = 0
        while step < n:
            y = y * 1.5
            step += 1
        # Trip count depends on tensor values, not only on n.
        while bool(y.abs().max() > 1.0):
            y = y / 2
        return y


class InPlaceOps(nn.Module):
    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        x = x.clone()
        x.add_(1)
        x.relu_()
        x.mul_(y)
        return x


class IntTensorInput(nn.Module):
    def forward(self, x: Tensor, indices: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        rows = torch.index_select(x, 0, indices)
        return rows, rows.argmax(dim=1), indices * 2 + 1


# ---------------------------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------------------------


def _entry(
    name: str,
    module: nn.Module,
    inputs: List[Tuple[Any, ...]],
    kwargs: Optional[List[Dict[str, Any]]] = None,
    scriptable: bool = True,
) -> ZooEntry:
    return ZooEntry(name, module.eval(), inputs, kwargs or [{} for _ in inputs], scriptable)


def _random_sets(*sets: List[Tuple[int, ...]]) -> List[Tuple[Tensor, ...]]:
    """One input set per argument: a list of shapes, one normal-random tensor per shape."""
    return [tuple(torch.randn(*shape) for shape in shapes) for shapes in sets]


def _causal_mask(seq: int) -> Tensor:
    return torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)


def _transformer_entry(name: str, module: nn.Module) -> ZooEntry:
    # The third set passes the optional mask by keyword, as callers of attention blocks usually do.
    return _entry(
        name,
        module,
        _random_sets([(1, 16, 64)], [(8, 32, 64)], [(2, 8, 64)]),
        [{}, {}, {"mask": _causal_mask(8)}],
    )


def _mlp() -> ZooEntry:
    return _entry("mlp", MLP(), _random_sets([(1, 64)], [(64, 64)]))


def _transformer_block() -> ZooEntry:
    return _transformer_entry("transformer_block", PreLNTransformerBlock())


def _transformer_2block() -> ZooEntry:
    return _transformer_entry("transformer_2block", TwoBlockTransformer())


def _deep_and_wide() -> ZooEntry:
    def batch(size: int) -> Tuple[Tensor, Tensor, Tensor]:
        return torch.randn(size, 1, 32), torch.randn(size, 1, 32), torch.randn(size, 50)

    return _entry("deep_and_wide", DeepAndWide(), [batch(1), batch(8)])


def _cnn() -> ZooEntry:
    return _entry("cnn", SmallCNN(), _random_sets([(1, 3, 16, 16)], [(2, 3, 24, 24)]))


def _transformer_encoder_layer() -> ZooEntry:
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    return _entry("transformer_encoder_layer", layer, _random_sets([(1, 16, 64)], [(2, 8, 64)]))


def _encoder_layer_norm_first_gelu() -> ZooEntry:
    layer = nn.TransformerEncoderLayer(64, 4, 128, activation="gelu", norm_first=True, batch_first=True)
    return _entry("encoder_layer_norm_first_gelu", layer, _random_sets([(1, 16, 64)], [(3, 5, 64)]))


def _encoder_layer_key_padding_mask() -> ZooEntry:
    """The fast path with a mask, which stays ATen's op, next to a call without one."""
    layer = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
    padding = torch.tensor([[False] * 6 + [True] * 2, [False] * 8])
    return _entry(
        "encoder_layer_key_padding_mask",
        layer,
        [(torch.randn(2, 8, 32), None, padding), (torch.randn(1, 4, 32), None, None)],
    )


class PaddedEncoder(nn.Module):
    """nn.TransformerEncoder given a padding mask. In inference it runs its layers on a nested tensor
    (_nested_tensor_from_mask) when the padding is at the end of each sequence, densely otherwise; the two
    paths differ only at padded positions, which callers zero (so grad mode, which decides the path in
    TorchScript, does not change the result)."""

    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, x: Tensor, padding: Optional[Tensor] = None) -> Tensor:
        y = self.encoder(x, src_key_padding_mask=padding)
        if padding is not None:
            y = y.masked_fill(padding.unsqueeze(-1), 0.0)
        return y


def _encoder_padding_mask() -> ZooEntry:
    # Each padded batch has one full-length sequence, so the nested path's output is as long as the input.
    at_end = torch.tensor([[False] * 6 + [True] * 2, [False] * 8, [False] * 3 + [True] * 5])
    at_start = torch.tensor([[True] * 2 + [False] * 3, [False] * 5])
    return _entry(
        "encoder_padding_mask",
        PaddedEncoder(),
        [(torch.randn(3, 8, 32), at_end), (torch.randn(2, 5, 32), at_start), (torch.randn(1, 4, 32), None)],
    )


def _linear() -> ZooEntry:
    return _entry("linear", Linear(), _random_sets([(2, 32)], [(5, 3, 32)]))


def _matmul_1d_1d() -> ZooEntry:
    return _entry("matmul_1d_1d", MatMul(), _random_sets([(8,), (8,)], [(33,), (33,)]))


def _matmul_2d_2d() -> ZooEntry:
    return _entry("matmul_2d_2d", MatMul(), _random_sets([(4, 8), (8, 5)], [(16, 32), (32, 3)]))


def _matmul_3d_2d() -> ZooEntry:
    return _entry("matmul_3d_2d", MatMul(), _random_sets([(2, 4, 8), (8, 5)], [(3, 7, 16), (16, 4)]))


def _matmul_4d_4d() -> ZooEntry:
    return _entry(
        "matmul_4d_4d",
        MatMul(),
        _random_sets([(1, 2, 4, 8), (1, 2, 8, 4)], [(3, 4, 16, 8), (3, 4, 8, 16)]),
    )


def _bmm() -> ZooEntry:
    return _entry("bmm", Bmm(), _random_sets([(2, 3, 4), (2, 4, 5)], [(6, 8, 16), (6, 16, 2)]))


def _softmax() -> ZooEntry:
    return _entry("softmax", Softmax(), _random_sets([(2, 10)], [(3, 4, 17)]))


def _log_softmax() -> ZooEntry:
    return _entry("log_softmax", LogSoftmax(), _random_sets([(2, 10)], [(3, 4, 17)]))


def _layer_norm() -> ZooEntry:
    return _entry("layer_norm", LayerNorm(), _random_sets([(2, 32)], [(4, 7, 32)]))


def _gelu() -> ZooEntry:
    return _entry("gelu", Gelu(), _random_sets([(2, 8)], [(3, 5, 16)]))


def _cat() -> ZooEntry:
    return _entry("cat", Cat(), _random_sets([(2, 3), (2, 3)], [(4, 5, 6), (4, 5, 6)]))


def _stack() -> ZooEntry:
    return _entry("stack", Stack(), _random_sets([(2, 3), (2, 3), (2, 3)], [(5,), (5,), (5,)]))


def _chunk() -> ZooEntry:
    return _entry("chunk", Chunk(), _random_sets([(2, 12)], [(3, 4, 24)]))


def _split() -> ZooEntry:
    return _entry("split", Split(), _random_sets([(2, 8)], [(3, 14, 2)]))


def _view_chain() -> ZooEntry:
    return _entry("view_chain", ViewChain(), _random_sets([(2, 3, 4, 2)], [(4, 6, 5, 4)]))


def _embedding_bag() -> ZooEntry:
    def bags(num_indices: int, offsets: List[int]) -> Tuple[Tensor, Tensor]:
        return torch.randint(0, 20, (num_indices,), dtype=torch.int64), torch.tensor(offsets, dtype=torch.int64)

    return _entry("embedding_bag", EmbeddingBags(), [bags(10, [0, 3, 7]), bags(20, [0, 5, 9, 15, 19])])


def _reductions() -> ZooEntry:
    return _entry("reductions", Reductions(), _random_sets([(2, 3, 4)], [(3, 5, 6)]))


def _scalar_arithmetic() -> ZooEntry:
    return _entry("scalar_arithmetic", ScalarArithmetic(), _random_sets([(2, 4)], [(3, 6, 2)]))


def _where_clamp() -> ZooEntry:
    return _entry("where_clamp", WhereClamp(), _random_sets([(2, 4), (2, 4)], [(3, 5, 6), (3, 5, 6)]))


def _activations() -> ZooEntry:
    return _entry("activations", Activations(), _random_sets([(4, 8)], [(2, 3, 16)]))


def _list_output() -> ZooEntry:
    return _entry("list_output", ListOutput(), _random_sets([(2, 3)], [(4, 5, 6)]))


def _tuple_output() -> ZooEntry:
    return _entry("tuple_output", TupleOutput(), _random_sets([(2, 3), (2, 3)], [(4, 5), (4, 5)]))


def _dict_output() -> ZooEntry:
    return _entry("dict_output", DictOutput(), _random_sets([(2, 3)], [(4, 5, 6)]))


def _scalar_output() -> ZooEntry:
    return _entry("scalar_output", ScalarOutput(), _random_sets([(2, 3)], [(4, 7)]))


def _kwargs_defaults() -> ZooEntry:
    return _entry(
        "kwargs_defaults",
        KwargsWithDefaults(),
        _random_sets([(2, 3)], [(4, 5)], [(3, 6)]),
        [{}, {"scale": 3.0}, {"scale": 0.5, "bias": torch.randn(6)}],
    )


def _branch_on_value() -> ZooEntry:
    # One set per branch: sum > 0 in the first, sum < 0 in the second.
    return _entry(
        "branch_on_value",
        BranchOnValue(),
        [(torch.rand(2, 3) + 0.1,), (-(torch.rand(4, 5) + 0.1),)],
    )


def _loop_on_value() -> ZooEntry:
    return _entry("loop_on_value", LoopOnValue(), [(torch.randn(2, 3), 3), (torch.randn(4, 5), 5)])


def _inplace_ops() -> ZooEntry:
    return _entry("inplace_ops", InPlaceOps(), _random_sets([(2, 3), (2, 3)], [(4, 5), (4, 5)]))


def _int_tensor_input() -> ZooEntry:
    return _entry(
        "int_tensor_input",
        IntTensorInput(),
        [
            (torch.randn(5, 4), torch.tensor([4, 0, 2], dtype=torch.int64)),
            (torch.randn(9, 6), torch.tensor([8, 1, 1, 3, 0, 7, 5], dtype=torch.int64)),
        ],
    )


def _traced_mlp() -> ZooEntry:
    module = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8))
    return _entry("traced_mlp", module, _random_sets([(1, 32)], [(7, 32)]), scriptable=False)


# Stable order: whole models first, then single ops, then language features. Append new entries at the end.
_BUILDERS: List[Callable[[], ZooEntry]] = [
    _mlp,
    _transformer_block,
    _transformer_2block,
    _deep_and_wide,
    _cnn,
    _transformer_encoder_layer,
    _linear,
    _matmul_1d_1d,
    _matmul_2d_2d,
    _matmul_3d_2d,
    _matmul_4d_4d,
    _bmm,
    _softmax,
    _log_softmax,
    _layer_norm,
    _gelu,
    _cat,
    _stack,
    _chunk,
    _split,
    _view_chain,
    _embedding_bag,
    _reductions,
    _scalar_arithmetic,
    _where_clamp,
    _activations,
    _list_output,
    _tuple_output,
    _dict_output,
    _scalar_output,
    _kwargs_defaults,
    _branch_on_value,
    _loop_on_value,
    _inplace_ops,
    _int_tensor_input,
    _traced_mlp,
    _encoder_layer_norm_first_gelu,
    _encoder_layer_key_padding_mask,
    _encoder_padding_mask,
]


def entries() -> Dict[str, ZooEntry]:
    """Builds every model with its inputs, in a stable order.

    Each builder runs under its own fixed seed in a forked RNG, so an entry's weights and inputs do not depend on
    which other entries exist and the caller's random state is left untouched.
    """
    built: Dict[str, ZooEntry] = {}
    for builder in _BUILDERS:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            entry = builder()
        built[entry.name] = entry
    return built


def to_torchscript(entry: ZooEntry) -> torch.jit.ScriptModule:
    if entry.scriptable:
        return torch.jit.script(entry.module)
    return torch.jit.trace(entry.module, entry.inputs[0])


_SPEC_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.bool: "bool",
}


def example_input_spec(entry: ZooEntry) -> str:
    """The first input set as one `DIMxDIM:dtype` line per positional input, e.g. "1x64:float32".

    A 0-dim tensor is "scalar:dtype", as the `srt` CLI reads it. Returns "" when the set cannot be described
    this way (a non-tensor input, or a dtype outside _SPEC_DTYPES), so readers never get a partial spec.
    """
    lines = []
    for value in entry.inputs[0]:
        if not isinstance(value, Tensor) or value.dtype not in _SPEC_DTYPES:
            return ""
        shape = "x".join(str(size) for size in value.shape) if value.dim() > 0 else "scalar"
        lines.append(f"{shape}:{_SPEC_DTYPES[value.dtype]}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Self-check
# ---------------------------------------------------------------------------------------------------------------


def _assert_same(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, Tensor):
        if not isinstance(actual, Tensor):
            raise AssertionError(f"{where}: expected a Tensor, got {type(actual).__name__}")
        if expected.dtype != actual.dtype or expected.shape != actual.shape:
            raise AssertionError(
                f"{where}: expected {expected.dtype} {list(expected.shape)}, got {actual.dtype} {list(actual.shape)}"
            )
        if not torch.allclose(expected, actual.detach(), atol=1e-5, equal_nan=True):
            difference = (expected.double() - actual.detach().double()).abs().max().item()
            raise AssertionError(f"{where}: values differ (max abs difference {difference})")
    elif isinstance(expected, (list, tuple)):
        # Sequence kinds may differ: eager torch.split returns a tuple where TorchScript returns a list.
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            raise AssertionError(f"{where}: expected {type(expected).__name__} of {len(expected)}, got {actual!r}")
        for index, (want, got) in enumerate(zip(expected, actual)):
            _assert_same(want, got, f"{where}[{index}]")
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or list(expected) != list(actual):
            raise AssertionError(f"{where}: expected dict with keys {list(expected)}, got {actual!r}")
        for key in expected:
            _assert_same(expected[key], actual[key], f"{where}[{key!r}]")
    elif isinstance(expected, float):
        if not isinstance(actual, float) or not math.isclose(expected, actual, rel_tol=1e-6, abs_tol=1e-5):
            raise AssertionError(f"{where}: expected {expected!r}, got {actual!r}")
    elif expected != actual or type(expected) is not type(actual):
        raise AssertionError(f"{where}: expected {expected!r}, got {actual!r}")


def _check_structure(entry: ZooEntry) -> None:
    if entry.module.training:
        raise AssertionError(f"{entry.name}: module is in training mode")
    if len(entry.inputs) < 2 or len(entry.kwargs) != len(entry.inputs):
        raise AssertionError(f"{entry.name}: needs >= 2 input sets and one kwargs dict per set")
    shapes = {
        repr([tuple(v.shape) if isinstance(v, Tensor) else v for v in args]) for args in entry.inputs
    }
    if len(shapes) < 2:
        raise AssertionError(f"{entry.name}: input sets must differ in shape")
    if not entry.scriptable and any(
        entry.kwargs[i] or not all(isinstance(v, Tensor) for v in args) for i, args in enumerate(entry.inputs)
    ):
        raise AssertionError(f"{entry.name}: a traced entry takes positional tensors only")


def check_entries(selected: Optional[Dict[str, ZooEntry]] = None) -> None:
    """Fails loudly unless every entry's saved-and-reloaded TorchScript module matches its eager module.

    The reference is eager under no_grad. The TorchScript module is checked both with and without grad mode,
    because the C++ tests may run it either way and some modules (nn.TransformerEncoderLayer) take a different
    code path when grad is enabled.
    """
    for name, entry in (selected if selected is not None else entries()).items():
        _check_structure(entry)
        buffer = io.BytesIO()
        torch.jit.save(to_torchscript(entry), buffer)
        buffer.seek(0)
        scripted = torch.jit.load(buffer)
        for index, (args, kwargs) in enumerate(zip(entry.inputs, entry.kwargs)):
            with torch.no_grad():
                expected = entry.module(*args, **kwargs)
                _assert_same(expected, scripted(*args, **kwargs), f"{name} set {index} (no_grad)")
            _assert_same(expected, scripted(*args, **kwargs), f"{name} set {index} (grad enabled)")
