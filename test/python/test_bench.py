"""The bench tool: static_runtime.bench (Python API), python3 -m static_runtime bench (CLI), the
ONNX Runtime anchor and the plots. Few rounds, tiny bursts: these check the plumbing and the
arithmetic, not the speed."""

import json
import math
import statistics
from typing import NamedTuple, Optional

import pytest
import torch

from static_runtime import bench, ort
from static_runtime.__main__ import main, parse_input_spec, parse_threads

QUICK = {"rounds": 2, "warmup": 1, "burst_seconds": 0.001}


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _rows(result, threads=1):
    return {row["runtime"]: row for row in result["rows"] if row["threads"] == threads}


def test_compare_measures_every_in_process_runtime_and_ratios_to_ours():
    torch.manual_seed(0)
    result = bench.compare(Tiny(), (torch.randn(2, 8),), threads=(1,), onnxruntime=False, **QUICK)
    rows = _rows(result)
    assert set(rows) == {"eager", "torchscript", "optimize_for_inference", "pytorch_sr", "ours"}
    ours = rows["ours"]["median_us"]
    for row in rows.values():
        assert len(row["samples_us"]) == QUICK["rounds"]
        assert row["median_us"] > 0
        assert math.isclose(row["vs_ours"], row["median_us"] / ours, rel_tol=1e-9)
    assert rows["ours"]["vs_ours"] == 1.0
    # Ours net of its binding: the binding twin timed in the same rounds, paired per round.
    binding = rows["ours"]["binding_samples_us"]
    assert len(binding) == QUICK["rounds"] and min(binding) > 0
    assert math.isclose(rows["ours"]["binding_overhead_us"], statistics.median(binding))
    assert math.isclose(rows["ours"]["net_us"], statistics.median(
        [t - b for t, b in zip(rows["ours"]["samples_us"], binding)]), rel_tol=1e-6)
    assert {"runtime": "onnxruntime", "threads": 1,
            "reason": "switched off (--no-onnxruntime)"} in result["skipped"]
    # What it was measured on travels with the numbers.
    assert result["gemm_backend"]
    assert set(result["environment"]) >= {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}
    assert result["inputs"] == ["2x8:float32"]
    json.loads(json.dumps(result))  # JSON-ready as returned


def test_compare_each_thread_count_and_restores_torch_threads():
    before = torch.get_num_threads()
    result = bench.compare(torch.jit.script(Tiny().eval()), (torch.randn(2, 8),), threads=(1, 2),
                           onnxruntime=False, **QUICK)
    assert torch.get_num_threads() == before
    for threads in (1, 2):
        assert "ours" in _rows(result, threads)
    # A ScriptModule has no eager form to time; that is said, not silently dropped.
    assert any(s["runtime"] == "eager" and "Python module" in s["reason"]
               for s in result["skipped"])


def test_format_table_lists_rows_and_skips():
    result = bench.compare(Tiny(), (torch.randn(2, 8),), onnxruntime=False, **QUICK)
    table = bench.format_table(result)
    for label in ("eager PyTorch", "TorchScript (frozen)", "PyTorch Static Runtime",
                  "static_runtime (ours)", "1.00x"):
        assert label in table
    assert "ONNX Runtime (CPU)" in table and "skipped: switched off" in table
    assert "gemm_backend=" in table and "OPENBLAS_CORETYPE=" in table


def test_onnxruntime_row_when_available():
    try:
        ort.check_available()
    except ort.Unavailable as error:
        pytest.skip(f"ONNX Runtime not available here: {error}")
    result = bench.compare(Tiny(), (torch.randn(2, 8),), **QUICK)
    rows = _rows(result)
    assert "onnxruntime" in rows, result["skipped"]
    assert rows["onnxruntime"]["binding_overhead_us"] > 0
    assert result["versions"]["onnxruntime"]


class TwoOutputs(torch.nn.Module):
    def forward(self, image: torch.Tensor, mask: torch.Tensor):
        pooled = image.mean((2, 3))
        return pooled @ torch.ones(pooled.size(1), 10), mask.sum(1) > 0


def test_binding_twin_returns_the_models_output_shapes_without_its_work():
    """What is subtracted as binding cost converts the model's inputs and outputs, not the inputs
    twice (an identity model's output is as large as its input: 600 KB for an image)."""
    model = TwoOutputs()
    inputs = (torch.randn(2, 3, 32, 32), torch.rand(2, 5) > 0.5)
    outputs = ort.output_tensors(model, inputs)
    twin = ort.BindingTwin(outputs)
    made = twin(*inputs)
    assert [(t.shape, t.dtype) for t in made] == [(t.shape, t.dtype) for t in outputs]
    assert all(t.is_contiguous() for t in made)
    # It reads every input: an exporter drops inputs nothing reads.
    traced = torch.jit.trace(twin, inputs, check_trace=False)
    assert len(list(traced.graph.inputs())) == 1 + len(inputs)
    assert all(len(value.uses()) > 0 for value in list(traced.graph.inputs())[1:])


def test_onnxruntime_unavailable_is_a_reason_not_a_crash(monkeypatch):
    monkeypatch.setenv("SRT_ORT_RUNNER", "/nonexistent/ort_runner.js")
    monkeypatch.setenv("PATH", "/nonexistent")  # no node either
    result = bench.compare(Tiny(), (torch.randn(2, 8),), **QUICK)
    reasons = [s["reason"] for s in result["skipped"] if s["runtime"] == "onnxruntime"]
    assert reasons and "node" in reasons[0]
    assert "ours" in _rows(result)


def test_cli_writes_json_and_plot(tmp_path):
    path = tmp_path / "tiny.pt"
    torch.jit.save(torch.jit.script(Tiny().eval()), str(path))
    out = tmp_path / "result.json"
    argv = ["bench", str(path), "--input", "3x8", "--threads", "1", "--rounds", "2", "--warmup",
            "1", "--burst-ms", "1", "--no-onnxruntime", "--json", str(out)]
    pytest.importorskip("matplotlib")
    argv += ["--plot", str(tmp_path / "bars.png")]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["model"] == "tiny.pt" and result["inputs"] == ["3x8:float32"]
    assert {row["runtime"] for row in result["rows"]} >= {"torchscript", "pytorch_sr", "ours"}
    assert (tmp_path / "bars.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_reads_the_models_example_inputs(tmp_path, capsys):
    path = tmp_path / "tiny.pt"
    torch.jit.save(torch.jit.script(Tiny().eval()), str(path),
                   _extra_files={"srt/example_inputs": "5x8\n"})
    assert main(["bench", str(path), "--threads", "1", "--rounds", "1", "--warmup", "0",
                 "--burst-ms", "1", "--no-onnxruntime"]) == 0
    assert "tiny.pt on 5x8:float32" in capsys.readouterr().out


def test_cli_rejects_bad_arguments(tmp_path, capsys):
    path = tmp_path / "tiny.pt"
    torch.jit.save(torch.jit.script(Tiny().eval()), str(path))
    for bad in (["--input", "8xk"], ["--input", "8:complex"], ["--threads", "0"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["bench", str(path)] + bad)
        assert exit_info.value.code == 2
    assert "expected" in capsys.readouterr().err
    # No --input and no srt/example_inputs in the archive: says what to pass.
    with pytest.raises(SystemExit):
        main(["bench", str(path)])
    assert "--input SHAPE" in capsys.readouterr().err


def test_outputs_agree_relative_to_the_references_scale():
    # Logits up to 8: a 4e-4 rounding difference (inception_v3 in eager PyTorch against frozen
    # TorchScript) on an element near zero is agreement; a result 1% off is not.
    expected = torch.tensor([8.0, -3.0, 0.001])
    bench.assert_agrees(expected + torch.tensor([0.0, 0.0, 4e-4]), expected)
    with pytest.raises(AssertionError, match="largest difference"):
        bench.assert_agrees(expected * 1.01, expected)
    # The bound follows the scale down: tiny outputs are not accepted by an absolute floor.
    tiny = expected * 1e-6
    with pytest.raises(AssertionError):
        bench.assert_agrees(tiny * 1.01, tiny)
    # bfloat16's rounding is relative to the products' operands: measured against at least 1.
    small_logits = expected * 0.1
    bench.assert_agrees(small_logits + 0.04, small_logits, bench.BF16_TOLERANCE,
                        bench.BF16_SCALE_FLOOR)
    with pytest.raises(AssertionError):
        bench.assert_agrees(small_logits + 0.04, small_logits, bench.BF16_TOLERANCE)
    with pytest.raises(AssertionError):
        bench.assert_agrees(torch.tensor([float("nan"), 1.0]), torch.tensor([0.0, 1.0]))
    with pytest.raises(AssertionError):
        bench.assert_agrees(torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(AssertionError):
        bench.assert_agrees(torch.tensor([1, 2]), torch.tensor([1, 3]))
    bench.assert_agrees((torch.zeros(2), torch.tensor([float("nan")])),
                        (torch.zeros(2), torch.tensor([float("nan")])))


class AuxOutputs(NamedTuple):
    logits: torch.Tensor
    aux: Optional[torch.Tensor]


class WithAuxHead(torch.nn.Module):
    """As torchvision writes inception_v3 and googlenet: eager returns the logits alone, the
    scripted module a named tuple whose auxiliary output is None."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    @torch.jit.unused
    def eager_outputs(self, logits: torch.Tensor, aux: Optional[torch.Tensor]) -> torch.Tensor:
        return logits

    def forward(self, x: torch.Tensor):
        logits = self.fc(x)
        aux: Optional[torch.Tensor] = None
        if torch.jit.is_scripting():
            return AuxOutputs(logits, aux)
        return self.eager_outputs(logits, aux)


def test_a_scripted_named_tuple_with_none_matches_its_eager_tensor():
    result = bench.compare(WithAuxHead().eval(), (torch.randn(2, 8),), threads=(1,), **QUICK)
    rows = _rows(result)
    assert {"eager", "torchscript", "optimize_for_inference", "ours"} <= set(rows), \
        result["skipped"]
    # ONNX export drops the None output; where ONNX Runtime runs, its one output is compared.
    assert not any("disagrees" in s["reason"] or "outputs, the module" in s["reason"]
                   for s in result["skipped"]), result["skipped"]


def test_input_specs_and_threads_parse():
    assert parse_input_spec("8x64") == {"shape": [8, 64], "dtype": torch.float32}
    assert parse_input_spec("scalar:int64") == {"shape": [], "dtype": torch.int64}
    assert parse_threads("1,2") == [1, 2]
    with pytest.raises(ValueError, match="dtype"):
        parse_input_spec("2x2:float16")


def test_trace_writes_chrome_trace(tmp_path):
    path = tmp_path / "trace.json"
    events = bench.trace(Tiny(), (torch.randn(2, 8),), str(path), calls=2)
    assert events >= 2
    trace = json.loads(path.read_text())
    # Chrome's trace format is either a bare event array or {"traceEvents": [...]}.
    trace_events = trace if isinstance(trace, list) else trace["traceEvents"]
    names = {event.get("name") for event in trace_events}
    assert {"static_runtime call 0", "static_runtime call 1"} <= names
