#!/usr/bin/python3
"""torchvision convolution networks on every runtime, side by side: eager, TorchScript (frozen),
optimize_for_inference, PyTorch's Static Runtime, ONNX Runtime CPU and ours.

Usage (from the repository root, after the build; for ONNX Runtime, once:
`cd benchmarks && npm install --ignore-scripts`):

    /usr/bin/python3 benchmarks/vision_models.py [--memory]     # everything, see below
    /usr/bin/python3 benchmarks/vision_models.py --models resnet18,small_cnn --batches 1 \\
        --threads 1 --wait-policy default --rounds 5             # a subset
    /usr/bin/python3 benchmarks/vision_models.py --from-json benchmarks/results/vision_models.json
                                                                 # redraw table and chart only

Models: resnet18, mobilenet_v2, mobilenet_v3_small, efficientnet_b0 on Bx3x224x224, and the
issue's small CNN (3 x conv3x3 + ReLU, 3->16->32->64 channels, strides 1, 2, 2; average pool;
Linear 64->10) on Bx3x64x64, for each B in --batches (default 1,8). --models also takes any other
torchvision classification network by its builder's name (densenet121, squeezenet1_1,
shufflenet_v2_x1_0, googlenet and inception_v3 without their auxiliary heads, ...), on
Bx3x224x224, and the real-model suite's image-to-image networks (test/models/real_models.py) at
their examples' width: unet (width 32, two levels) and style_transfer on Bx3x128x128, espcn on
Bx1x128x128,
dcgan_generator (the DCGAN tutorial's, 64x64 images) on a Bx100x1x1 latent. Random weights, BatchNorm
statistics calibrated (static_runtime.bench.calibrate_batch_norm). Every model and batch goes
through static_runtime.bench.compare at each of --threads (default 1,2): outputs checked against
TorchScript's, then medians over interleaved rounds, ONNX Runtime net of its node binding's
per-call cost. Each thread count is given alike to torch, OpenBLAS's pool, ours
(intra_op_threads) and ONNX Runtime (intraOpNumThreads).

--wait-policy both (default) measures once with OMP_WAIT_POLICY as found and once more, at the
thread counts above 1, in a child process started with OMP_WAIT_POLICY=PASSIVE: libgomp reads
the variable once, at start-up, and one thread has no team to wait for.

--memory adds, for resnet18 and efficientnet_b0 at 1 thread, each runtime (eager, ours, ONNX
Runtime) in a fresh process: resident size after building the model, and peak RSS growth during
the calls over it (the high-water mark is reset after the build).

Writes all samples to --json (default benchmarks/results/vision_models.json), a chart of ours,
ONNX Runtime and optimize_for_inference relative to ONNX Runtime to --plot (default
benchmarks/results/vision_models.png), and prints the markdown table the README quotes.
"""
import argparse
import pathlib
import sys
import tempfile

import side_by_side as common  # first: it puts the static_runtime build on sys.path

import torch  # noqa: E402
import torchvision  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "test" / "models"))
import real_models  # noqa: E402

TORCHVISION_MODELS = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0")
# The real-model suite's image-to-image networks, built as wide as their examples, and the shape
# of one input (an image, or DCGAN's latent).
SUITE_MODELS = {
    "unet": (lambda: real_models.UNet(width=32), (3, 128, 128)),
    "espcn": (real_models.SuperResolution, (1, 128, 128)),
    "style_transfer": (real_models.StyleTransfer, (3, 128, 128)),
    "dcgan_generator": (real_models.DcganGenerator, (100, 1, 1)),
}
MODELS = TORCHVISION_MODELS + ("small_cnn",)
# Networks whose builders add auxiliary classifiers to their training outputs.
WITHOUT_AUXILIARY_HEADS = ("googlenet", "inception_v3")
MEMORY_MODELS = ("resnet18", "efficientnet_b0")
MEMORY_RUNTIMES = ("eager", "ours", "onnxruntime")
MEMORY_CALLS = 10


class SmallCNN(nn.Module):
    """The issue's small CNN: three conv3x3 + ReLU (3->16->32->64, strides 1, 2, 2), average
    pool, Linear 64->10."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=1, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


def _size(name: str) -> int:
    return 64 if name == "small_cnn" else 224


def make(name: str, batch: int):
    """(description, eval-mode module, inputs), the same for a given name and batch."""
    torch.manual_seed(0)
    if name in SUITE_MODELS:
        build, shape = SUITE_MODELS[name]
        model = common.bench.calibrate_batch_norm(build().eval(), torch.randn(8, *shape))
        dims = "×".join(map(str, (batch,) + shape))
        return f"{name}, {dims}", model, (torch.randn(batch, *shape),)
    size = _size(name)
    if name == "small_cnn":
        model = SmallCNN()
    elif name in WITHOUT_AUXILIARY_HEADS:
        model = getattr(torchvision.models, name)(aux_logits=False, init_weights=True)
    else:
        model = getattr(torchvision.models, name)()
    model = common.bench.calibrate_batch_norm(model, torch.randn(8, 3, size, size))
    return f"{name}, {batch}×3×{size}×{size}", model, (torch.randn(batch, 3, size, size),)


def measure(args) -> list:
    """Every model and batch through bench.compare in this process, OMP_WAIT_POLICY as found."""
    runs = []
    for name in args.models:
        for batch in args.batches:
            description, model, inputs = make(name, batch)
            result = common.compare(model, inputs, args, f"{name} batch {batch}",
                                    {"torchvision": torchvision.__version__})
            runs.append({"model": name, "batch": batch, "description": description,
                         "result": result})
    return runs


def measure_passive(args) -> list:
    """measure() in a child process started with OMP_WAIT_POLICY=PASSIVE, threads above 1."""
    return common.measure_passive(__file__, args,
                                  ["--batches", ",".join(map(str, args.batches))])


def _memory_figures(runtime: str, name: str, batch: int, paths: dict) -> dict:
    """One runtime's figures from its own fresh process."""
    if runtime == "onnxruntime":
        _, model, inputs = make(name, batch)
        return common.memory_onnxruntime(model, inputs, MEMORY_CALLS)
    return common.memory_in_worker(runtime, paths, MEMORY_CALLS)


def measure_memory(args) -> list:
    rows = []
    runtimes = [runtime for runtime in MEMORY_RUNTIMES
                if not (runtime == "onnxruntime" and args.no_onnxruntime)]
    for name in [model for model in MEMORY_MODELS if model in args.models]:
        for batch in args.batches:
            with tempfile.TemporaryDirectory() as directory:
                _, model, inputs = make(name, batch)
                paths = common.save_for_memory(model, inputs, directory, runtimes)
                for runtime in runtimes:
                    rows.append(common.memory_row(
                        lambda: _memory_figures(runtime, name, batch, paths),
                        model=name, batch=batch, runtime=runtime))
    return rows


def markdown(data) -> str:
    runs = data["runs"]
    first = runs[0]["result"]
    machine = first["machine"]
    loads = [r["result"]["machine"]["load_average_1min"] for r in runs]
    env = ", ".join(f"`{k}={v}`" for k, v in first["environment"].items()
                    if k != "OMP_WAIT_POLICY")
    openblas = ("OpenBLAS's pool (openblas_set_num_threads), "
                if first.get("openblas_threads_set") else "")
    lines = [
        f"Produced by `benchmarks/vision_models.py` on {first['date']}: {machine['cpu']}, "
        f"{machine['cores']} cores, load average {min(loads):.1f}–{max(loads):.1f} while it ran; "
        f"{common.versions_text(runs)} with `gemm_backend={first['gemm_backend']}`; environment "
        f"as found: {env}. Each thread count is given to torch.set_num_threads, {openblas}ours "
        "(RuntimePool intra_op_threads) and ONNX Runtime (intraOpNumThreads, interOpNumThreads "
        f"1). Median time per call over {first['method']['rounds']} interleaved rounds, through "
        "each runtime's Python (ORT: node) API, ORT's per-call binding cost subtracted; random "
        "weights, BatchNorm statistics calibrated. **ours / ORT** and **ours / "
        "optimize_for_inference**: ours' time divided by theirs (below 1: ours is faster; the "
        "target is ours / ORT ≤ 0.9). **others busy**: the share of the CPUs other processes "
        "used while that row was measured (above a few %, distrust the 2-thread figures). Full "
        "samples: `benchmarks/results/vision_models.json`.",
        "",
    ]
    lines += common.timing_tables(runs)
    if data.get("memory"):
        lines += _memory_markdown(data["memory"])
    return "\n".join(lines)


def _memory_markdown(rows) -> list:
    lines = [f"**Memory** (1 thread, each runtime in a fresh process, {MEMORY_CALLS} calls). "
             "Each runtime loads the model from a file, as a deployment would: eager the pickled "
             "module (torch.load), ours the TorchScript archive (StaticModule(path)), ORT the "
             ".onnx export. RSS after build: the process's resident size once the model is ready to run "
             "(each process imports what its deployment needs before building: Python + torch + "
             "torchvision, which eager's pickle names, for eager; Python + torch + "
             "static_runtime for ours; node + ONNX Runtime for ORT, hence compare the growths "
             "across those); build growth: that minus the RSS just before building (anonymous: "
             "of which the process's own memory, i.e. weights and heap, without the pages of "
             "shared libraries the build ran for the first time); peak growth: "
             "the high-water mark during the calls minus the RSS after build (activations, "
             "arenas, workspace; memory the allocator kept from the build can absorb part of "
             "it); while running: that high-water mark minus the RSS before building, the "
             "model's whole cost.", "",
             "| model, input | runtime | RSS after build | build growth | build growth, anonymous "
             "| peak growth during calls | while running | ours' arena |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        where = f"{row['model']}, {row['batch']}×3×224×224"
        if "error" in row:
            lines.append(f"| {where} | {row['runtime']} | failed: {row['error']} | | | | | |")
            continue
        arena = common.mib(row["arena_bytes"]) if "arena_bytes" in row else "–"
        anon = common.mib(row["built_anon_growth"]) if "built_anon_growth" in row else "–"
        lines.append(f"| {where} | {row['runtime']} | {common.mib(row['built'])} | "
                     f"{common.mib(row['built'] - row['before'])} | {anon} | "
                     f"{common.mib(row['peak'] - row['built'])} | "
                     f"{common.mib(row['peak'] - row['before'])} | {arena} |")
    return lines + [""]


def plot(data, path: str) -> None:
    """One panel per (wait policy, threads): ours, ORT and optimize_for_inference per model and
    batch as time / ORT's, the 0.9 target drawn."""
    common.plot(data, path, "vision_models.py",
                lambda run: f"{run['model']}\nbatch {run['batch']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_model_argument(parser, MODELS)
    parser.add_argument("--batches", default="1,8")
    common.add_run_arguments(parser, "vision_models",
                             "also the RSS figures of resnet18 and efficientnet_b0")
    args = parser.parse_args()
    args.models = common.parse_list(args.models)
    args.batches = common.parse_list(args.batches, int)
    args.threads = common.parse_list(args.threads, int)
    unknown = (set(args.models) - set(MODELS) - set(SUITE_MODELS) -
               set(torchvision.models.list_models(module=torchvision.models)))
    if unknown:
        parser.error(f"unknown model(s) {sorted(unknown)}; expected some of {list(MODELS)}, "
                     f"{list(SUITE_MODELS)} or another torchvision classification network's "
                     "builder name")
    common.run(args, measure, measure_passive, measure_memory, markdown, plot)


if __name__ == "__main__":
    main()
