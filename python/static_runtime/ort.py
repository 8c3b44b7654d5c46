"""ONNX Runtime as a benchmark anchor: export with torch.onnx, time in node (onnxruntime-node).

The npm package onnxruntime-node ships ONNX Runtime's CPU library (bin/napi-v6/linux/x64 in its
tarball, so `npm install --ignore-scripts` is enough). benchmarks/ort_runner.js is a long-lived
node process that times session.run on request; OrtRunner drives it one burst per round, so ONNX
Runtime is interleaved with the in-process runtimes like any other. From each burst's mean time
per call the mean of the model's binding twin's (same inputs, same process, same burst) is
subtracted: what remains is ONNX Runtime's own work, without the JavaScript binding's per-call
cost. The twin (BindingTwin) takes the model's inputs and returns outputs of the model's shapes
and dtypes, so the binding converts as much data each way as for the model. (An identity model
was the twin until 2026-11-26; returning its inputs made the binding wrap an output as large as
the input, 160-440 µs for a 1x3x224x224 image against ~12 µs for a classifier's 1x1000, and
that difference was subtracted from ONNX Runtime's time as if it were binding cost.)
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

# Opset 17: the newest torch 1.13 exports; it has LayerNormalization as one op.
OPSET = 17
# Calls each burst starts with, untimed, on every runtime (static_runtime.bench.Runner too): the
# first call after the other runtimes' bursts finds the caches holding their weights and
# activations, where a stream of calls would not.
UNTIMED_CALLS = 1
_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.bool: "bool",
}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}


class Unavailable(Exception):
    """ONNX Runtime cannot run this model here; the message says why."""


def find_runner() -> Optional[str]:
    """ort_runner.js: $SRT_ORT_RUNNER, else benchmarks/ort_runner.js of the source tree above this
    package (the package is built into <source>/build*/python/static_runtime)."""
    override = os.environ.get("SRT_ORT_RUNNER")
    if override:
        return override if os.path.isfile(override) else None
    directory = os.path.dirname(os.path.abspath(__file__))
    for _ in range(5):
        candidate = os.path.join(directory, "benchmarks", "ort_runner.js")
        if os.path.isfile(candidate):
            return candidate
        directory = os.path.dirname(directory)
    return None


def check_available() -> Tuple[str, str]:
    """(node, runner script), or raises Unavailable saying what is missing."""
    node = shutil.which("node")
    if node is None:
        raise Unavailable("node is not installed (apt-get install nodejs)")
    runner = find_runner()
    if runner is None:
        raise Unavailable("benchmarks/ort_runner.js not found above the static_runtime package; "
                          "set SRT_ORT_RUNNER to its path")
    package = os.path.join(os.path.dirname(runner), "node_modules", "onnxruntime-node")
    if not os.path.isdir(package):
        raise Unavailable(f"onnxruntime-node is not installed: run 'npm install --ignore-scripts' "
                          f"in {os.path.dirname(runner)}")
    return node, runner


class BindingTwin(torch.nn.Module):
    """Reads every input and returns tensors shaped like `outputs` (the model's outputs): each an
    expanded scalar, one write of its size. Timed through a runtime's binding, it costs what the
    binding does around the model's own work, without doing that work."""

    def __init__(self, outputs: Sequence[torch.Tensor]):
        super().__init__()
        self.shapes = [(tuple(output.shape), output.dtype) for output in outputs]

    def forward(self, *inputs: torch.Tensor) -> Any:
        seed = sum(_first_element(x).to(torch.float32).sum() for x in inputs)
        results = tuple(seed.to(dtype).expand(shape).contiguous() for shape, dtype in self.shapes)
        return results if len(results) > 1 else results[0]


def _first_element(x: torch.Tensor) -> torch.Tensor:
    """x[:1, :1, ...]: Slice ops reading one element. (A reshape of a graph input copies all of
    it in ONNX Runtime: ~100 µs for an image.)"""
    for dim in range(x.dim()):
        x = x.narrow(dim, 0, min(1, x.size(dim)))
    return x


def tensors_in(value: Any) -> List[torch.Tensor]:
    """The tensors in a result, in order: itself, or those in its tuples, lists and dicts (the
    order ONNX export gives its outputs); None and numbers are left out."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in tensors_in(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in tensors_in(item)]
    return []


def output_tensors(model: Any, inputs: Sequence[Any]) -> List[torch.Tensor]:
    """The tensors `model(*inputs)` returns (tensors_in), for BindingTwin."""
    with torch.no_grad():
        outputs = tensors_in(model(*inputs))
    if not outputs:
        raise Unavailable("the model returns no tensor")
    return outputs


class Exported:
    """The model and its BindingTwin exported to ONNX in a temporary directory, with the inputs
    written raw; start() launches one node process per thread count."""

    def __init__(self, model: Any, inputs: Sequence[Any]):
        self.node, self.runner = check_available()
        if not all(isinstance(x, torch.Tensor) and x.dtype in _DTYPES for x in inputs):
            raise Unavailable("inputs other than float/int/bool tensors are not exported")
        self.directory = tempfile.mkdtemp(prefix="srt_ort_")
        self.version = None
        names = [f"input_{i}" for i in range(len(inputs))]
        model_path = os.path.join(self.directory, "model.onnx")
        twin_path = os.path.join(self.directory, "binding_twin.onnx")
        try:
            # Not under no_grad: nn.TransformerEncoderLayer would take its fused fast path
            # (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
            torch.onnx.export(model, tuple(inputs), model_path, opset_version=OPSET,
                              input_names=names, do_constant_folding=True)
            twin = BindingTwin(output_tensors(model, inputs))
            torch.onnx.export(twin, tuple(inputs), twin_path, opset_version=OPSET,
                              input_names=names)
        except Exception as error:  # noqa: BLE001 - the exporter raises many kinds
            self.cleanup()
            first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
            hint = ""
            if isinstance(model, torch.jit.ScriptModule):
                hint = (" (torch 1.13 exports ScriptModules poorly; bench.compare(module, inputs) "
                        "with the eager nn.Module exports by tracing)")
            raise Unavailable(f"torch.onnx.export failed: {first_line}{hint}") from error
        specs = []
        for name, value in zip(names, inputs):
            path = os.path.join(self.directory, name + ".bin")
            value.detach().contiguous().numpy().tofile(path)
            specs.append({"name": name, "type": _DTYPES[value.dtype], "dims": list(value.shape),
                          "file": path})
        self.config = {"model": model_path, "binding_twin": twin_path, "inputs": specs,
                       "output_dir": self.directory}

    def start(self, threads: int, reference: Any, warmup: int = 20) -> "OrtRunner":
        """A node process with an intra-op pool of `threads`, warmed up, its outputs checked
        against `reference`."""
        config_path = os.path.join(self.directory, f"config_{threads}.json")
        with open(config_path, "w") as out:
            json.dump(dict(self.config, threads=threads, warmup=warmup), out)
        runner = OrtRunner(self.node, self.runner, config_path)
        try:
            ready = runner.ready
            self.version = ready.get("version")
            _check_outputs(ready["outputs"], reference)
        except Exception:
            runner.close()
            raise
        return runner

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _check_outputs(outputs: List[Dict[str, Any]], reference: Any) -> None:
    from static_runtime.bench import assert_agrees

    # ONNX export drops outputs that are None (a scripted torchvision network's aux logits).
    expected = tensors_in(reference)
    if len(outputs) != len(expected):
        raise Unavailable(f"the ONNX model returns {len(outputs)} outputs, the module "
                          f"{len(expected)}")
    for index, (output, want) in enumerate(zip(outputs, expected)):
        dtype = _TORCH_DTYPES.get(output["type"])
        if dtype is None:
            raise Unavailable(f"ONNX output {index} has unsupported type {output['type']}")
        with open(output["file"], "rb") as data:
            got = torch.frombuffer(bytearray(data.read()), dtype=dtype).reshape(output["dims"])
        try:
            assert_agrees(got, want.to(got.dtype))
        except (AssertionError, TypeError, ValueError, RuntimeError) as error:
            raise Unavailable(f"ONNX Runtime output {index} disagrees with the reference: "
                              f"{str(error).splitlines()[0]}") from error


class OrtRunner:
    """One node process; burst(calls) returns ONNX Runtime's mean seconds per call with the
    binding's per-call cost (its BindingTwin's) subtracted."""

    name = "onnxruntime"

    def __init__(self, node: str, script: str, config_path: str):
        # cwd: node resolves require('onnxruntime-node') from the script's directory anyway; the
        # process inherits the environment unchanged.
        self._process = subprocess.Popen(
            [node, script, config_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1)
        self.ready = self._reply()
        self._pause()
        # The last burst's raw means, for reports.
        # Mean seconds per call of the binding twin, one per burst: the binding's cost.
        self.binding_samples: List[float] = []

    def _reply(self) -> Dict[str, Any]:
        line = self._process.stdout.readline()
        if not line:
            error = self._process.stderr.read().strip().splitlines()
            raise Unavailable("the ONNX Runtime runner exited: " +
                              (error[-1] if error else "no output"))
        reply = json.loads(line)
        if "error" in reply:
            raise Unavailable(f"ONNX Runtime: {reply['error']}")
        return reply

    # Between its bursts the node process is stopped: ONNX Runtime's pool threads spin-wait after
    # each run, and on a small machine they would take the cores the other runtimes are being
    # timed on (measured on 2 cores: ours at 2 threads went from 24 to 42 ms per call with an
    # idle runner alive). The runner times itself, so resuming it costs nothing it measures.
    def _pause(self) -> None:
        if hasattr(signal, "SIGSTOP") and self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGSTOP)

    def _resume(self) -> None:
        if hasattr(signal, "SIGCONT") and self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGCONT)

    def burst(self, calls: int) -> float:
        self._resume()
        try:
            self._process.stdin.write(json.dumps({"calls": calls, "untimed": UNTIMED_CALLS}) + "\n")
            reply = self._reply()
        finally:
            self._pause()
        model_s = sum(reply["model_s"]) / calls
        binding_s = sum(reply["binding_s"]) / calls
        self.binding_samples.append(binding_s)
        # Not clipped at 0: a negative median says the model's work is below the noise.
        return model_s - binding_s

    def close(self) -> None:
        self._resume()
        if self._process.poll() is None:
            try:
                self._process.stdin.write(json.dumps({"quit": True}) + "\n")
                self._process.stdin.flush()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
