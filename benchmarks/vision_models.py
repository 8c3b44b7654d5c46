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
Linear 64->10) on Bx3x64x64, for each B in --batches (default 1,8). Random weights, BatchNorm
statistics calibrated (see calibrate()). Every model and batch goes through
static_runtime.bench.compare at each of --threads (default 1,2): outputs checked against
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
import ctypes
import gc
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("SRT_PYTHONPATH", os.path.join(ROOT, "build", "python")))

import torch  # noqa: E402
import torchvision  # noqa: E402
from torch import nn  # noqa: E402

import static_runtime  # noqa: E402
from static_runtime import bench, ort  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "results")
TORCHVISION_MODELS = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0")
MODELS = TORCHVISION_MODELS + ("small_cnn",)
MEMORY_MODELS = ("resnet18", "efficientnet_b0")
MEMORY_RUNTIMES = ("eager", "ours", "onnxruntime")
MEMORY_CALLS = 10
# Table columns: bench runtime key -> header.
COLUMNS = [("eager", "eager"), ("torchscript", "TorchScript"),
           ("optimize_for_inference", "optimize_for_inference"), ("pytorch_sr", "PyTorch SR"),
           ("onnxruntime", "ORT"), ("ours", "ours")]


def _load_run_all():
    """benchmarks/run_all as a module, for its time format (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("run_all", os.path.join(ROOT, "benchmarks",
                                                                          "run_all"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("run_all", loader))
    loader.exec_module(module)
    return module


format_time = _load_run_all().format_time


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


def calibrate(model: nn.Module, size: int) -> nn.Module:
    """Sets every BatchNorm's running statistics to those of one random batch. With torchvision's
    fresh ones (mean 0, variance 1) activations shrink layer by layer: mobilenet_v2's logits come
    out near 1e-9, and the output check each runtime must pass (atol 1e-4) would accept anything."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [m.momentum for m in norms]
    for norm in norms:
        norm.momentum = 1.0  # running statistics := this batch's
    model.train()
    with torch.no_grad():
        model(torch.randn(8, 3, size, size))
    for norm, momentum in zip(norms, saved):
        norm.momentum = momentum
    return model.eval()


def _size(name: str) -> int:
    return 64 if name == "small_cnn" else 224


def make(name: str, batch: int):
    """(description, eval-mode module, inputs), the same for a given name and batch."""
    torch.manual_seed(0)
    size = _size(name)
    model = SmallCNN() if name == "small_cnn" else getattr(torchvision.models, name)()
    model = calibrate(model, size)
    return f"{name}, {batch}×3×{size}×{size}", model, (torch.randn(batch, 3, size, size),)


def _cpu_seconds():
    """(CPU seconds the machine was busy, CPU seconds this process and its finished children
    used) so far."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:9]]  # user .. steal
    busy = sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait
    times = os.times()
    return (busy / os.sysconf("SC_CLK_TCK"),
            times.user + times.system + times.children_user + times.children_system)


def _others_busy(since) -> float:
    """Share of the machine other processes used since `since` (a (wall, _cpu_seconds()) pair).
    At 2 threads on 2 cores, a compiler on one core makes every OpenMP barrier wait for a
    descheduled thread: figures measured next to it say nothing about the runtimes."""
    wall, (busy, own) = since
    busy_now, own_now = _cpu_seconds()
    elapsed = (time.monotonic() - wall) * os.cpu_count()
    return max(0.0, ((busy_now - busy) - (own_now - own)) / elapsed) if elapsed > 0 else 0.0


def wait_until_idle(seconds: float, limit: float = 1800) -> None:
    """Waits (at most `limit` s) until other processes used under 10% of the machine for
    `seconds` in a row."""
    deadline, quiet_since = time.monotonic() + limit, time.monotonic()
    while time.monotonic() - quiet_since < seconds and time.monotonic() < deadline:
        window = (time.monotonic(), _cpu_seconds())
        time.sleep(min(5, seconds))
        if _others_busy(window) >= 0.1:
            quiet_since = time.monotonic()


def measure(args) -> list:
    """Every model and batch through bench.compare in this process, OMP_WAIT_POLICY as found."""
    runs = []
    for name in args.models:
        for batch in args.batches:
            if args.wait_idle:
                wait_until_idle(args.wait_idle)
            description, model, inputs = make(name, batch)
            start = (time.monotonic(), _cpu_seconds())
            result = bench.compare(model, inputs, threads=args.threads, rounds=args.rounds,
                                   warmup=args.warmup, onnxruntime=not args.no_onnxruntime,
                                   name=f"{name} batch {batch}")
            result["versions"]["torchvision"] = torchvision.__version__
            result["others_busy"] = round(_others_busy(start), 3)
            print(bench.format_table(result) + f"\n# other processes used "
                  f"{result['others_busy']:.0%} of the machine meanwhile\n", flush=True)
            runs.append({"model": name, "batch": batch, "description": description,
                         "result": result})
    return runs


def measure_passive(args) -> list:
    """measure() in a child process started with OMP_WAIT_POLICY=PASSIVE, threads above 1."""
    threads = [count for count in args.threads if count > 1]
    if not threads:
        return []
    with tempfile.TemporaryDirectory(prefix="srt_vision_") as directory:
        path = os.path.join(directory, "passive.json")
        command = [sys.executable, os.path.abspath(__file__), "--measure-only", path,
                   "--models", ",".join(args.models),
                   "--batches", ",".join(map(str, args.batches)),
                   "--threads", ",".join(map(str, threads)),
                   "--rounds", str(args.rounds), "--warmup", str(args.warmup),
                   "--wait-idle", str(args.wait_idle)]
        command += ["--no-onnxruntime"] if args.no_onnxruntime else []
        subprocess.run(command, env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"), check=True)
        with open(path) as saved:
            return json.load(saved)


def _status_bytes(key: str) -> int:
    """A /proc/self/status figure (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_peak() -> None:
    """Resets VmHWM to the current RSS (Linux >= 4.0), so the peak is that of what follows and
    not of the build (scripting and freezing can take more than a call)."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def memory_worker(runtime: str, name: str, batch: int, path: str) -> None:
    """In a fresh process: loads `name` from `path` on `runtime` as a deployment would (eager: the
    pickled module, torch.load; ours: the TorchScript archive, StaticModule(path); ONNX Runtime
    reads its .onnx file alike), and prints the RSS figures as one JSON line."""
    torch.set_num_threads(1)
    bench.openblas_threads(1)
    inputs = (torch.randn(batch, 3, _size(name), _size(name)),)
    before = _status_bytes("VmRSS")
    stats = {}
    if runtime == "eager":
        model = torch.load(path)

        def call(*args):
            with torch.no_grad():
                return model(*args)
    else:
        module = static_runtime.StaticModule(path)
        call = module
    # Loading frees temporaries into glibc's heap, where the calls would find them without
    # growing RSS: collect, then hand them back, for every runtime alike.
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    built = _status_bytes("VmRSS")
    _reset_peak()
    for _ in range(MEMORY_CALLS):
        call(*inputs)
    if runtime == "ours":
        stats = {"arena_bytes": module.stats()["managed_bytes"]}
    print(json.dumps(dict(before=before, built=built, peak=_status_bytes("VmHWM"), **stats)))


def save_for_memory(name: str, batch: int, directory: str) -> dict:
    """The model's files the memory workers load: {runtime: path}."""
    _, model, _ = make(name, batch)
    paths = {"eager": os.path.join(directory, "eager.pt"),
             "ours": os.path.join(directory, "scripted.pt")}
    torch.save(model, paths["eager"])
    torch.jit.save(torch.jit.script(model), paths["ours"])
    return paths


# The same figures for ONNX Runtime in a fresh node process: the session options of
# ort_runner.js at one thread. argv: onnxruntime-node directory, the Exported config, calls.
NODE_MEMORY = r"""
const fs = require('fs');
const [ortPath, configPath, calls] = process.argv.slice(1);
const ort = require(ortPath);
const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));
const status = (key) => 1024 * Number(
    fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(key + ':\\s+(\\d+)'))[1]);
(async () => {
  const feeds = {};
  for (const spec of config.inputs) {
    const bytes = fs.readFileSync(spec.file);
    const data = new Float32Array(bytes.byteLength / 4);
    new Uint8Array(data.buffer).set(bytes);
    feeds[spec.name] = new ort.Tensor('float32', data, spec.dims);
  }
  const before = status('VmRSS');
  const session = await ort.InferenceSession.create(config.model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', executionMode: 'sequential',
    intraOpNumThreads: 1, interOpNumThreads: 1});
  const built = status('VmRSS');
  fs.writeFileSync('/proc/self/clear_refs', '5');
  for (let i = 0; i < Number(calls); ++i) await session.run(feeds);
  console.log(JSON.stringify({before, built, peak: status('VmHWM')}));
})().catch((error) => { console.log(JSON.stringify({error: String(error)})); process.exit(1); });
"""


def memory_onnxruntime(name: str, batch: int) -> dict:
    _, model, inputs = make(name, batch)
    exported = ort.Exported(model, inputs)  # raises ort.Unavailable with the reason
    try:
        package = os.path.join(os.path.dirname(exported.runner), "node_modules",
                               "onnxruntime-node")
        config = os.path.join(exported.directory, "memory.json")
        with open(config, "w") as out:
            json.dump(exported.config, out)
        output = subprocess.run([exported.node, "-e", NODE_MEMORY, package, config,
                                 str(MEMORY_CALLS)], capture_output=True, text=True).stdout
    finally:
        exported.cleanup()
    return json.loads(output.strip().splitlines()[-1])


def _memory_figures(runtime: str, name: str, batch: int, path: str) -> dict:
    """One runtime's figures from its own fresh process."""
    if runtime == "onnxruntime":
        return memory_onnxruntime(name, batch)
    command = [sys.executable, os.path.abspath(__file__), "--memory-worker", runtime, name,
               str(batch), path]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"worker exited with {done.returncode}: "
                           + (done.stderr.strip().splitlines() or [""])[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_memory(args) -> list:
    rows = []
    runtimes = [runtime for runtime in MEMORY_RUNTIMES
                if not (runtime == "onnxruntime" and args.no_onnxruntime)]
    for name in [model for model in MEMORY_MODELS if model in args.models]:
        for batch in args.batches:
            with tempfile.TemporaryDirectory() as directory:
                paths = save_for_memory(name, batch, directory)
                for runtime in runtimes:
                    try:
                        figures = _memory_figures(runtime, name, batch, paths.get(runtime, ""))
                    except (ort.Unavailable, RuntimeError, ValueError, IndexError) as error:
                        figures = {"error": str(error).splitlines()[0]}
                    row = dict(model=name, batch=batch, runtime=runtime, **figures)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    return rows


def _ratio(numerator, denominator) -> str:
    if numerator is None or denominator is None or numerator <= 0 or denominator <= 0:
        return "–"
    return f"{numerator / denominator:.2f}"


def _sections(runs):
    """(wait policy, threads) in the order measured."""
    seen = []
    for run in runs:
        policy = run["result"]["environment"].get("OMP_WAIT_POLICY", "(unset)")
        for count in run["result"]["threads"]:
            if (policy, count) not in seen:
                seen.append((policy, count))
    return seen


def _medians(run, policy, threads):
    """runtime -> median µs of one run at one configuration, or None when not that one."""
    if run["result"]["environment"].get("OMP_WAIT_POLICY", "(unset)") != policy:
        return None
    rows = [row for row in run["result"]["rows"] if row["threads"] == threads]
    return {row["runtime"]: row["median_us"] for row in rows} if rows else None


def markdown(data) -> str:
    runs = data["runs"]
    first = runs[0]["result"]
    machine, versions = first["machine"], first["versions"]
    ort_version = next((r["result"]["versions"]["onnxruntime"] for r in runs
                        if r["result"]["versions"]["onnxruntime"]), None)
    loads = [r["result"]["machine"]["load_average_1min"] for r in runs]
    env = ", ".join(f"`{k}={v}`" for k, v in first["environment"].items()
                    if k != "OMP_WAIT_POLICY")
    openblas = ("OpenBLAS's pool (openblas_set_num_threads), "
                if first.get("openblas_threads_set") else "")
    lines = [
        f"Produced by `benchmarks/vision_models.py` on {first['date']}: {machine['cpu']}, "
        f"{machine['cores']} cores, load average {min(loads):.1f}–{max(loads):.1f} while it ran; "
        f"torch {versions['torch']}, torchvision {versions.get('torchvision', '?')}, ONNX Runtime "
        f"{ort_version or 'not available'} (onnxruntime-node), static_runtime "
        f"{versions['static_runtime']} with `gemm_backend={first['gemm_backend']}`; environment "
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
    header = (["model, input"] + [title for _, title in COLUMNS]
              + ["ours / ORT", "ours / optimize_for_inference", "others busy"])
    for policy, threads in _sections(runs):
        policy_text = " as found (unset)" if policy == "(unset)" else f"={policy}"
        lines += [f"**{threads} thread{'s' if threads > 1 else ''}, OMP_WAIT_POLICY"
                  f"{policy_text}**", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        for run in runs:
            medians = _medians(run, policy, threads)
            if medians is None:
                continue
            cells = [run["description"]] + [format_time(medians.get(key)) for key, _ in COLUMNS]
            cells += [_ratio(medians.get("ours"), medians.get("onnxruntime")),
                      _ratio(medians.get("ours"), medians.get("optimize_for_inference"))]
            others = run["result"].get("others_busy")
            cells.append(f"{others:.0%}" if others is not None else "–")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    skipped = sorted({f"{bench.LABELS[s['runtime']]} on {r['description']} at {s['threads']} "
                      f"thread(s): {s['reason']}" for r in runs for s in r["result"]["skipped"]})
    if skipped:
        lines += ["Not measured: " + "; ".join(skipped) + ".", ""]
    if data.get("memory"):
        lines += _memory_markdown(data["memory"])
    return "\n".join(lines)


def _memory_markdown(rows) -> list:
    mib = lambda value: f"{value / 2**20:.1f} MiB"  # noqa: E731
    lines = [f"**Memory** (1 thread, each runtime in a fresh process, {MEMORY_CALLS} calls). "
             "Each runtime loads the model from a file, as a deployment would: eager the pickled "
             "module (torch.load), ours the TorchScript archive (StaticModule(path)), ORT the "
             ".onnx export. RSS after build: the process's resident size once the model is ready to run "
             "(Python + torch for eager and ours, node + ONNX Runtime for ORT, hence compare "
             "the growths); build growth: that minus the RSS just before building; peak growth: "
             "the high-water mark during the calls minus the RSS after build (activations, "
             "arenas, workspace; memory the allocator kept from the build can absorb part of "
             "it); while running: that high-water mark minus the RSS before building, the "
             "model's whole cost.", "",
             "| model, input | runtime | RSS after build | build growth | peak growth during "
             "calls | while running | ours' arena |", "|---|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        where = f"{row['model']}, {row['batch']}×3×224×224"
        if "error" in row:
            lines.append(f"| {where} | {row['runtime']} | failed: {row['error']} | | | | |")
            continue
        arena = mib(row["arena_bytes"]) if "arena_bytes" in row else "–"
        lines.append(f"| {where} | {row['runtime']} | {mib(row['built'])} | "
                     f"{mib(row['built'] - row['before'])} | {mib(row['peak'] - row['built'])} | "
                     f"{mib(row['peak'] - row['before'])} | {arena} |")
    return lines + [""]


def plot(data, path: str) -> None:
    """One panel per (wait policy, threads): ours, ORT and optimize_for_inference per model and
    batch as time / ORT's, the 0.9 target drawn."""
    from static_runtime.plots import _pyplot

    plt = _pyplot()
    sections = _sections(data["runs"])
    shown = [("ours", "ours", "tab:red"), ("onnxruntime", "ONNX Runtime", "tab:blue"),
             ("optimize_for_inference", "TorchScript optimize_for_inference", "tab:gray")]
    figure, panels = plt.subplots(len(sections), 1, squeeze=False,
                                  figsize=(max(8, 0.9 * len(data["runs"])), 3.2 * len(sections)))
    for panel, (policy, threads) in zip(panels[:, 0], sections):
        labels, bars = [], {key: [] for key, _, _ in shown}
        for run in data["runs"]:
            medians = _medians(run, policy, threads)
            if not medians or (medians.get("onnxruntime") or 0) <= 0:
                continue  # nothing to normalize by
            labels.append(f"{run['model']}\nbatch {run['batch']}")
            for key in bars:
                bars[key].append(medians[key] / medians["onnxruntime"] if key in medians else 0)
        width = 0.8 / len(shown)
        for index, (key, label, color) in enumerate(shown):
            xs = [x + (index - 1) * width for x in range(len(labels))]
            drawn = panel.bar(xs, bars[key], width, label=label, color=color)
            for bar, ratio in zip(drawn, bars[key]):
                if key != "onnxruntime":  # ORT is 1 by construction
                    panel.annotate(f"{ratio:.2f}" if ratio else "not run",
                                   (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                   ha="center", va="bottom", fontsize=7)
        panel.axhline(0.9, color="black", linestyle="--", linewidth=0.8, label="target 0.9")
        panel.set_xticks(range(len(labels)))
        panel.set_xticklabels(labels, fontsize=7)
        panel.set_ylabel("time / ONNX Runtime's")
        policy_text = "as found" if policy == "(unset)" else policy
        panel.set_title(f"{threads} thread{'s' if threads > 1 else ''}, OMP_WAIT_POLICY "
                        f"{policy_text} (below 1: faster than ONNX Runtime)", fontsize=9)
        panel.legend(fontsize=7)
    first = data["runs"][0]["result"]
    figure.suptitle(f"benchmarks/vision_models.py, {first['date']}, {first['machine']['cpu']}",
                    fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _list(text: str, kind=str) -> list:
    return [kind(item) for item in text.split(",") if item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {','.join(MODELS)} (default all)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--wait-policy", choices=("both", "default", "passive"), default="both",
                        help="OMP_WAIT_POLICY as found, PASSIVE (child process), or both")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3,
                        help="calls per runtime before timing (ONNX Runtime's runner does 20)")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                        help="before each model and batch, wait until other processes used "
                        "under 10%% of the CPUs for this long (a shared machine)")
    parser.add_argument("--memory", action="store_true",
                        help="also the RSS figures of resnet18 and efficientnet_b0")
    parser.add_argument("--no-onnxruntime", action="store_true")
    parser.add_argument("--json", default=os.path.join(RESULTS, "vision_models.json"))
    parser.add_argument("--plot", default=os.path.join(RESULTS, "vision_models.png"))
    parser.add_argument("--from-json", metavar="FILE", help="measure nothing: redraw from FILE")
    parser.add_argument("--measure-only", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--memory-worker", nargs=4, metavar=("RUNTIME", "MODEL", "BATCH", "PATH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_worker:
        runtime, name, batch, path = args.memory_worker
        memory_worker(runtime, name, int(batch), path)
        return
    args.models, args.batches = _list(args.models), _list(args.batches, int)
    args.threads = _list(args.threads, int)
    unknown = set(args.models) - set(MODELS)
    if unknown:
        parser.error(f"unknown model(s) {sorted(unknown)}; expected some of {list(MODELS)}")
    if args.measure_only:
        with open(args.measure_only, "w") as out:
            json.dump(measure(args), out)
        return

    if args.from_json:
        with open(args.from_json) as saved:
            data = json.load(saved)
    else:
        start = time.time()
        runs = measure(args) if args.wait_policy in ("both", "default") else []
        runs += measure_passive(args) if args.wait_policy in ("both", "passive") else []
        data = {"command": sys.argv, "runs": runs,
                "memory": measure_memory(args) if args.memory else [],
                "seconds": round(time.time() - start)}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as out:
            json.dump(data, out, indent=1)
        print(f"wrote {args.json} ({data['seconds']} s)")
    print(markdown(data))
    if args.plot and data["runs"]:
        try:
            plot(data, args.plot)
            print(f"wrote {args.plot}")
        except SystemExit as missing:  # matplotlib absent: the table stands alone
            print(missing)


if __name__ == "__main__":
    main()
