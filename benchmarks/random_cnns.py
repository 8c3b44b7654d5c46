#!/usr/bin/python3
"""Random small convolution networks on TorchScript (frozen) and ours, side by side: layer kinds
and shapes nobody tuned for, to find the ones where ours is slower than what the user has today.

Usage (from the repository root, after the build):

    /usr/bin/python3 benchmarks/random_cnns.py [--seed 0] [--count 16] [--json PATH]

Each network is 3 to 8 blocks drawn from: a convolution (kernel 1/3/5/7, stride 1 or 2, BatchNorm,
one of six activations), depthwise (stride 1 or 2, ReLU6), depthwise with channel multiplier 2,
grouped (2, 3, 4, 5 or 8 groups), dilated (2, 3, 4), a ResNet bottleneck (channels / 4 inside,
residual add), a squeeze-excitation written with mean and sigmoid, or a pooling; channel counts
from 3 to 100, not only multiples of 16. Input: batch 1 or 2, 1 to 16 channels, 32 to 80 pixels.
Random weights, BatchNorm statistics random too. 1 intra-op thread (torch, OpenBLAS's pool, ours).

Every network is checked first: ours against eager PyTorch on its input and on a second shape,
each runtime called twice (relative error printed). Then static_runtime.bench.compare times
eager, TorchScript (frozen), optimize_for_inference, PyTorch's Static Runtime and ours in
interleaved rounds (medians); the table gives ours / TorchScript and ours / eager, and marks
networks where ours is slower than TorchScript.
"""
import argparse
import json
import random
import sys

import torch
from torch import nn

import static_runtime
from static_runtime import bench

ACTIVATIONS = (nn.ReLU, nn.SiLU, nn.Hardswish, nn.GELU, lambda: nn.LeakyReLU(0.1), nn.Identity)
CHANNELS = (3, 5, 8, 10, 12, 16, 20, 24, 36, 40, 48, 64, 72, 100)


class Bottleneck(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        inner = max(1, channels // 4)
        self.reduce = nn.Conv2d(channels, inner, 1)
        self.middle = nn.Conv2d(inner, inner, 3, 1, 1)
        self.restore = nn.Conv2d(inner, channels, 1)

    def forward(self, x):
        y = torch.relu(self.middle(torch.relu(self.reduce(x))))
        return torch.relu(self.restore(y) + x)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.squeeze = nn.Conv2d(channels, max(1, channels // 4), 1)
        self.excite = nn.Conv2d(max(1, channels // 4), channels, 1)

    def forward(self, x):
        scale = self.excite(torch.relu(self.squeeze(x.mean((2, 3), keepdim=True))))
        return x * torch.sigmoid(scale)


def random_block(rng: random.Random, channels: int):
    """One block and its output channels."""
    kind = rng.choice(("conv", "depthwise", "multiplier", "grouped", "dilated", "bottleneck",
                       "squeeze_excitation", "pool"))
    out = rng.choice(CHANNELS)
    if kind == "conv":
        kernel = rng.choice((1, 3, 5, 7))
        return nn.Sequential(nn.Conv2d(channels, out, kernel, rng.choice((1, 1, 2)), kernel // 2),
                             nn.BatchNorm2d(out), rng.choice(ACTIVATIONS)()), out
    if kind == "depthwise":
        return nn.Sequential(nn.Conv2d(channels, channels, 3, rng.choice((1, 2)), 1,
                                       groups=channels), nn.ReLU6()), channels
    if kind == "multiplier":
        return nn.Sequential(nn.Conv2d(channels, 2 * channels, 3, 1, 1, groups=channels),
                             nn.ReLU()), 2 * channels
    if kind == "grouped":
        groups = rng.choice([g for g in (2, 3, 4, 5, 8) if channels % g == 0] or [1])
        out = groups * max(1, out // groups)
        return nn.Sequential(nn.Conv2d(channels, out, 3, 1, 1, groups=groups), nn.ReLU()), out
    if kind == "dilated":
        dilation = rng.choice((2, 3, 4))
        return nn.Sequential(nn.Conv2d(channels, out, 3, 1, dilation, dilation=dilation),
                             nn.ReLU()), out
    if kind == "bottleneck":
        return Bottleneck(channels), channels
    if kind == "squeeze_excitation":
        return SqueezeExcitation(channels), channels
    return rng.choice((nn.MaxPool2d(2), nn.AvgPool2d(3, 1, 1), nn.Identity())), channels


def random_network(rng: random.Random):
    """A network, its input and a second input of another shape."""
    channels = rng.choice((1, 3, 4, 8, 16))
    blocks = []
    current = channels
    for _ in range(rng.randint(3, 8)):
        block, current = random_block(rng, current)
        blocks.append(block)
    model = nn.Sequential(*blocks).eval()
    with torch.no_grad():
        for norm in model.modules():
            if isinstance(norm, nn.BatchNorm2d):
                norm.running_mean.uniform_(-0.2, 0.2)
                norm.running_var.uniform_(0.5, 2.0)
    side = rng.choice((32, 56, 64, 80))
    x = torch.randn(rng.choice((1, 2)), channels, side, side)
    other = torch.randn(1, channels, side // 2 + 3, side // 2 + 1)
    return model, x, other


def describe(model: nn.Module) -> str:
    parts = []
    for block in model:
        if isinstance(block, nn.Sequential):
            conv = block[0]
            text = f"conv{conv.kernel_size[0]} {conv.in_channels}->{conv.out_channels}"
            if conv.groups > 1:
                text += f" g{conv.groups}"
            if conv.stride[0] > 1:
                text += f" s{conv.stride[0]}"
            if conv.dilation[0] > 1:
                text += f" d{conv.dilation[0]}"
            parts.append(text)
        else:
            parts.append(type(block).__name__)
    return ", ".join(parts)


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return ((actual - expected).abs().max() / expected.abs().max().clamp_min(1e-30)).item()


def check(model: nn.Module, inputs) -> float:
    """Ours against eager on each input, each runtime called twice; the worst relative error."""
    ours = static_runtime.StaticModule(torch.jit.script(model))
    worst = 0.0
    for x in inputs:
        with torch.no_grad():
            expected = model(x)
        for _ in range(2):
            worst = max(worst, relative_error(ours(x), expected))
    stats = ours.stats()
    if stats["fallback_nodes"]:
        print(f"  fallbacks: {stats['fallback_ops']}")
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="also write every network's timings here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    results = []
    print(f"seed {args.seed}, 1 thread; ours / TorchScript (frozen) and ours / eager, medians")
    for index in range(args.count):
        model, x, other = random_network(rng)
        error = check(model, (x, other))
        timed = bench.compare(model, (x,), threads=(1,), rounds=args.rounds, warmup=5,
                              onnxruntime=False, name=f"network {index}")
        medians = {row["runtime"]: row["median_us"] for row in timed["rows"]}
        vs_torchscript = medians["ours"] / medians["torchscript"]
        vs_eager = medians["ours"] / medians["eager"]
        mark = "  <- slower than TorchScript" if vs_torchscript > 1.0 else ""
        print(f"{index:3d} ours {medians['ours']:9.1f} us  / TorchScript {vs_torchscript:4.2f}  "
              f"/ eager {vs_eager:4.2f}  error {error:.1e}  input {list(x.shape)}: "
              f"{describe(model)}{mark}", flush=True)
        results.append({"network": describe(model), "input": list(x.shape), "error": error,
                        "timing": timed})
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)
    worst = max(r["error"] for r in results)
    print(f"worst relative error {worst:.1e}")
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
