"""Peak memory and latency of one model under each runtime, each in a fresh process.

Usage (from the repository root, after the build):
    /usr/bin/python3 benchmarks/memory_peak.py [--model transformer_block] [--batch 8] [--seq 128]
                                               [--runs 50] [--threads 1]

Rows: eager PyTorch, PyTorch's built-in Static Runtime (torch._C._jit_to_static_module), and
static_runtime with the naive and greedy_by_size memory planners. "peak increase" is the process's
peak RSS during warm-up and the timed runs minus its RSS just before them, so it counts the memory
the runtime needs to run the model (activations, arenas, workspace), not torch's own footprint.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIMES = ("eager", "pytorch_static_runtime", "ours_naive", "ours_greedy_by_size")


def current_rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_runner(runtime, entry, to_torchscript):
    import torch
    import static_runtime

    if runtime == "eager":
        module = entry.module.eval()

        def run(*args):
            with torch.no_grad():
                return module(*args)

        return run, {}
    scripted = to_torchscript(entry)
    if runtime == "pytorch_static_runtime":
        return torch._C._jit_to_static_module(torch.jit.freeze(scripted)._c), {}
    planner = runtime[len("ours_"):]
    module = static_runtime.StaticModule(scripted, memory_planner=planner)
    return module, module


def worker(args):
    import torch

    sys.path.insert(0, os.path.join(ROOT, "test", "models"))
    import zoo

    torch.set_num_threads(args.threads)
    entry = zoo.entries()[args.model]
    d_model = entry.inputs[0][0].shape[-1]
    torch.manual_seed(0)
    inputs = (torch.randn(args.batch, args.seq, d_model),)
    runner, stats_source = make_runner(args.runtime, entry, zoo.to_torchscript)

    rss_before = current_rss_bytes()
    for _ in range(5):
        runner(*inputs)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        runner(*inputs)
        times.append(time.perf_counter() - start)
    result = {
        "runtime": args.runtime,
        "median_ms": statistics.median(times) * 1e3,
        "peak_increase_mib": (peak_rss_bytes() - rss_before) / 2**20,
        "peak_rss_mib": peak_rss_bytes() / 2**20,
    }
    if stats_source:
        stats = stats_source.stats()
        result["arena_mib"] = stats["managed_bytes"] / 2**20
        result["lower_bound_mib"] = stats["managed_lower_bound_bytes"] / 2**20
        result["fallback_nodes"] = stats["fallback_nodes"]
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="transformer_block")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runtime", choices=RUNTIMES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runtime:
        worker(args)
        return

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build", "python"), GLOG_minloglevel="2")
    print(f"model {args.model}, input [{args.batch}, {args.seq}, d], {args.runs} runs, "
          f"{args.threads} intra-op thread(s); OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', 'unset')}")
    print(f"{'runtime':<26}{'median ms':>10}{'peak increase MiB':>19}{'arena MiB':>11}{'lower bound MiB':>17}")
    rows = []
    for runtime in RUNTIMES:
        command = [sys.executable, __file__, "--runtime", runtime, "--model", args.model,
                   "--batch", str(args.batch), "--seq", str(args.seq), "--runs", str(args.runs),
                   "--threads", str(args.threads)]
        output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
        row = json.loads(output.strip().splitlines()[-1])
        rows.append(row)
        arena = f"{row['arena_mib']:.2f}" if "arena_mib" in row else "-"
        bound = f"{row['lower_bound_mib']:.2f}" if "lower_bound_mib" in row else "-"
        print(f"{runtime:<26}{row['median_ms']:>10.3f}{row['peak_increase_mib']:>19.2f}{arena:>11}{bound:>17}")
    return rows


if __name__ == "__main__":
    main()
