"""What the side-by-side model benchmarks (benchmarks/vision_models.py,
benchmarks/sequence_models.py) share: their common options, waiting for a quiet machine, the OMP_WAIT_POLICY=PASSIVE child
process, the per-runtime memory figures (benchmarks/memory_worker.py in fresh processes), and
the markdown tables and chart.

A script built on it supplies its models; everything else goes through run().
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("SRT_PYTHONPATH", os.path.join(ROOT, "build", "python")))

import torch  # noqa: E402

from static_runtime import bench, ort  # noqa: E402

import memory_worker  # noqa: E402 - benchmarks/memory_worker.py

RESULTS = os.path.join(ROOT, "benchmarks", "results")
# Table columns: bench runtime key -> header.
COLUMNS = [("eager", "eager"), ("torchscript", "TorchScript"),
           ("optimize_for_inference", "optimize_for_inference"), ("pytorch_sr", "PyTorch SR"),
           ("onnxruntime", "ORT"), ("ours", "ours"), ("ours_bf16", "ours bf16")]


# benchmarks/run_all has no .py suffix: loaded from its file and registered as `run_all`, so that
# its classes can be scripted (inspect finds their source) and pickled (torch.save).
run_all = memory_worker.import_module("run_all", os.path.join(ROOT, "benchmarks", "run_all"))
format_time = run_all.format_time


def set_threads(count: int) -> None:
    """`count` intra-op threads for torch and for OpenBLAS's pool, which torch's setting does not
    reach (see bench.openblas_threads)."""
    torch.set_num_threads(count)
    bench.openblas_threads(count)


# --- a quiet machine ---------------------------------------------------------------------------

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


# --- timing --------------------------------------------------------------------------------------

def compare(model, inputs, args, name: str, versions: dict) -> dict:
    """bench.compare with the command line's settings, OMP_WAIT_POLICY as found in this process;
    the result also says how busy other processes kept the machine, and is printed."""
    if args.wait_idle:
        wait_until_idle(args.wait_idle)
    start = (time.monotonic(), _cpu_seconds())
    result = bench.compare(model, inputs, threads=args.threads, rounds=args.rounds,
                           warmup=args.warmup, burst_seconds=args.burst_seconds,
                           onnxruntime=not args.no_onnxruntime, name=name, bf16=args.bf16)
    result["versions"].update(versions)
    result["others_busy"] = round(_others_busy(start), 3)
    print(bench.format_table(result) + f"\n# other processes used "
          f"{result['others_busy']:.0%} of the machine meanwhile\n", flush=True)
    return result


def measure_passive(script: str, args, extra_argv=()) -> list:
    """The script's measurement (its --measure-only) in a child process started with
    OMP_WAIT_POLICY=PASSIVE, at the thread counts above 1: libgomp reads the variable once, at
    start-up, and one thread has no team to wait for."""
    threads = [count for count in args.threads if count > 1]
    if not threads or not args.models:
        return []
    with tempfile.TemporaryDirectory(prefix="srt_side_by_side_") as directory:
        path = os.path.join(directory, "passive.json")
        command = [sys.executable, os.path.abspath(script), "--measure-only", path,
                   "--models", ",".join(args.models), *extra_argv,
                   "--threads", ",".join(map(str, threads)),
                   "--rounds", str(args.rounds), "--warmup", str(args.warmup),
                   "--burst-seconds", str(args.burst_seconds), "--wait-idle", str(args.wait_idle)]
        command += ["--no-onnxruntime"] if args.no_onnxruntime else []
        command += ["--bf16"] if args.bf16 else []
        subprocess.run(command, env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"), check=True)
        with open(path) as saved:
            return json.load(saved)


# --- memory, each runtime in a fresh process -----------------------------------------------------

def _pickled_module(model) -> str:
    """The --module argument of memory_worker.py that lets eager's worker unpickle `model`:
    NAME=FILE for a benchmark script's own module (not importable by name), the top-level package
    otherwise (torchvision.models.resnet -> torchvision)."""
    name = type(model).__module__
    if name == "__main__":
        raise ValueError(f"{type(model).__name__} is defined in __main__: a fresh process cannot "
                         "unpickle it; define it in a module")
    path = getattr(sys.modules[name], "__file__", None) or ""
    if os.path.dirname(os.path.abspath(path)) == os.path.join(ROOT, "benchmarks"):
        return f"{name}={path}"
    return name.split(".")[0]


def save_for_memory(model, inputs, directory: str, runtimes) -> dict:
    """What the memory workers load, as {runtime: model path, "inputs": path, "eager_module":
    memory_worker.py's --module for eager}."""
    paths = {"inputs": os.path.join(directory, "inputs.pt")}
    torch.save(tuple(inputs), paths["inputs"])
    if "eager" in runtimes:
        paths["eager"] = os.path.join(directory, "eager.pt")
        paths["eager_module"] = _pickled_module(model)
        torch.save(model, paths["eager"])
    if {"ours", "pytorch_sr"} & set(runtimes):
        scripted = os.path.join(directory, "scripted.pt")
        torch.jit.save(torch.jit.script(model), scripted)
        paths.update(ours=scripted, pytorch_sr=scripted)
    return paths


def memory_in_worker(runtime: str, paths: dict, calls: int, warmup: int = 0) -> dict:
    """The figures of benchmarks/memory_worker.py for `runtime`, from its own fresh process."""
    command = [sys.executable, os.path.join(ROOT, "benchmarks", "memory_worker.py"), runtime,
               paths[runtime], paths["inputs"], str(calls), str(warmup)]
    if runtime == "eager":
        command += ["--module", paths["eager_module"]]
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if done.returncode != 0:
        raise RuntimeError(f"worker exited with {done.returncode}: "
                           + (done.stderr.strip().splitlines() or [""])[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


# The same figures for ONNX Runtime in a fresh node process: the session options of
# ort_runner.js at one thread. argv: onnxruntime-node directory, the Exported config, calls,
# warm-up calls (optional, 0).
NODE_MEMORY = r"""
const fs = require('fs');
const [ortPath, configPath, calls, warmup] = process.argv.slice(1);
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
  const beforeAnon = status('RssAnon');
  const session = await ort.InferenceSession.create(config.model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', executionMode: 'sequential',
    intraOpNumThreads: 1, interOpNumThreads: 1});
  const built = status('VmRSS');
  const figures = {before, built, built_anon_growth: status('RssAnon') - beforeAnon};
  fs.writeFileSync('/proc/self/clear_refs', '5');
  if (Number(warmup || 0) > 0) {
    for (let i = 0; i < Number(warmup); ++i) await session.run(feeds);
    Object.assign(figures, {warm_peak: status('VmHWM'), warm: status('VmRSS')});
    fs.writeFileSync('/proc/self/clear_refs', '5');
  }
  for (let i = 0; i < Number(calls); ++i) await session.run(feeds);
  figures.peak = status('VmHWM');
  console.log(JSON.stringify(figures));
})().catch((error) => { console.log(JSON.stringify({error: String(error)})); process.exit(1); });
"""


def memory_onnxruntime(model, inputs, calls: int, warmup: int = 0) -> dict:
    exported = ort.Exported(model, inputs)  # raises ort.Unavailable with the reason
    try:
        package = os.path.join(os.path.dirname(exported.runner), "node_modules",
                               "onnxruntime-node")
        config = os.path.join(exported.directory, "memory.json")
        with open(config, "w") as out:
            json.dump(exported.config, out)
        command = [exported.node, "-e", NODE_MEMORY, package, config, str(calls)]
        command += [str(warmup)] if warmup else []
        output = subprocess.run(command, capture_output=True, text=True).stdout
    finally:
        exported.cleanup()
    return json.loads(output.strip().splitlines()[-1])


def memory_row(measure, **key) -> dict:
    """`key` and the figures measure() returns, or the first line of why it could not; printed."""
    try:
        figures = measure()
    except (ort.Unavailable, RuntimeError, ValueError, IndexError) as error:
        figures = {"error": str(error).splitlines()[0]}
    row = dict(key, **figures)
    print(json.dumps(row), flush=True)
    return row


def mib(value) -> str:
    return f"{value / 2**20:.1f} MiB"


# --- tables and chart ----------------------------------------------------------------------------

def ratio(numerator, denominator) -> str:
    if numerator is None or denominator is None or numerator <= 0 or denominator <= 0:
        return "–"
    return f"{numerator / denominator:.2f}"


def sections(runs):
    """(wait policy, threads) in the order measured."""
    seen = []
    for run in runs:
        policy = run["result"]["environment"].get("OMP_WAIT_POLICY", "(unset)")
        for count in run["result"]["threads"]:
            if (policy, count) not in seen:
                seen.append((policy, count))
    return seen


def medians(run, policy, threads):
    """runtime -> median µs of one run at one configuration, or None when not that one."""
    if run["result"]["environment"].get("OMP_WAIT_POLICY", "(unset)") != policy:
        return None
    rows = [row for row in run["result"]["rows"] if row["threads"] == threads]
    return {row["runtime"]: row["median_us"] for row in rows} if rows else None


def versions_text(runs) -> str:
    """`torch …, ONNX Runtime …` and the other versions the runs recorded, for an intro."""
    first = runs[0]["result"]["versions"]
    ort_version = next((r["result"]["versions"]["onnxruntime"] for r in runs
                        if r["result"]["versions"]["onnxruntime"]), None)
    extra = "".join(f", {name} {first[name]}" for name in ("torchvision", "torchaudio")
                    if name in first)
    return (f"torch {first['torch']}{extra}, ONNX Runtime {ort_version or 'not available'} "
            f"(onnxruntime-node), static_runtime {first['static_runtime']}")


def _skip_cell(run, runtime, threads) -> str:
    """Why a runtime has no time in a row, short enough for a cell."""
    for skip in run["result"]["skipped"]:
        if skip["runtime"] == runtime and skip["threads"] == threads:
            reason = skip["reason"]
            if reason.startswith(bench.LABELS[runtime] + " "):  # the column says whose
                reason = reason[len(bench.LABELS[runtime]) + 1:]
            if reason.startswith("torch.onnx.export failed: "):
                reason = "export failed: " + reason[len("torch.onnx.export failed: "):]
            return reason if len(reason) <= 80 else reason[:77] + "..."
    return "–"


def timing_tables(runs, skips_in_cells: bool = False) -> list:
    """One markdown table per (wait policy, threads), then the runtimes not measured and why.
    skips_in_cells: a runtime without a time shows why in its cell (e.g. "export failed: ...")."""
    lines = []
    bf16 = any(row["runtime"] == "ours_bf16" for run in runs for row in run["result"]["rows"])
    columns = [(key, title) for key, title in COLUMNS if bf16 or key != "ours_bf16"]
    header = (["model, input"] + [title for _, title in columns]
              + ["ours / ORT", "ours / optimize_for_inference"]
              + (["ours bf16 / ORT"] if bf16 else []) + ["others busy"])
    for policy, threads in sections(runs):
        policy_text = " as found (unset)" if policy == "(unset)" else f"={policy}"
        lines += [f"**{threads} thread{'s' if threads > 1 else ''}, OMP_WAIT_POLICY"
                  f"{policy_text}**", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        for run in runs:
            times = medians(run, policy, threads)
            if times is None:
                continue
            cells = [run["description"]]
            for key, _ in columns:
                if key in times or not skips_in_cells:
                    cells.append(format_time(times.get(key)))
                else:
                    cells.append(_skip_cell(run, key, threads))
            cells += [ratio(times.get("ours"), times.get("onnxruntime")),
                      ratio(times.get("ours"), times.get("optimize_for_inference"))]
            if bf16:
                cells.append(ratio(times.get("ours_bf16"), times.get("onnxruntime")))
            others = run["result"].get("others_busy")
            cells.append(f"{others:.0%}" if others is not None else "–")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    skipped = sorted({f"{bench.LABELS[s['runtime']]} on {r['description']} at {s['threads']} "
                      f"thread(s): {s['reason']}" for r in runs for s in r["result"]["skipped"]})
    if skipped:
        lines += ["Not measured: " + "; ".join(skipped) + ".", ""]
    return lines


def plot(data, path: str, script: str, label) -> None:
    """One panel per (wait policy, threads): ours, ORT and optimize_for_inference per run (x tick
    label(run)) as time / ORT's, the 0.9 target drawn."""
    from static_runtime.plots import _pyplot

    plt = _pyplot()
    panels_for = sections(data["runs"])
    shown = [("ours", "ours", "tab:red"), ("onnxruntime", "ONNX Runtime", "tab:blue"),
             ("optimize_for_inference", "TorchScript optimize_for_inference", "tab:gray")]
    if any(row["runtime"] == "ours_bf16" for run in data["runs"] for row in run["result"]["rows"]):
        shown.insert(1, ("ours_bf16", "ours, fp32_precision=bf16", "tab:orange"))
    figure, panels = plt.subplots(len(panels_for), 1, squeeze=False,
                                  figsize=(max(8, 0.9 * len(data["runs"])),
                                           3.2 * len(panels_for)))
    for panel, (policy, threads) in zip(panels[:, 0], panels_for):
        labels, bars = [], {key: [] for key, _, _ in shown}
        for run in data["runs"]:
            times = medians(run, policy, threads)
            if not times or (times.get("onnxruntime") or 0) <= 0:
                continue  # nothing to normalize by
            labels.append(label(run))
            for key in bars:
                bars[key].append(times[key] / times["onnxruntime"] if key in times else 0)
        width = 0.8 / len(shown)
        for index, (key, legend, color) in enumerate(shown):
            xs = [x + (index - (len(shown) - 1) / 2) * width for x in range(len(labels))]
            drawn = panel.bar(xs, bars[key], width, label=legend, color=color)
            for bar, value in zip(drawn, bars[key]):
                if key != "onnxruntime":  # ORT is 1 by construction
                    panel.annotate(f"{value:.2f}" if value else "not run",
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
    figure.suptitle(f"benchmarks/{script}, {first['date']}, {first['machine']['cpu']}",
                    fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# --- the command line ----------------------------------------------------------------------------

def parse_list(text: str, kind=str) -> list:
    return [kind(item) for item in text.split(",") if item]


def add_model_argument(parser, models) -> None:
    """--models; a script's own options (such as --batches) follow it, then add_run_arguments."""
    parser.add_argument("--models", default=",".join(models),
                        help=f"comma-separated, of {','.join(models)} (default all)")


def add_run_arguments(parser, results_name: str, memory_help: str) -> None:
    """The options every side-by-side script takes after its own."""
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--wait-policy", choices=("both", "default", "passive"), default="both",
                        help="OMP_WAIT_POLICY as found, PASSIVE (child process), or both")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3,
                        help="calls per runtime before timing (ONNX Runtime's runner does 20)")
    parser.add_argument("--burst-seconds", type=float, default=0.02,
                        help="length of each runtime's timed burst per round; each burst starts "
                        "with one untimed call, and the calls after it still find the caches "
                        "holding what the other runtimes' bursts left (ours on efficientnet_b0: "
                        "12.5, 11.6, 11.2 ms for the 1st, 2nd, 3rd call after eager and "
                        "TorchScript ran, 10.6 steady), so longer bursts come closer to a stream "
                        "of calls")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                        help="before each model and batch, wait until other processes used "
                        "under 10%% of the CPUs for this long (a shared machine)")
    parser.add_argument("--memory", action="store_true", help=memory_help)
    parser.add_argument("--no-onnxruntime", action="store_true")
    parser.add_argument("--bf16", action="store_true",
                        help="also time ours with fp32_precision=\"bf16\" (column 'ours bf16'; "
                        "bfloat16 products, results within bench.BF16_TOLERANCE of the reference's scale)")
    parser.add_argument("--json", default=os.path.join(RESULTS, results_name + ".json"))
    parser.add_argument("--plot", default=os.path.join(RESULTS, results_name + ".png"))
    parser.add_argument("--from-json", metavar="FILE", help="measure nothing: redraw from FILE")
    parser.add_argument("--measure-only", metavar="FILE", help=argparse.SUPPRESS)


def run(args, measure, measure_passive_runs, measure_memory, markdown, draw) -> None:
    """--measure-only, --from-json or a full measurement (written to --json); then the markdown
    and the chart. measure(args) and measure_passive_runs(args) return runs; measure_memory(args)
    rows; markdown(data) the text; draw(data, path) the chart."""
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
        runs += measure_passive_runs(args) if args.wait_policy in ("both", "passive") else []
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
            draw(data, args.plot)
            print(f"wrote {args.plot}")
        except SystemExit as missing:  # matplotlib absent: the table stands alone
            print(missing)
