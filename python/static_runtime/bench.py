"""Latency of one model on every runtime within reach, side by side in one process.

Runtimes (each skipped with a stated reason when it cannot run the model):

  eager                    the Python module itself (only when given one), under torch.no_grad
  torchscript              torch.jit.freeze of the scripted module
  optimize_for_inference   torch.jit.optimize_for_inference of the same
  pytorch_sr               PyTorch's built-in Static Runtime, torch._C._jit_to_static_module
  onnxruntime              ONNX Runtime CPU through onnxruntime-node (benchmarks/ort_runner.js),
                           the binding's per-call cost subtracted: that of a twin model with the
                           same inputs and outputs of the same shapes that computes nothing
                           (ort.BindingTwin, same process, same bursts)
  ours                     static_runtime.StaticModule, run through a one-runtime RuntimePool with
                           intra_op_threads set; also timed on the same binding twin (same pool
                           setup), so that ours can be compared with ONNX Runtime net of the
                           binding the same way (row field "net_us", "vs_ours_net")

Method: every runtime is built, checked against the reference outputs and warmed up first. Then
each round times a burst of calls (about `burst_seconds` long) on every runtime in turn, in an
order that rotates from round to round, so slow drift of the machine hits all runtimes alike.
Each burst starts with ort.UNTIMED_CALLS untimed call(s), on every runtime alike: the first call
after the other runtimes' bursts meets caches full of their data, which a stream of calls would
not. A runtime's figure is the median over rounds of the mean time per call in a burst; "vs ours"
is that median divided by ours (above 1: ours is faster).

Python API::

    from static_runtime import bench
    result = bench.compare(model, (torch.randn(1, 64),), threads=(1, 2))
    print(bench.format_table(result))
"""

import ctypes
import datetime
import functools
import os
import platform
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

import static_runtime
from static_runtime import ort

# Table order; ours last, as the baseline.
RUNTIMES = ("eager", "torchscript", "optimize_for_inference", "pytorch_sr", "onnxruntime", "ours",
            "ours_bf16")
LABELS = {
    "eager": "eager PyTorch",
    "torchscript": "TorchScript (frozen)",
    "optimize_for_inference": "optimize_for_inference",
    "pytorch_sr": "PyTorch Static Runtime",
    "onnxruntime": "ONNX Runtime (CPU)",
    "ours": "static_runtime (ours)",
    "ours_bf16": "static_runtime fp32_precision=bf16 (ours)",
}
# Ours on the binding twin, timed next to ours; not a row of its own.
OURS_BINDING = "ours_binding"
# What the GEMM libraries read at start-up; recorded, never changed.
ENVIRONMENT_KEYS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
                    "OMP_NUM_THREADS", "OMP_WAIT_POLICY")
# Outputs must agree with the reference before anything is timed: a benchmark of wrong answers
# measures nothing. Agreement is measured as the test suite measures it (test_real_models.py): the
# largest difference relative to the reference's largest magnitude. Deep float32 networks round
# differently in equally valid kernels, and by an amount that scales with their values, not with
# each element: inception_v3 at 224x224 (logits up to ~8) differs from the frozen reference by
# 4e-4 in eager PyTorch, 2e-4 in optimize_for_inference and 7e-4 in ours (Winograd), all under
# 1e-4 of its scale, where an element-wise rtol 1e-3 + atol 1e-4 rejected all three; ONNX Runtime
# reorders reductions too (fused LayerNorm, GELU). A wrong kernel is off by far more.
TOLERANCE = 3e-4
# Ours multiplying in bfloat16 (8 mantissa bits) differs more, relative to the reference's largest
# magnitude but at least 1 (BF16_SCALE_FLOOR): its rounding is relative to the products' operands,
# which stay near 1 in a calibrated network whose logits come out small. Deep networks accumulate
# it: mobilenet_v2 (52 convolutions, BatchNorm calibrated, logits below 1) differs by 0.038 at
# batch 1 and 0.07 of its largest logit at batch 8, resnet18 by 0.01.
BF16_TOLERANCE = 5e-2
BF16_SCALE_FLOOR = 1.0


def assert_agrees(actual: Any, expected: Any, tolerance: float = TOLERANCE,
                  scale_floor: float = 0.0) -> None:
    """Raises AssertionError unless `actual` holds as many tensors as `expected` (in tuples,
    lists and dicts, in order; a scripted torchvision network returns a named tuple with None
    where its eager twin returns the tensor alone), of the same shapes and dtypes, and every
    floating-point one lies within `tolerance` of the corresponding expected tensor's largest
    finite magnitude (at least `scale_floor`; 1 where that is 0), with NaNs in the same places;
    other tensors must be equal."""
    got_tensors, want_tensors = ort.tensors_in(actual), ort.tensors_in(expected)
    assert len(got_tensors) == len(want_tensors), (
        f"{len(got_tensors)} tensors in the result, {len(want_tensors)} in the reference")
    for index, (got, want) in enumerate(zip(got_tensors, want_tensors)):
        assert got.shape == want.shape and got.dtype == want.dtype, (
            f"tensor {index}: {got.dtype} {list(got.shape)}, the reference's {want.dtype} "
            f"{list(want.shape)}")
        if not want.is_floating_point():
            assert torch.equal(got, want), f"tensor {index}: values differ"
            continue
        assert torch.equal(got.isnan(), want.isnan()), f"tensor {index}: NaN in different places"
        finite = ~want.isnan()
        if not finite.any():
            continue
        scale = max(want[finite].abs().max().item(), scale_floor) or 1.0
        difference = (got[finite].double() - want[finite].double()).abs().max().item()
        assert difference <= tolerance * scale, (
            f"tensor {index}: largest difference {difference:.3g}, {difference / scale:.3g} of "
            f"the reference's largest magnitude {scale:.3g} (allowed: {tolerance:g})")


class Runner:
    """One runtime ready to be timed: `burst(calls)` returns the mean seconds per call."""

    def __init__(self, name: str, call: Callable[[], Any]):
        self.name = name
        self._call = call

    def burst(self, calls: int) -> float:
        call = self._call
        for _ in range(ort.UNTIMED_CALLS):
            call()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        return (time.perf_counter() - start) / calls

    def close(self) -> None:
        pass


def _machine() -> Dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    # Other work on the machine moves every number; the load says how much there was.
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(),
            "load_average_1min": round(os.getloadavg()[0], 2)}


def environment() -> Dict[str, str]:
    return {key: os.environ.get(key, "(unset)") for key in ENVIRONMENT_KEYS}


@functools.lru_cache(maxsize=None)
def _openblas() -> Optional[ctypes.CDLL]:
    """The OpenBLAS torch loaded into this process, or None (another BLAS, not Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "libopenblas" in line})
    except OSError:
        return None
    for path in paths:
        try:
            library = ctypes.CDLL(path)  # already loaded: the same handle, nothing re-initialized
            library.openblas_set_num_threads  # pip wheels suffix it (..._64_): not torch's
            return library
        except (OSError, AttributeError):
            continue
    return None


def openblas_threads(count: Optional[int] = None) -> Optional[int]:
    """The size of OpenBLAS's thread pool, after setting it to `count` if given; None when the
    process has no OpenBLAS. torch.set_num_threads does not reach Debian's pthread OpenBLAS (ATen
    1.13 forwards it to MKL only), whose one process-wide pool starts at every core: without
    this, eager and TorchScript GEMMs (Linear, and the 1x1 and small convolutions ATen runs as
    im2col + sgemm) would use 2 threads in a "1 thread" comparison."""
    library = _openblas()
    if library is None:
        return None
    if count is not None:
        library.openblas_set_num_threads(int(count))
    return int(library.openblas_get_num_threads())


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        shape = "x".join(str(d) for d in value.shape) or "scalar"
        return f"{shape}:{dtype}"
    return type(value).__name__


def _script(model: Any, inputs: Tuple[Any, ...]) -> torch.jit.ScriptModule:
    if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return model
    try:
        return torch.jit.script(model)
    except Exception:  # noqa: BLE001 - many eager modules only trace
        return torch.jit.trace(model, inputs, check_trace=False)


def _check(name: str, actual: Any, expected: Any) -> Optional[str]:
    try:
        if name == "ours_bf16":
            assert_agrees(actual, expected, BF16_TOLERANCE, BF16_SCALE_FLOOR)
        else:
            assert_agrees(actual, expected)
    except (AssertionError, TypeError, ValueError) as error:
        return f"{LABELS[name]} disagrees with the reference: {str(error).splitlines()[0]}"
    return None


def _burst_size(runner: Runner, target_seconds: float) -> int:
    """Calls per burst so that one burst takes about target_seconds."""
    elapsed = runner.burst(3)
    return max(1, min(2000, int(target_seconds / max(elapsed, 1e-7))))


def _build(
    model: Any,
    scripted: torch.jit.ScriptModule,
    inputs: Tuple[Any, ...],
    threads: int,
    options: Dict[str, Any],
    use_onnxruntime: bool,
    ort_session: Optional["ort.Exported"],
    skipped: Dict[str, str],
    bf16: bool = False,
) -> Tuple[Dict[str, Runner], Any]:
    """The runners that can run the model at `threads`, and the reference outputs; with `bf16`
    also ours with fp32_precision="bf16"."""
    runners: Dict[str, Runner] = {}
    frozen = torch.jit.freeze(scripted.eval()) if hasattr(scripted, "_c") else scripted
    with torch.no_grad():
        reference = frozen(*inputs)

    def add(name: str, make: Callable[[], Callable[[], Any]]) -> None:
        try:
            call = make()
            with torch.no_grad():
                problem = _check(name, call(), reference)
        except Exception as error:  # noqa: BLE001 - any failure means "cannot run here"
            problem = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        if problem:
            skipped[name] = problem
        else:
            runners[name] = Runner(name, call)

    if isinstance(model, torch.nn.Module) and not isinstance(model, torch.jit.ScriptModule):
        def eager() -> Callable[[], Any]:
            def call() -> Any:
                with torch.no_grad():
                    return model(*inputs)
            return call
        add("eager", eager)
    else:
        skipped["eager"] = "needs the Python module (bench.compare(module, inputs))"

    def torchscript() -> Callable[[], Any]:
        return lambda: frozen(*inputs)

    def optimized() -> Callable[[], Any]:
        module = torch.jit.optimize_for_inference(torch.jit.freeze(scripted.eval()))
        return lambda: module(*inputs)

    def pytorch_sr() -> Callable[[], Any]:
        module = torch._C._jit_to_static_module(torch.jit.freeze(scripted.eval())._c)
        return lambda: module(*inputs)

    def ours(**precision: str) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            module = static_runtime.StaticModule(scripted, **{**options, **precision})
            pool = static_runtime.RuntimePool(module, 1, intra_op_threads=threads)
            return lambda: pool(*inputs)
        return make

    def ours_binding() -> Optional[Runner]:
        """Ours on the binding twin: the Python binding, the pool lease, the runtime's fixed cost
        per call and the outputs' allocation, what the twin measures for ORT's node binding."""
        if not inputs or not all(isinstance(value, torch.Tensor) for value in inputs):
            return None
        try:
            twin = ort.BindingTwin(ort.output_tensors(scripted, inputs))
        except ort.Unavailable:
            return None
        traced = torch.jit.trace(twin, tuple(inputs), check_trace=False)
        pool = static_runtime.RuntimePool(static_runtime.StaticModule(traced, **options), 1,
                                          intra_op_threads=threads)
        return Runner(OURS_BINDING, lambda: pool(*inputs))

    if hasattr(scripted, "_c"):
        add("torchscript", torchscript)
        add("optimize_for_inference", optimized)
        add("pytorch_sr", pytorch_sr)
    else:
        for name in ("torchscript", "optimize_for_inference", "pytorch_sr"):
            skipped[name] = "needs a ScriptModule, not a scripted function"
    if use_onnxruntime and ort_session is not None:
        try:
            runner = ort_session.start(threads, reference)
            runners["onnxruntime"] = runner
        except ort.Unavailable as error:
            skipped["onnxruntime"] = str(error)
    add("ours", ours())
    if bf16:
        add("ours_bf16", ours(fp32_precision="bf16"))
    if "ours" in runners:
        binding = ours_binding()
        if binding is not None:
            runners[OURS_BINDING] = binding
    return runners, reference


def _measure(runners: Dict[str, Runner], rounds: int, warmup: int,
             burst_seconds: float) -> Dict[str, List[float]]:
    """name -> seconds per call, one sample per round."""
    sizes = {}
    for name, runner in runners.items():
        if warmup and not isinstance(runner, ort.OrtRunner):  # node warmed up on its own
            runner.burst(warmup)
        sizes[name] = _burst_size(runner, burst_seconds)
    samples: Dict[str, List[float]] = {name: [] for name in runners}
    names = list(runners)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(runners[name].burst(sizes[name]))
    return samples


def compare(
    model: Union[torch.nn.Module, torch.jit.ScriptModule, str, os.PathLike],
    inputs: Sequence[Any],
    *,
    threads: Sequence[int] = (1,),
    rounds: int = 15,
    warmup: int = 20,
    burst_seconds: float = 0.02,
    onnxruntime: bool = True,
    options: Optional[Dict[str, Any]] = None,
    name: Optional[str] = None,
    bf16: bool = False,
) -> Dict[str, Any]:
    """Times `model(*inputs)` on every runtime at each intra-op thread count.

    model: an eager nn.Module (then eager PyTorch is measured too and ONNX export traces it), a
    ScriptModule, or the path of a TorchScript archive. options: StaticModule keywords for ours.
    bf16: also time ours with fp32_precision="bf16" (row "ours_bf16"), checked against the
    reference to bfloat16's rounding (BF16_TOLERANCE).
    Returns a JSON-ready dict: "rows" (threads, runtime, label, median_us, vs_ours, samples_us),
    "skipped" (threads, runtime, reason) and what was measured on ("machine", "environment",
    "gemm_backend", versions, date). Restores torch's thread count afterwards.
    """
    inputs = tuple(inputs)
    options = dict(options or {})
    if isinstance(model, (str, os.PathLike)):
        name = name or os.path.basename(os.fspath(model))
        model = torch.jit.load(os.fspath(model))
    if isinstance(model, torch.nn.Module):
        model.eval()
    name = name or type(model).__name__
    scripted = _script(model, inputs)
    gemm_backend = static_runtime.StaticModule(scripted, **options).options["gemm_backend"]

    ort_session = None
    skipped_everywhere: Dict[str, str] = {}
    if onnxruntime:
        try:
            ort_session = ort.Exported(model, inputs)
        except ort.Unavailable as error:
            skipped_everywhere["onnxruntime"] = str(error)
    else:
        skipped_everywhere["onnxruntime"] = "switched off (--no-onnxruntime)"

    saved_threads = torch.get_num_threads()
    saved_openblas = openblas_threads()
    rows: List[Dict[str, Any]] = []
    skipped: List[Dict[str, Any]] = []
    try:
        for count in threads:
            torch.set_num_threads(count)
            openblas_threads(count)
            skipped_here = dict(skipped_everywhere)
            runners, _ = _build(model, scripted, inputs, count, options, onnxruntime,
                                ort_session, skipped_here, bf16)
            try:
                samples = _measure(runners, rounds, warmup, burst_seconds)
            finally:
                for runner in runners.values():
                    runner.close()
            ours = statistics.median(samples["ours"]) if "ours" in samples else None
            # Ours net of its binding: paired per round, as ORT's runner pairs per call.
            ours_net = None
            if ours is not None and OURS_BINDING in samples:
                ours_net = statistics.median(
                    [t - b for t, b in zip(samples["ours"], samples[OURS_BINDING])])
            for runtime in RUNTIMES:
                if runtime in samples:
                    median = statistics.median(samples[runtime])
                    rows.append({
                        "threads": count,
                        "runtime": runtime,
                        "label": LABELS[runtime],
                        "median_us": median * 1e6,
                        "vs_ours": median / ours if ours else None,
                        "samples_us": [s * 1e6 for s in samples[runtime]],
                    })
                    if isinstance(runners[runtime], ort.OrtRunner):
                        # Already subtracted from median_us; kept to show its size.
                        rows[-1]["binding_overhead_us"] = statistics.median(
                            runners[runtime].binding_samples) * 1e6
                        rows[-1]["vs_ours_net"] = (median / ours_net
                                                   if ours_net and ours_net > 0 else None)
                    if runtime == "ours" and ours_net is not None:
                        rows[-1]["binding_overhead_us"] = statistics.median(
                            samples[OURS_BINDING]) * 1e6
                        rows[-1]["net_us"] = ours_net * 1e6
                        rows[-1]["binding_samples_us"] = [s * 1e6 for s in samples[OURS_BINDING]]
                elif runtime in skipped_here:
                    skipped.append({"threads": count, "runtime": runtime,
                                    "reason": skipped_here[runtime]})
    finally:
        torch.set_num_threads(saved_threads)
        if saved_openblas is not None:
            openblas_threads(saved_openblas)
        if ort_session is not None:
            ort_session.cleanup()

    return {
        "model": name,
        "inputs": [_describe(value) for value in inputs],
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _machine(),
        "environment": environment(),
        "gemm_backend": gemm_backend,
        "versions": {
            "torch": torch.__version__,
            "static_runtime": static_runtime.__version__,
            "onnxruntime": ort_session.version if ort_session else None,
        },
        "method": {"rounds": rounds, "warmup": warmup, "burst_seconds": burst_seconds,
                   "statistic": "median over rounds of the mean time per call in a burst"},
        "threads": list(threads),
        # Each thread count is given to torch, ours (intra_op_threads), ONNX Runtime
        # (intraOpNumThreads) and, when the process has one, OpenBLAS's pool.
        "openblas_threads_set": saved_openblas is not None,
        "rows": rows,
        "skipped": skipped,
    }


def header(result: Dict[str, Any]) -> str:
    env = ", ".join(f"{k}={v}" for k, v in result["environment"].items())
    machine = result["machine"]
    return (f"# {result['model']} on {' '.join(result['inputs'])}: {result['date']}, "
            f"{machine['cpu']} ({machine['cores']} cores, load {machine['load_average_1min']}), gemm_backend={result['gemm_backend']}, "
            f"{env}\n# median of {result['method']['rounds']} interleaved rounds; "
            "'vs ours' = runtime / ours (above 1.00: ours is faster)")


def format_table(result: Dict[str, Any]) -> str:
    lines = [header(result), f"{'threads':>7}  {'runtime':<24} {'median':>12} {'vs ours':>8}"]
    for row in result["rows"]:
        ratio = f"{row['vs_ours']:.2f}x" if row["vs_ours"] and row["vs_ours"] > 0 else "-"
        line = (f"{row['threads']:>7}  {row['label']:<24} {_format_us(row['median_us']):>12} "
                f"{ratio:>8}")
        if row["runtime"] == "onnxruntime" and "binding_overhead_us" in row:
            line += f"  (node binding's {_format_us(row['binding_overhead_us'])} subtracted)"
            if row.get("vs_ours_net"):
                line += f"; {row['vs_ours_net']:.2f}x ours net"
        elif "net_us" in row:
            line += (f"  (net of its binding's {_format_us(row['binding_overhead_us'])}: "
                     f"{_format_us(row['net_us'])})")
        lines.append(line)
    for skip in result["skipped"]:
        lines.append(f"{skip['threads']:>7}  {LABELS[skip['runtime']]:<24} skipped: "
                     f"{skip['reason']}")
    return "\n".join(lines)


def _format_us(us: float) -> str:
    if us >= 10000:
        return f"{us / 1000:.1f} ms"
    if us >= 100:
        return f"{us:.0f} us"
    return f"{us:.1f} us"


def trace(model: Any, inputs: Sequence[Any], path: str, *, threads: int = 1, calls: int = 5,
          options: Optional[Dict[str, Any]] = None) -> int:
    """Writes a Chrome-trace JSON (chrome://tracing, Perfetto) of `calls` runs of ours under
    torch.profiler, one span per call; returns the number of events recorded. Node-level events
    appear inside the spans when the runtime records them (RECORD_FUNCTION per node)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    inputs = tuple(inputs)
    if isinstance(model, (str, os.PathLike)):
        model = torch.jit.load(os.fspath(model))
    module = static_runtime.StaticModule(_script(model, inputs), **(options or {}))
    pool = static_runtime.RuntimePool(module, 1, intra_op_threads=threads)
    pool(*inputs)  # plans memory outside the trace
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for call in range(calls):
            # One span per call, so each run's node events group under it.
            with record_function(f"static_runtime call {call}"):
                pool(*inputs)
    prof.export_chrome_trace(path)
    return len(prof.events())


def calibrate_batch_norm(model: torch.nn.Module, *example: Any) -> torch.nn.Module:
    """Sets every BatchNorm's running statistics to those of one batch (`model(*example)`) and
    returns the model in eval mode. A randomly initialized torchvision network keeps fresh
    statistics (mean 0, variance 1), with which activations shrink layer by layer: mobilenet_v2's
    logits come out near 1e-9, efficientnet_b0's near 1e-14, and any comparison of outputs with
    an absolute tolerance would accept anything."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    saved = [m.momentum for m in norms]
    for norm in norms:
        norm.momentum = 1.0  # running statistics := this batch's
    model.train()
    try:
        with torch.no_grad():
            model(*example)
    finally:
        for norm, momentum in zip(norms, saved):
            norm.momentum = momentum
    return model.eval()


def default_runner_script() -> Optional[str]:
    """benchmarks/ort_runner.js of the source tree this package was built from, if any."""
    return ort.find_runner()


__all__ = ["compare", "format_table", "assert_agrees", "header", "trace", "environment", "openblas_threads",
           "calibrate_batch_norm", "RUNTIMES", "LABELS", "default_runner_script"]
