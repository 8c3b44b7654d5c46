"""The side-by-side model benchmarks (benchmarks/side_by_side.py and the scripts on it): their
tables from saved results, the reasons they print for what they could not measure, and the
models they build. Nothing here is timed."""

import copy
import json
import pathlib
import random
import subprocess
import sys

import pytest
import torch

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import random_cnns  # noqa: E402  (needs the path above)
import sequence_models  # noqa: E402


def _run(model: str, description: str, skipped=()) -> dict:
    """A saved run of one model at 1 thread, the shape bench.compare returns; the runtimes in
    `skipped` have no time."""
    missing = {skip["runtime"] for skip in skipped}
    rows = [{"threads": 1, "runtime": runtime, "median_us": us}
            for runtime, us in (("eager", 300.0), ("torchscript", 250.0),
                                ("optimize_for_inference", 240.0), ("pytorch_sr", 230.0),
                                ("onnxruntime", 400.0), ("ours", 200.0))
            if runtime not in missing]
    return {"model": model, "description": description, "result": {
        "date": "2026-11-26 12:00 UTC",
        "machine": {"cpu": "test cpu", "cores": 2, "load_average_1min": 0.5},
        "environment": {"OMP_WAIT_POLICY": "(unset)"}, "gemm_backend": "onednn",
        "versions": {"torch": "1.13", "static_runtime": "0.1.0", "onnxruntime": "1.30.0",
                     "torchvision": "0.14", "torchaudio": "0.13"},
        "method": {"rounds": 2}, "threads": [1], "openblas_threads_set": True,
        "rows": rows, "skipped": list(skipped), "others_busy": 0.02}}


def test_sequence_table_says_why_ort_has_no_time():
    failed = {"threads": 1, "runtime": "onnxruntime",
              "reason": "torch.onnx.export failed: Unsupported: ONNX export of operator foo"}
    wrong = {"threads": 1, "runtime": "pytorch_sr", "reason": "PyTorch Static Runtime disagrees "
             "with the reference: Tensor-likes are not close!"}
    data = {"runs": [_run("lstm", "an LSTM"), _run("vit_b_16", "a ViT", skipped=[failed, wrong])],
            "memory": []}
    text = sequence_models.markdown(data)
    lstm = next(line for line in text.splitlines() if line.startswith("| an LSTM |"))
    assert "| 400 µs | 200 µs | 0.50 |" in lstm
    vit = next(line for line in text.splitlines() if line.startswith("| a ViT |"))
    assert ("| disagrees with the reference: Tensor-likes are not close! | export failed: "
            "Unsupported: ONNX export of operator foo | 200 µs | – |") in vit
    assert "torchaudio 0.13" in text  # what was measured on travels with the table


def test_sequence_memory_table_accounts_above_the_arena():
    mib = 2**20
    rows = [{"model": "transformer_2block", "runtime": "ours", "before": 100 * mib,
             "built": 110 * mib, "warm_peak": 125 * mib, "warm": 116 * mib, "peak": 122 * mib,
             "held": 9 * mib, "file_growth": mib // 2, "arena_bytes": 6 * mib,
             "arena_tensor_bytes": 17 * mib, "arena_scratch_bytes": 6 * mib, "output_bytes": mib},
            {"model": "transformer_2block", "runtime": "onnxruntime",
             "error": "torch.onnx.export failed: no"}]
    text = sequence_models.markdown({"runs": [], "memory": rows})
    assert ("| ours | 110.0 MiB | 10.0 MiB | 15.0 MiB | 12.0 MiB | 9.0 MiB | 0.5 MiB | "
            "6.0 MiB (17.0 MiB + 6.0 MiB) | 1.0 MiB | 5.0 MiB |") in text
    assert "| onnxruntime | failed: torch.onnx.export failed: no |" in text


def test_vision_models_redraws_its_saved_results(tmp_path):
    saved = json.loads((BENCHMARKS / "results" / "vision_models.json").read_text())
    # The table alone: no chart, and a copy so that the committed file is never rewritten.
    path = tmp_path / "vision.json"
    path.write_text(json.dumps(copy.deepcopy(saved)))
    done = subprocess.run([sys.executable, str(BENCHMARKS / "vision_models.py"), "--from-json",
                           str(path), "--plot", ""], capture_output=True, text=True, check=True)
    assert "Produced by `benchmarks/vision_models.py`" in done.stdout
    for run in saved["runs"]:
        assert f"| {run['description']} |" in done.stdout


@pytest.mark.parametrize("name", ["vit_b_16", "wav2vec2_base"])
def test_sequence_models_outputs_are_worth_checking(name):
    """An output check passes anything on an output of zeros: vit_b_16's zero-initialized head
    must have been re-initialized, and wav2vec2 must return one tensor ONNX can export."""
    _, model, inputs = sequence_models.make(name)
    with torch.no_grad():
        output = model(*inputs)
    assert isinstance(output, torch.Tensor)
    assert output.abs().max() > 1e-2


def test_tables_add_the_bf16_column_only_when_it_was_measured():
    plain = _run("lstm", "an LSTM")
    with_bf16 = copy.deepcopy(plain)
    with_bf16["result"]["rows"].append({"threads": 1, "runtime": "ours_bf16", "median_us": 100.0})
    assert "ours bf16" not in sequence_models.markdown({"runs": [plain], "memory": []})
    text = sequence_models.markdown({"runs": [with_bf16], "memory": []})
    header = next(line for line in text.splitlines() if line.startswith("| model"))
    assert "| ours | ours bf16 |" in header and "| ours bf16 / ORT |" in header
    lstm = next(line for line in text.splitlines() if line.startswith("| an LSTM |"))
    # ours 200 µs, ours bf16 100 µs, ORT 400 µs: ours / ORT 0.50, bf16 / ORT 0.25.
    assert "| 200 µs | 100 µs | 0.50 |" in lstm and "| 0.25 |" in lstm


def test_random_cnns_match_eager():
    """benchmarks/random_cnns.py's networks (grouped, dilated, depthwise with a multiplier,
    bottlenecks of few channels, squeeze-excitations, odd channel counts) through ours against
    eager, two shapes each, twice each: the benchmark's own check, untimed."""
    rng = random.Random(7)
    for _ in range(12):
        model, x, other = random_cnns.random_network(rng)
        assert random_cnns.check(model, (x, other)) < 1e-4, random_cnns.describe(model)


def test_memory_workers_import_only_what_their_deployment_needs(tmp_path):
    """Each runtime's memory figures come from a fresh process of benchmarks/memory_worker.py:
    eager's imports the package its pickle names before the baseline is read (torchvision for
    its networks, torch for a Sequential, benchmarks/run_all by its file), not every module the
    benchmark script had imported."""
    import side_by_side
    import torchvision
    assert side_by_side._pickled_module(torchvision.models.resnet18()) == "torchvision"
    assert side_by_side._pickled_module(torch.nn.Sequential(torch.nn.Linear(4, 2))) == "torch"
    name, _, path = side_by_side._pickled_module(side_by_side.run_all.TwoBlockTransformer256()
                                                 ).partition("=")
    assert name == "run_all" and path.endswith("benchmarks/run_all")
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    paths = side_by_side.save_for_memory(model, (torch.randn(3, 16),), str(tmp_path),
                                         ("eager", "ours"))
    for runtime in ("eager", "ours"):
        figures = side_by_side.memory_in_worker(runtime, paths, calls=2, warmup=1)
        assert figures["built"] >= figures["before"] > 0
        assert figures["peak"] > 0 and figures["output_bytes"] == 3 * 8 * 4
    assert "arena_bytes" in figures  # ours' worker reports its plan
    with pytest.raises(RuntimeError, match="unknown|invalid choice"):
        side_by_side.memory_in_worker("tensorrt", dict(paths, tensorrt=paths["ours"]), calls=1)
