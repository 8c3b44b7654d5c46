"""python3 -m static_runtime bench MODEL.pt [--input 8x64[:float32] ...] [options]

Measures the model on every runtime side by side (see static_runtime.bench) and prints a table.
"""

import argparse
import ast
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

import torch

# Spec dtypes as `srt` names them (tools/input_spec.cpp).
_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}


def parse_input_spec(text: str) -> Dict[str, Any]:
    """"8x64[:float32]" or "scalar[:int64]" -> {"shape": [...], "dtype": torch.dtype}."""
    shape_text, _, dtype_text = text.partition(":")
    dtype_text = dtype_text or "float32"
    if dtype_text not in _DTYPES:
        raise ValueError(f"bad input spec '{text}': dtype '{dtype_text}'; expected one of "
                         f"{', '.join(_DTYPES)}")
    if shape_text == "scalar":
        return {"shape": [], "dtype": _DTYPES[dtype_text]}
    try:
        shape = [int(dim) for dim in shape_text.split("x")]
    except ValueError:
        shape = []
    if not shape or any(dim < 0 for dim in shape):
        raise ValueError(f"bad input spec '{text}': shape '{shape_text}'; expected dims joined by "
                         "'x' (8x64) or 'scalar'")
    return {"shape": shape, "dtype": _DTYPES[dtype_text]}


def make_inputs(specs: Sequence[Dict[str, Any]]) -> List[torch.Tensor]:
    """The tensors srt makes from the same specs: seed 0, floats randn, integers randint(0, 10),
    bools randint(0, 2)."""
    generator = torch.Generator().manual_seed(0)
    tensors = []
    for spec in specs:
        dtype, shape = spec["dtype"], spec["shape"]
        if dtype.is_floating_point:
            tensors.append(torch.randn(shape, generator=generator, dtype=dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, shape, generator=generator).to(torch.bool))
        else:
            tensors.append(torch.randint(0, 10, shape, generator=generator, dtype=dtype))
    return tensors


def example_input_specs(path: str) -> List[str]:
    """The model's extra file srt/example_inputs, one spec per line."""
    extra = {"srt/example_inputs": ""}
    torch.jit.load(path, _extra_files=extra)
    text = extra["srt/example_inputs"]
    if isinstance(text, bytes):  # torch.jit.load hands extra files back as bytes
        text = text.decode()
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_options(items: Sequence[str]) -> Dict[str, Any]:
    """NAME=VALUE -> StaticModule keywords; VALUE is a Python literal or else a string."""
    options = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise ValueError(f"bad --option '{item}'; expected NAME=VALUE, e.g. "
                             "gemm_backend=openblas")
        try:
            options[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[name] = value
    return options


def parse_threads(text: str) -> List[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        counts = []
    if not counts or any(count < 1 for count in counts):
        raise ValueError(f"bad --threads '{text}'; expected counts >= 1 joined by ',' (1,2)")
    return counts


def bench_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m static_runtime bench",
        description="Latency of a TorchScript model on TorchScript, optimize_for_inference, "
        "PyTorch's Static Runtime, ONNX Runtime and static_runtime, side by side.")
    parser.add_argument("model", help="a TorchScript archive (torch.jit.save)")
    parser.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]",
                        help="one per positional argument of forward (as in srt run); default: "
                        "the model's srt/example_inputs")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts (default 1,2)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per runtime")
    parser.add_argument("--burst-ms", type=float, default=20.0,
                        help="length of one runtime's burst of calls in a round (default 20)")
    parser.add_argument("--no-onnxruntime", action="store_true", help="skip ONNX Runtime")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="a StaticModule option for ours, e.g. gemm_backend=openblas")
    parser.add_argument("--json", metavar="FILE", help="write the result as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="draw a bar chart (matplotlib)")
    parser.add_argument("--trace", metavar="FILE",
                        help="write a Chrome-trace JSON of a few runs of ours (torch.profiler)")
    args = parser.parse_args(argv)

    from static_runtime import bench, plots

    try:
        threads = parse_threads(args.threads)
        options = parse_options(args.option)
        specs_text = args.input or example_input_specs(args.model)
        if not specs_text:
            raise ValueError(f"{args.model} has no srt/example_inputs; pass --input SHAPE[:DTYPE] "
                             "per argument of forward")
        inputs = make_inputs([parse_input_spec(text) for text in specs_text])
    except ValueError as error:
        parser.error(str(error))
    if args.rounds < 1 or args.warmup < 0 or args.burst_ms <= 0:
        parser.error("--rounds must be >= 1, --warmup >= 0, --burst-ms > 0")

    result = bench.compare(args.model, inputs, threads=threads, rounds=args.rounds,
                           warmup=args.warmup, burst_seconds=args.burst_ms / 1000,
                           onnxruntime=not args.no_onnxruntime, options=options)
    print(bench.format_table(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
        print(f"wrote {args.json}")
    if args.plot:
        plots.bench_chart(result, args.plot)
        print(f"wrote {args.plot}")
    if args.trace:
        events = bench.trace(args.model, inputs, args.trace, threads=threads[0], options=options)
        print(f"wrote {args.trace} ({events} profiler events)")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        print("\ncommands:\n  bench   compare runtimes on one model (bench --help for options)")
        return 0
    if argv[0] != "bench":
        print(f"python3 -m static_runtime: unknown command '{argv[0]}'; expected bench",
              file=sys.stderr)
        return 2
    return bench_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
