"""Pictures of what static_runtime measured and planned, drawn with matplotlib (Debian:
python3-matplotlib).

    python3 -m static_runtime.plots bench RESULT.json OUT.png        # a bench --json result
    python3 -m static_runtime.plots memory-plan PLAN.json OUT.png    # written by srt inspect

PLAN.json: {"title": str, "arena_bytes": int, "nodes": int, "entries": [{"name", "kind"
("tensor" | "scratch"), "first_node", "last_node", "offset", "bytes"}]}.
"""

import argparse
import json
import sys
from typing import Any, Dict


def _pyplot():
    try:
        import matplotlib
    except ImportError as error:
        raise SystemExit("static_runtime.plots: matplotlib is missing "
                         "(Debian: apt-get install python3-matplotlib)") from error
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def bench_chart(result: Dict[str, Any], path: str) -> None:
    """Grouped bars: median latency per runtime, one group per thread count, ratio vs ours on
    each bar."""
    plt = _pyplot()
    from static_runtime.bench import LABELS, RUNTIMES

    threads = result["threads"]
    present = [r for r in RUNTIMES if any(row["runtime"] == r for row in result["rows"])]
    width = 0.8 / max(len(present), 1)
    figure, axes = plt.subplots(figsize=(max(6, 1.6 * len(present) * len(threads)), 4.5))
    colors = plt.get_cmap("tab10")
    for index, runtime in enumerate(present):
        xs, ys, ratios = [], [], []
        for group, count in enumerate(threads):
            for row in result["rows"]:
                if row["runtime"] == runtime and row["threads"] == count:
                    xs.append(group + (index - (len(present) - 1) / 2) * width)
                    ys.append(row["median_us"])
                    ratios.append(row["vs_ours"])
        bars = axes.bar(xs, ys, width, label=LABELS[runtime], color=colors(index),
                        edgecolor="black" if runtime == "ours" else None)
        for bar, ratio in zip(bars, ratios):
            if ratio:
                axes.annotate(f"{ratio:.2f}x", (bar.get_x() + bar.get_width() / 2,
                                                bar.get_height()),
                              ha="center", va="bottom", fontsize=7)
    axes.set_xticks(range(len(threads)))
    axes.set_xticklabels([f"{count} thread{'s' if count > 1 else ''}" for count in threads])
    axes.set_ylabel("median latency per call (µs)")
    axes.set_title(f"{result['model']} on {' '.join(result['inputs'])}\n"
                   f"{result['machine']['cpu']}, gemm_backend={result['gemm_backend']}, "
                   f"{result['date']}  (bar labels: time / ours)", fontsize=9)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def memory_plan(plan: Dict[str, Any], path: str) -> None:
    """One box per buffer: x = the node steps it is live for, y = its bytes in the arena."""
    plt = _pyplot()
    from matplotlib.patches import Rectangle

    entries = plan["entries"]
    nodes = max([plan.get("nodes", 0)] + [e["last_node"] + 1 for e in entries]) or 1
    arena = max([plan.get("arena_bytes", 0)] + [e["offset"] + e["bytes"] for e in entries]) or 1
    figure, axes = plt.subplots(figsize=(10, 6))
    colors = {"tensor": "tab:blue", "scratch": "tab:orange"}
    label_room = arena / 20  # only label boxes tall enough to hold text
    for entry in entries:
        x = entry["first_node"]
        width = entry["last_node"] - entry["first_node"] + 1
        box = Rectangle((x, entry["offset"]), width, entry["bytes"], alpha=0.6,
                        facecolor=colors.get(entry["kind"], "tab:gray"), edgecolor="black",
                        linewidth=0.5)
        axes.add_patch(box)
        if entry["bytes"] >= label_room:
            axes.text(x + width / 2, entry["offset"] + entry["bytes"] / 2, entry["name"],
                      ha="center", va="center", fontsize=6, clip_on=True)
    axes.set_xlim(0, nodes)
    axes.set_ylim(0, arena)
    axes.set_xlabel("node index (top-level graph)")
    axes.set_ylabel("arena offset (bytes)")
    axes.axhline(arena, color="black", linestyle="--", linewidth=0.8)
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, alpha=0.6) for c in colors.values()]
    axes.legend(handles, list(colors), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    axes.set_title(f"{plan.get('title', 'memory plan')}: {len(entries)} buffers, "
                   f"arena {arena} bytes", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m static_runtime.plots",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["bench", "memory-plan"])
    parser.add_argument("input", help="the JSON to draw")
    parser.add_argument("output", help="the PNG to write")
    args = parser.parse_args(argv)
    with open(args.input) as data:
        content = json.load(data)
    (bench_chart if args.kind == "bench" else memory_plan)(content, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
