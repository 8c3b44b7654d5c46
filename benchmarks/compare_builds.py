#!/usr/bin/python3
"""Two builds of static_runtime side by side on the zoo workloads of benchmarks/run_all: is a
change slower anywhere?

    git worktree add /tmp/before HEAD~1 && (cd /tmp/before && scripts/build.sh -DSRT_BUILD_TESTS=OFF)
    /usr/bin/python3 benchmarks/compare_builds.py --baseline /tmp/before/build/python \\
        --candidate build/python [--rounds 7] [--threads 1]

The two builds cannot share a process (same library, same symbols), so each round starts one
process per build, in alternating order, and each times every workload in ~20 ms bursts after a
warm-up; a build's figure is the median over rounds. Prints the per-call medians and candidate /
baseline (below 1: the candidate is faster). Intra-op, OpenMP and OpenBLAS threads are pinned to
--threads in both.
"""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs in each build's process: times every workload once, prints {name: microseconds per call}.
WORKER = r"""
import importlib.machinery, importlib.util, json, sys, time
import torch
sys.path.insert(0, sys.argv[1])
loader = importlib.machinery.SourceFileLoader("run_all", sys.argv[2])
spec = importlib.util.spec_from_loader("run_all", loader)
run_all = importlib.util.module_from_spec(spec)
loader.exec_module(run_all)
import static_runtime
torch.set_num_threads(int(sys.argv[3]))
torch.manual_seed(0)
results = {}
for name, (description, make_module, make_inputs) in run_all.workloads().items():
    model, inputs = make_module().eval(), make_inputs()
    try:
        scripted = torch.jit.script(model)
    except Exception:  # what cannot be scripted is traced, as run_all's comparison does
        scripted = torch.jit.trace(model, inputs)
    module = static_runtime.StaticModule(scripted)
    for _ in range(20):
        module(*inputs)
    bursts = []
    for _ in range(5):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.02:
            module(*inputs)
            calls += 1
        bursts.append((time.perf_counter() - start) / calls * 1e6)
    results[name] = min(bursts)
print(json.dumps(results))
"""


def run_build(python_dir: str, threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        ["/usr/bin/python3", "-c", WORKER, os.path.abspath(python_dir),
         os.path.join(ROOT, "benchmarks", "run_all"), str(threads)],
        env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the earlier build's python/ directory")
    parser.add_argument("--candidate", required=True, help="the later build's python/ directory")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    samples = {"baseline": [], "candidate": []}
    for round_index in range(args.rounds):
        order = ["baseline", "candidate"] if round_index % 2 == 0 else ["candidate", "baseline"]
        for build in order:
            samples[build].append(run_build(getattr(args, build), args.threads))
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    names = list(samples["baseline"][0])
    print(f"median µs per call over {args.rounds} interleaved rounds, {args.threads} thread(s), "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"| workload | baseline | candidate | candidate / baseline |\n|---|---:|---:|---:|")
    for name in names:
        base = statistics.median(s[name] for s in samples["baseline"])
        cand = statistics.median(s[name] for s in samples["candidate"])
        print(f"| {name} | {base:.1f} | {cand:.1f} | {cand / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
