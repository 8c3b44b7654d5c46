"""Attention as people write it, through the attention passes (passes/attention_fusion.cpp,
multi_head_attention_fusion.cpp, multihead_attention_module.cpp): every spelling of the QKV split,
head split and merge, scale and mask below must fuse into srt::multi_head_attention (or
srt::attention, where there is no projection to fuse), and every near-miss must keep its own ops.
Each module is scripted and run on two shapes, each twice, against eager PyTorch.
"""

import math
import re
from typing import Callable, List, Optional, Tuple

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

import static_runtime

D_MODEL = 32
HEADS = 4
HEAD_DIM = D_MODEL // HEADS
SHAPES = [(1, 5), (3, 9)]  # (batch, seq)


def _x(batch: int, seq: int) -> Tensor:
    return torch.randn(batch, seq, D_MODEL)


class Sizes(nn.Module):
    """The sizes as module attributes (constants once frozen), as model code keeps them."""

    def __init__(self) -> None:
        super().__init__()
        self.h = HEADS
        self.dh = HEAD_DIM
        self.d = D_MODEL


class ChunkedQkv(Sizes):
    """qkv(x).chunk(3, -1), view + transpose(1, 2), a constant scale on the scores."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.scale = HEAD_DIM**-0.5

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.h, c // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, t, c)


class Gpt2Attention(nn.Module):
    """nanoGPT's CausalSelfAttention: split(n_embd, dim=2), causal mask from a tril buffer with
    masked_fill, 1 / sqrt(k.size(-1)), transpose(1, 2).contiguous().view, then c_proj."""

    def __init__(self, block_size: int = 16) -> None:
        super().__init__()
        self.c_attn = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.c_proj = nn.Linear(D_MODEL, D_MODEL)
        self.n_head = HEADS
        self.n_embd = D_MODEL
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Gpt2Block(nn.Module):
    """A GPT-2 block: pre-LN, the attention above, a GELU MLP, two residual adds."""

    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(D_MODEL)
        self.attn = Gpt2Attention()
        self.ln_2 = nn.LayerNorm(D_MODEL)
        self.c_fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.c_proj = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class UnbindQkv(Sizes):
    """timm's ViT: reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4).unbind(0), scale on q."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.scale = HEAD_DIM**-0.5

    def forward(self, x: Tensor) -> Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)


class SelectQkv(Sizes):
    """The same five dims taken as qkv[0], qkv[1], qkv[2]; divided by sqrt(head_dim) after."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh), dim=-1)
        return torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(B, N, -1)


class SlicedQkv(Sizes):
    """Slices of one projection (`[:, :, a:b]` and `[..., a:]`), reshape + permute(0, 2, 1, 3), an
    additive float mask."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)

    def _heads(self, t: Tensor) -> Tensor:
        return t.reshape(t.size(0), t.size(1), self.h, self.dh).permute(0, 2, 1, 3)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        B, T, C = x.shape
        qkv = self.qkv(x)
        q = self._heads(qkv[:, :, :C])
        k = self._heads(qkv[:, :, C : 2 * C])
        v = self._heads(qkv[..., 2 * C :])
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dh) + mask
        out = torch.softmax(scores, -1) @ v
        return out.permute(0, 2, 1, 3).reshape(B, T, C)


class ThreeLinearsPaddingMask(Sizes):
    """Three linears, a boolean key-padding mask via masked_fill, the scale after the fill."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(D_MODEL, D_MODEL)
        self.k = nn.Linear(D_MODEL, D_MODEL)
        self.v = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x: Tensor, padding: Tensor) -> Tensor:
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, -1).transpose(1, 2)
        k = self.k(x).view(b, t, self.h, -1).transpose(1, 2)
        v = self.v(x).view(b, t, -1, self.dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)).masked_fill(padding[:, None, None, :], float("-inf"))
        scores = scores * (1.0 / math.sqrt(self.dh))
        return torch.matmul(scores.softmax(-1), v).transpose(1, 2).contiguous().view(b, t, self.d)


class CausalCore(Sizes):
    """No projection: q, k, v given; a causal mask built with triu per call."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        t = q.size(-2)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(causal, float("-inf")) / math.sqrt(self.dh)
        return torch.softmax(scores, dim=-1) @ v


class StableSoftmaxCore(Sizes):
    """No projection; kᵀ as one permute of a [B, S, H, Dh] key (the head split's own permute), and
    a hand-written stable softmax: the row maximum (amax) subtracted before softmax."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        k_by_position = k.transpose(1, 2)  # [B, S, H, Dh], as a projection's view gives it
        scores = (q @ k_by_position.permute(0, 2, 3, 1)) * self.dh**-0.5
        scores = scores - scores.amax(-1, keepdim=True)
        return torch.softmax(scores, dim=-1) @ v


class TorchaudioSelfAttention(nn.Module):
    """torchaudio's wav2vec2 / HuBERT attention, called as its encoder layers call it (no mask):
    three linears, k split straight into kᵀ by permute(0, 2, 3, 1), the scale on q, and the
    softmax's input shifted by its row maximum, `max(dim=-1, keepdim=True)[0]`."""

    def __init__(self) -> None:
        super().__init__()
        from torchaudio.models.wav2vec2.components import SelfAttention

        self.attention = SelfAttention(D_MODEL, HEADS)

    def forward(self, x: Tensor) -> Tensor:
        return self.attention(x)


class TorchaudioSelfAttentionOptionalMask(nn.Module):
    """torchaudio's attention as Wav2Vec2Model scripted directly calls it: the mask an Optional
    argument, added in place (`weights += attention_mask`) inside its If."""

    def __init__(self) -> None:
        super().__init__()
        from torchaudio.models.wav2vec2.components import SelfAttention

        self.attention = SelfAttention(D_MODEL, HEADS)

    def forward(self, x: Tensor, mask: Optional[Tensor]) -> Tensor:
        return self.attention(x, attention_mask=mask)


def _x_and_batch_mask(batch: int, seq: int, dtype: torch.dtype = torch.float32) -> Tuple[Tensor, ...]:
    return _x(batch, seq), torch.randn(batch, 1, seq, seq, dtype=dtype)


class ModuleSelfAttention(nn.Module):
    """nn.MultiheadAttention used directly, as torchvision's EncoderBlock does."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)

    def forward(self, x: Tensor) -> Tensor:
        torch._assert(x.dim() == 3, "expected (batch, seq, features)")
        out, _ = self.attention(x, x, x, need_weights=False)
        return out


class ModuleSelfAttentionIndexed(ModuleSelfAttention):
    """The same, its output taken with `[0]` rather than unpacked, as much user code does."""

    def forward(self, x: Tensor) -> Tensor:
        torch._assert(x.dim() == 3, "expected (batch, seq, features)")
        return self.attention(x, x, x, need_weights=False)[0]


class ModuleSelfAttentionDefaultWeights(ModuleSelfAttention):
    """need_weights left at its default (True) and the weights dropped by `[0]`: computed for
    nobody, so the module fuses as with need_weights=False."""

    def forward(self, x: Tensor) -> Tensor:
        torch._assert(x.dim() == 3, "expected (batch, seq, features)")
        return self.attention(x, x, x)[0]


def _vit() -> nn.Module:
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)


def _x_and_mask(batch: int, seq: int) -> Tuple[Tensor, ...]:
    return _x(batch, seq), torch.randn(seq, seq)


def _x_and_padding(batch: int, seq: int) -> Tuple[Tensor, ...]:
    padding = torch.zeros(batch, seq, dtype=torch.bool)
    padding[1:, seq - seq // 3 :] = True
    return _x(batch, seq), padding


def _qkv(batch: int, seq: int) -> Tuple[Tensor, ...]:
    return tuple(torch.randn(batch, HEADS, seq, HEAD_DIM) for _ in range(3))


def _images(batch: int, seq: int) -> Tuple[Tensor, ...]:
    return (torch.randn(batch, 3, 32, 32),)


# name -> (module, inputs for (batch, seq), fused op, how many)
FORMS = {
    "chunk": (ChunkedQkv, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "gpt2_split_causal_tril": (Gpt2Attention, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "gpt2_block": (Gpt2Block, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "unbind_5d": (UnbindQkv, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "select_5d": (SelectQkv, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "slices_additive_mask": (SlicedQkv, _x_and_mask, "srt::multi_head_attention", 1),
    "three_linears_padding_mask": (ThreeLinearsPaddingMask, _x_and_padding, "srt::multi_head_attention", 1),
    "causal_triu_core": (CausalCore, _qkv, "srt::attention", 1),
    "stable_softmax_permuted_key_core": (StableSoftmaxCore, _qkv, "srt::attention", 1),
    "torchaudio_self_attention": (TorchaudioSelfAttention, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "torchaudio_self_attention_mask_in_place": (
        TorchaudioSelfAttentionOptionalMask, _x_and_batch_mask, "srt::multi_head_attention", 1),
    "torchaudio_self_attention_mask_none": (
        TorchaudioSelfAttentionOptionalMask, lambda b, s: (_x(b, s), None), "srt::multi_head_attention", 1),
    "nn_multihead_attention": (ModuleSelfAttention, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "nn_multihead_attention_indexed": (
        ModuleSelfAttentionIndexed, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "nn_multihead_attention_rank_not_proven": (
        lambda: RankNotProven(), lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "nn_multihead_attention_default_weights": (
        ModuleSelfAttentionDefaultWeights, lambda b, s: (_x(b, s),), "srt::multi_head_attention", 1),
    "torchvision_vit": (_vit, _images, "srt::multi_head_attention", 2),
    # Its decomposition keeps ATen's layer (and, inside, the slow path) behind an If for masked
    # or nested calls: only the fused op's presence is checked.
    "transformer_encoder_layer": (
        lambda: nn.TransformerEncoderLayer(D_MODEL, HEADS, 64, batch_first=True),
        lambda b, s: (_x(b, s),),
        "srt::multi_head_attention",
        1,
    ),
}
KEEPS_A_SLOW_PATH = {"transformer_encoder_layer", "nn_multihead_attention_rank_not_proven"}


def _count(graph: str, kind: str) -> int:
    return len(re.findall(re.escape(kind) + r"\(", graph))


def _check_against_eager(model: nn.Module, make_inputs: Callable[[int, int], Tuple[Tensor, ...]]) -> static_runtime.StaticModule:
    model.eval()
    module = static_runtime.StaticModule(torch.jit.script(model))
    for batch, seq in SHAPES:
        args = make_inputs(batch, seq)
        with torch.no_grad():
            expected = model(*args)
        for _ in range(2):
            actual = module(*args)
            torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    return module


@pytest.mark.parametrize("name", list(FORMS))
def test_form_fuses_and_matches_eager(name):
    build, make_inputs, op, count = FORMS[name]
    torch.manual_seed(0)
    module = _check_against_eager(build(), make_inputs)
    graph = module.graph
    assert _count(graph, op) == count, graph
    if name in KEEPS_A_SLOW_PATH:
        return
    for gone in ("aten::softmax", "aten::_native_multi_head_attention", "aten::bmm"):
        assert _count(graph, gone) == 0, f"{gone} left in\n{graph}"
    if op == "srt::multi_head_attention":
        assert _count(graph, "srt::attention") == 0, graph


@pytest.mark.parametrize("name", list(FORMS))
def test_form_in_bf16_fuses_and_matches_eager_within_its_rounding(name):
    """fp32_precision="bf16": the projections multiply in bfloat16 (the fused kernel's QKV GEMM
    rounds its input in scratch, sized anew for each shape); the same fused graph, and eager's
    results to bfloat16's rounding."""
    build, make_inputs, op, count = FORMS[name]
    torch.manual_seed(0)
    model = build().eval()
    module = static_runtime.StaticModule(torch.jit.script(model), fp32_precision="bf16")
    for batch, seq in SHAPES:
        args = make_inputs(batch, seq)
        with torch.no_grad():
            expected = model(*args)
        scale = max(1.0, expected.abs().max().item())
        for _ in range(2):
            torch.testing.assert_close(module(*args), expected, rtol=0, atol=3e-2 * scale)
    assert _count(module.graph, op) == count, module.graph


# ---- Near-misses: results stay eager's, and the graph keeps the ops the pattern would replace.


class WrongMergePermutation(ChunkedQkv):
    """Heads merged with transpose(2, 3): same size, other values."""

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.h, c // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return (weights @ v).transpose(2, 3).reshape(b, t, c)


class WrongSplitPermutation(ChunkedQkv):
    """q's heads split over the batch, not the sequence (permute(1, 2, 0, 3))."""

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.h, c // self.h).permute(1, 2, 0, 3)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, t, c)


class ScaleAfterAdditiveMask(SlicedQkv):
    """(scores + mask) * scale scales the mask too."""

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        qkv = self.qkv(x)
        q = self._heads(qkv[:, :, : self.d])
        k = self._heads(qkv[:, :, self.d : 2 * self.d])
        v = self._heads(qkv[..., 2 * self.d :])
        scores = (q @ k.transpose(-2, -1) + mask) / math.sqrt(self.dh)
        out = torch.softmax(scores, -1) @ v
        return out.permute(0, 2, 1, 3).reshape(x.size(0), x.size(1), self.d)


class FiniteFill(CausalCore):
    """masked_fill with -1e4: replaces the score, which an additive mask would not."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        t = q.size(-2)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(causal, -1e4)
        return torch.softmax(scores, dim=-1) @ v


class MaskGrowsScores(CausalCore):
    """A mask with one more dim than the scores: the result grows (broadcast), as eager's does."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        t = q.size(-2)
        mask = torch.zeros(2, 1, 1, t, t)
        return torch.softmax(q @ k.transpose(-2, -1) + mask, dim=-1) @ v


class ScoresUsedOutside(CausalCore):
    """The scores are returned too: they must be computed anyway."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tuple[Tensor, Tensor]:
        scores = q @ k.transpose(-2, -1) * 0.5
        return torch.softmax(scores, dim=-1) @ v, scores


class ProjectionUsedOutside(ChunkedQkv):
    """The QKV projection also leaves the block: the attention core fuses, the block does not."""

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        b, t, c = x.shape
        projected = self.qkv(x)
        q, k, v = projected.chunk(3, dim=-1)
        q = q.view(b, t, self.h, c // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, t, c), projected


class AttentionWeightsNeeded(ModuleSelfAttention):
    """nn.MultiheadAttention asked for its weights: the fast path is not taken as a whole."""

    def forward(self, x: Tensor) -> Tensor:
        torch._assert(x.dim() == 3, "expected (batch, seq, features)")
        out, weights = self.attention(x, x, x)
        assert weights is not None
        return out + weights.sum()


class RankNotProven(ModuleSelfAttention):
    """nn.MultiheadAttention on an input that may be unbatched (2-D): the fused form runs behind
    `if x.dim() == 3`, the module's own code (checks, both paths) for anything else."""

    def forward(self, x: Tensor) -> Tensor:
        out, _ = self.attention(x, x, x, need_weights=False)
        return out


class SequenceFirstModule(nn.Module):
    """batch_first=False: the module's constants rule its fast path out (the fast-path op would read
    [T, B, E] as [B, T, E]), so there is no fast path to replace, asserted rank or not."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(D_MODEL, HEADS)

    def forward(self, x: Tensor) -> Tensor:
        torch._assert(x.dim() == 3, "expected (seq, batch, features)")
        return self.attention(x, x, x, need_weights=False)[0]


class ShiftOverOtherDim(CausalCore):
    """Each column's maximum subtracted: softmax over the rows' dim is not invariant to that."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        scores = q @ k.transpose(-2, -1)
        scores = scores - scores.max(dim=-2, keepdim=True)[0]
        return torch.softmax(scores, dim=-1) @ v


class ShiftWithoutKeepdim(CausalCore):
    """max(-1) without keepdim broadcasts over the last dim: score (i, j) loses row j's maximum."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        q, k, v = q[0, 0], k[0, 0], v[0, 0]  # 2-D, so [S] broadcasts against [S, S]
        scores = q @ k.transpose(-2, -1)
        scores = scores - scores.max(dim=-1)[0]
        return torch.softmax(scores, dim=-1) @ v


# name -> (module, inputs, kinds that must stay, kinds that must not appear)
NEAR_MISSES = {
    "wrong_merge_permutation": (WrongMergePermutation, lambda b, s: (_x(b, s),), ["srt::attention"], ["srt::multi_head_attention"]),
    "wrong_split_permutation": (WrongSplitPermutation, lambda b, s: (_x(b, 3),), [], ["srt::multi_head_attention"]),
    "scale_after_additive_mask": (ScaleAfterAdditiveMask, _x_and_mask, ["aten::softmax"], ["srt::attention", "srt::multi_head_attention"]),
    "finite_fill": (FiniteFill, _qkv, ["aten::masked_fill", "aten::softmax"], ["srt::attention"]),
    "mask_grows_scores": (MaskGrowsScores, _qkv, ["srt::attention"], []),
    "scores_used_outside": (ScoresUsedOutside, _qkv, ["aten::softmax"], ["srt::attention"]),
    "shift_over_other_dim": (ShiftOverOtherDim, _qkv, ["aten::softmax"], ["srt::attention"]),
    "shift_without_keepdim": (ShiftWithoutKeepdim, _qkv, ["aten::softmax"], ["srt::attention"]),
    "projection_used_outside": (ProjectionUsedOutside, lambda b, s: (_x(b, s),), ["srt::attention"], ["srt::multi_head_attention"]),
    "attention_weights_needed": (AttentionWeightsNeeded, lambda b, s: (_x(b, s),), [], ["srt::multi_head_attention"]),
    "sequence_first_module": (SequenceFirstModule, lambda b, s: (torch.randn(s, b, D_MODEL),), [], ["srt::multi_head_attention"]),
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_near_miss_is_left_alone(name):
    build, make_inputs, kept, absent = NEAR_MISSES[name]
    torch.manual_seed(0)
    module = _check_against_eager(build(), make_inputs)
    graph = module.graph
    for kind in kept:
        assert _count(graph, kind) >= 1, f"{kind} expected in\n{graph}"
    for kind in absent:
        assert _count(graph, kind) == 0, f"{kind} not expected in\n{graph}"


def test_unbatched_input_still_runs_when_the_rank_is_not_proven():
    """Behind the rank guard: unbatched (2-D) calls take the module's own code, batched ones the
    fused form, call after call on one module."""
    torch.manual_seed(0)
    model = RankNotProven().eval()
    module = static_runtime.StaticModule(torch.jit.script(model))
    assert _count(module.graph, "srt::multi_head_attention") == 1, module.graph
    for x in (torch.randn(7, D_MODEL), torch.randn(2, 7, D_MODEL), torch.randn(5, D_MODEL),
              torch.randn(7, D_MODEL), torch.randn(3, 4, D_MODEL)):
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(module(x), expected, rtol=1e-4, atol=1e-5)


class UnusedModuleOutput(ModuleSelfAttention):
    """The module's output read by nothing, its rank not proven: nothing to guard."""

    def forward(self, x: Tensor) -> Tensor:
        unused = self.attention(x, x, x)[0]
        return x * 2.0


def test_unused_module_output_builds_and_runs():
    torch.manual_seed(0)
    model = UnusedModuleOutput().eval()
    module = static_runtime.StaticModule(torch.jit.script(model))
    assert _count(module.graph, "srt::multi_head_attention") == 0, module.graph
    x = _x(2, 5)
    torch.testing.assert_close(module(x), x * 2.0)


def test_gpt2_block_and_vit_fuse_to_as_few_nodes_as_the_zoo_block():
    """The zoo's pre-LN block keeps 6 nodes: 2 layer_norm, the fused attention, out_proj + residual,
    ffn_in + gelu, ffn_out + residual. So must a GPT-2 block (its causal mask included) and every
    encoder block of torchvision's ViT (its `x.dim() == 3` asserts folded)."""
    torch.manual_seed(0)
    gpt2 = static_runtime.StaticModule(torch.jit.script(Gpt2Block().eval()))
    assert gpt2.stats()["nodes"] == 6, gpt2.graph
    vit = static_runtime.StaticModule(torch.jit.script(_vit().eval()))
    graph = vit.graph
    # The blocks' `x.dim() == 3` asserts and nn.MultiheadAttention's checks are gone; the image
    # size checks of the stem stay (they check the caller's input).
    for gone in ("aten::dim", "prim::dtype", "aten::is_autocast_enabled", "aten::__isnot__"):
        assert _count(graph, gone) == 0, f"{gone} left in\n{graph}"
    assert _count(graph, "prim::RaiseException") == 2, graph
    # Per block: layer_norm, srt::multi_head_attention, fused_linear (+ residual), layer_norm,
    # fused_linear (gelu), fused_linear (+ residual); then the head, a linear whose weight packing
    # made it a fused_linear as well.
    assert _count(graph, "aten::layer_norm") == 2 * 2 + 1, graph
    assert _count(graph, "srt::fused_linear") == 2 * 3 + 1, graph


# ---- nn.MultiheadAttention's slow path: masks, cross-attention, sequence-first.
# With a mask, keys other than the query, or need_weights, the module runs
# F.multi_head_attention_forward (in PyTorch 1.13: baddbmm / bmm, softmax, bmm); its core must
# become srt::attention whatever the mask (none, float, boolean, key padding, both).


class ModuleMasked(nn.Module):
    def __init__(self, batch_first: bool = True, **options) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=batch_first, **options)

    def forward(self, x: Tensor, memory: Tensor, attn_mask: Optional[Tensor], padding: Optional[Tensor]) -> Tensor:
        return self.attention(x, memory, memory, attn_mask=attn_mask, key_padding_mask=padding, need_weights=False)[0]


def _causal(seq: int, boolean: bool) -> Tensor:
    upper = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
    return upper if boolean else torch.zeros(seq, seq).masked_fill(upper, float("-inf"))


def _padding(batch: int, seq: int) -> Tensor:
    padding = torch.zeros(batch, seq, dtype=torch.bool)
    padding[1:, seq - seq // 3 :] = True  # every row keeps a key
    return padding


# name -> (module, inputs for (batch, seq), srt::attention nodes)
SLOW_PATH_FORMS = {
    "float_causal_mask": (ModuleMasked, lambda b, s: (_x(b, s), _x(b, s), _causal(s, False), None), 1),
    "bool_causal_mask": (ModuleMasked, lambda b, s: (_x(b, s), _x(b, s), _causal(s, True), None), 1),
    "key_padding_mask": (ModuleMasked, lambda b, s: (_x(b, s), _x(b, s), None, _padding(b, s)), 1),
    "both_masks": (ModuleMasked, lambda b, s: (_x(b, s), _x(b, s), _causal(s, False), _padding(b, s)), 1),
    "cross_attention": (ModuleMasked, lambda b, s: (_x(b, s), _x(b, s + 3), None, None), 1),
    "sequence_first": (
        lambda: ModuleMasked(batch_first=False),
        lambda b, s: (torch.randn(s, b, D_MODEL), torch.randn(s + 2, b, D_MODEL), None, None),
        1,
    ),
    # k and v get a learned bias row and a zero row (torch.cat with run-time sizes), the mask a
    # column each (F.pad).
    "bias_kv_zero_attn": (
        lambda: ModuleMasked(add_bias_kv=True, add_zero_attn=True),
        lambda b, s: (_x(b, s), _x(b, s + 2), torch.randn(s, s + 2), None),
        1,
    ),
    "transformer_decoder_layer": (
        lambda: _DecoderLayer(),
        lambda b, s: (_x(b, s), _x(b, s + 3), _causal(s, False), None),
        2,  # self-attention and cross-attention
    ),
}


class _DecoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(D_MODEL, HEADS, 64, batch_first=True)

    def forward(self, x: Tensor, memory: Tensor, tgt_mask: Optional[Tensor], padding: Optional[Tensor]) -> Tensor:
        return self.layer(x, memory, tgt_mask=tgt_mask, tgt_key_padding_mask=padding)


@pytest.mark.parametrize("name", list(SLOW_PATH_FORMS))
def test_multihead_attention_slow_path_fuses_and_matches_eager(name):
    build, make_inputs, count = SLOW_PATH_FORMS[name]
    torch.manual_seed(0)
    module = _check_against_eager(build(), make_inputs)
    graph = module.graph
    assert _count(graph, "srt::attention") == count, graph
    for gone in ("aten::softmax", "aten::baddbmm", "aten::bmm"):
        assert _count(graph, gone) == 0, f"{gone} left in\n{graph}"


def test_mask_added_in_place_keeps_the_scores_dtype():
    """`weights += mask` with a float64 mask stays float32, as in eager: the fused node reads the
    mask cast to q's dtype (an out-of-place add would have promoted the scores)."""
    torch.manual_seed(0)
    model = TorchaudioSelfAttentionOptionalMask().eval()
    module = static_runtime.StaticModule(torch.jit.script(model))
    assert _count(module.graph, "srt::multi_head_attention") == 1, module.graph
    for batch, seq in SHAPES:
        for dtype in (torch.float64, torch.float32):
            args = _x_and_batch_mask(batch, seq, dtype)
            with torch.no_grad():
                expected = model(*args)
            for _ in range(2):
                actual = module(*args)
                assert actual.dtype == torch.float32
                torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


def test_multihead_attention_slow_path_takes_a_mask_given_on_some_calls_only():
    """One module, the Optional mask None on one call and given on the next: both right."""
    torch.manual_seed(0)
    model = ModuleMasked().eval()
    module = static_runtime.StaticModule(torch.jit.script(model))
    for batch, seq in SHAPES:
        x = _x(batch, seq)
        for mask in (None, _causal(seq, False), None, _causal(seq, True)):
            with torch.no_grad():
                expected = model(x, x, mask, None)
            torch.testing.assert_close(module(x, x, mask, None), expected, rtol=1e-4, atol=1e-5)
