"""What each optimization pass buys: latency with all passes on, with each pass off in turn, and
with none, on the zoo's MLP, transformer block and DeepAndWide, measured side by side in one process.

Usage (from the repository root, after the build):
    /usr/bin/python3 benchmarks/pass_ablation.py [--rounds 15] [--threads 1] [--json FILE]
                                                 [--workload mlp_b1 ...] [--pass NAME ...]

--pass limits the configurations to all passes on and the named ones off (one at a time).
torchvision networks (random weights) run when named: --workload efficientnet_b0_b1 (or _b8; also
mobilenet_v3_small, mobilenet_v3_large, mobilenet_v2, resnet18), e.g. `--workload
efficientnet_b0_b1 --pass conv_channel_scale`; with `_handwritten` before the batch
(`mobilenet_v3_small_handwritten_b1`) the network's SiLU, hardswish and hardsigmoid modules are
replaced by the arithmetic reimplementations write (x * torch.sigmoid(x), x * F.relu6(x + 3.) / 6.,
F.relu6(x + 3.) / 6.), what `--pass activation_idioms` is about; with `_frozen_bn`
(`resnet50_frozen_bn_b1`) its BatchNorms are torchvision's FrozenBatchNorm2d, as in torchvision's
detection backbones (`x * scale + shift`), what `--pass conv_affine_folding` is about.

Every configuration of one workload is built up front; then each round times a burst of calls to
every configuration in turn, so slow drift of the machine hits all of them alike. A row is the
median over rounds of the mean time per call in a burst; "vs all" is that median divided by the
all-passes median (above 1.00: switching the pass off costs time). "nodes" is the node count of
the optimized graph.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import torch  # noqa: E402

import static_runtime  # noqa: E402
import zoo  # noqa: E402


def workloads():
    """name -> (module factory, inputs): the shapes the [4/7] issue asks for."""
    torch.manual_seed(0)
    return {
        "mlp_b1": (zoo.MLP, (torch.randn(1, 64),)),
        "mlp_b64": (zoo.MLP, (torch.randn(64, 64),)),
        "transformer_b1_s16": (zoo.PreLNTransformerBlock, (torch.randn(1, 16, 64),)),
        "transformer_b8_s128": (zoo.PreLNTransformerBlock, (torch.randn(8, 128, 64),)),
        "deep_and_wide_b1": (
            zoo.DeepAndWide,
            (torch.randn(1, 1, 32), torch.randn(1, 1, 32), torch.randn(1, 50)),
        ),
        "deep_and_wide_b64": (
            zoo.DeepAndWide,
            (torch.randn(64, 1, 32), torch.randn(64, 1, 32), torch.randn(64, 50)),
        ),
    }


VISION_MODELS = ("efficientnet_b0", "mobilenet_v3_small", "mobilenet_v3_large", "mobilenet_v2",
                 "resnet18", "resnet50")
HANDWRITTEN = "_handwritten"
FROZEN_BN = "_frozen_bn"


class HandwrittenSiLU(torch.nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class HandwrittenHardswish(torch.nn.Module):
    def forward(self, x):
        return x * torch.nn.functional.relu6(x + 3.) / 6.


class HandwrittenHardsigmoid(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.relu6(x + 3.) / 6.


def with_handwritten_activations(module):
    """`module` with its SiLU, Hardswish and Hardsigmoid submodules replaced by the arithmetic."""
    replacements = {torch.nn.SiLU: HandwrittenSiLU, torch.nn.Hardswish: HandwrittenHardswish,
                    torch.nn.Hardsigmoid: HandwrittenHardsigmoid}
    for name, child in module.named_children():
        if type(child) in replacements:
            setattr(module, name, replacements[type(child)]())
        else:
            with_handwritten_activations(child)
    return module


def vision_workload(name):
    """(module factory, inputs) for '<torchvision model>[_handwritten|_frozen_bn]_b<batch>', or
    None."""
    model, _, batch = name.rpartition("_b")
    handwritten = model.endswith(HANDWRITTEN)
    frozen_bn = model.endswith(FROZEN_BN)
    model = model[:-len(HANDWRITTEN)] if handwritten else model
    model = model[:-len(FROZEN_BN)] if frozen_bn else model
    if model not in VISION_MODELS or not batch.isdigit():
        return None
    import torchvision
    from torchvision.ops.misc import FrozenBatchNorm2d

    torch.manual_seed(0)
    builder = getattr(torchvision.models, model)
    if handwritten:
        factory = lambda: with_handwritten_activations(builder())  # noqa: E731
    elif frozen_bn:
        factory = lambda: builder(norm_layer=FrozenBatchNorm2d)  # noqa: E731
    else:
        factory = builder
    return factory, (torch.randn(int(batch), 3, 224, 224),)


def configurations(passes=None):
    """(label, disabled passes): all on, each pass off in turn (those of `passes`, or every pass
    and then all of them off)."""
    names = static_runtime.pass_names()
    rows = [("all passes", [])]
    rows += [("- " + name, [name]) for name in (passes or names)]
    if not passes:
        rows.append(("no passes", list(names)))
    return rows


def burst_size(module, inputs, target_seconds=0.02):
    """Calls per burst so that one burst takes about target_seconds."""
    start = time.perf_counter()
    module(*inputs)
    elapsed = max(time.perf_counter() - start, 1e-6)
    return max(1, min(1000, int(target_seconds / elapsed)))


def measure(name, factory, inputs, rounds, passes=None):
    torch.manual_seed(0)
    scripted = torch.jit.script(factory().eval())
    with torch.no_grad():
        reference = scripted(*inputs)
    built = []
    for label, disabled in configurations(passes):
        module = static_runtime.StaticModule(scripted, disabled_passes=disabled)
        result = module(*inputs)
        # A benchmark of wrong answers measures nothing.
        torch.testing.assert_close(result, reference, rtol=1e-4, atol=1e-4)
        for _ in range(3):
            module(*inputs)
        built.append((label, module, burst_size(module, inputs)))
    samples = {label: [] for label, _, _ in built}
    for _ in range(rounds):
        for label, module, calls in built:
            start = time.perf_counter()
            for _ in range(calls):
                module(*inputs)
            samples[label].append((time.perf_counter() - start) / calls)
    rows = []
    for label, module, _ in built:
        rows.append({
            "workload": name,
            "config": label,
            "median_us": statistics.median(samples[label]) * 1e6,
            "nodes": module.stats()["nodes"],
        })
    baseline = rows[0]["median_us"]
    for row in rows:
        row["vs_all"] = row["median_us"] / baseline
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workload", action="append", help="run only these (repeatable)")
    parser.add_argument("--pass", dest="passes", action="append",
                        help="switch off only these passes, one at a time (repeatable)")
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    args = parser.parse_args()
    unknown = set(args.passes or []) - set(static_runtime.pass_names())
    if unknown:
        parser.error(f"unknown pass(es) {sorted(unknown)}; passes: {static_runtime.pass_names()}")
    torch.set_num_threads(args.threads)

    env = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    backend = static_runtime.StaticModule(torch.jit.script(zoo.MLP().eval())).options["gemm_backend"]
    print(f"# pass ablation: {time.strftime('%Y-%m-%d %H:%M')}, {args.threads} thread(s), "
          f"gemm_backend={backend}, " + ", ".join(f"{k}={v}" for k, v in env.items()))
    print(f"# median of {args.rounds} rounds; 'vs all' > 1.00 means the pass saves that much time")
    all_rows = []
    chosen = dict(workloads())
    for name in args.workload or []:
        if name not in chosen:
            vision = vision_workload(name)
            if vision is None:
                parser.error(f"unknown workload {name}")
            chosen[name] = vision
    for name, (factory, inputs) in chosen.items():
        if args.workload and name not in args.workload:
            continue
        rows = measure(name, factory, inputs, args.rounds, args.passes)
        all_rows += rows
        print(f"\n{name}")
        print(f"  {'configuration':<34} {'median':>11} {'vs all':>7} {'nodes':>6}")
        for row in rows:
            print(f"  {row['config']:<34} {row['median_us']:>9.1f}us {row['vs_all']:>7.2f} "
                  f"{row['nodes']:>6}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"threads": args.threads, "environment": env, "rows": all_rows}, out, indent=1)


if __name__ == "__main__":
    main()
