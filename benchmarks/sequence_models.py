#!/usr/bin/python3
"""Transformer and recurrent models on every runtime, side by side: eager, TorchScript (frozen),
optimize_for_inference, PyTorch's Static Runtime, ONNX Runtime CPU and ours.

Usage (from the repository root, after the build; for ONNX Runtime, once:
`cd benchmarks && npm install --ignore-scripts`):

    /usr/bin/python3 benchmarks/sequence_models.py --memory            # everything, see below
    /usr/bin/python3 benchmarks/sequence_models.py --models lstm,encoder_layer --threads 1 \\
        --wait-policy default --rounds 5                              # a subset
    /usr/bin/python3 benchmarks/sequence_models.py \\
        --from-json benchmarks/results/sequence_models.json           # redraw table and chart only

Models, random weights:
  vit_b_16       torchvision's ViT-B/16 on 1x3x224x224. torchvision initializes the classifier
                 head to zero, so every runtime would return zeros and pass the output check
                 whatever it computed: the head gets nn.Linear's default initialization instead.
  wav2vec2_base  torchaudio.models.wav2vec2_base() on 1 s of 16 kHz audio (1x16000), its
                 features only: the model returns (features, lengths) with lengths None when
                 none are given, and an ONNX graph has no None output (the export had 1 output
                 against the module's 2, and ONNX Runtime's output check failed). Every runtime
                 runs the same wrapper. PyTorch 1.13's Static Runtime returns wrong features
                 (max error 5 on outputs of standard deviation 1), and its cell says so instead
                 of a time: its aten::layer_norm out-variant ignores the strides of a
                 non-contiguous input, here the feature extractor's transposed output (fixed
                 upstream in 2024, pytorch/pytorch#124789).
  lstm           benchmarks/recurrent.py's classifier: a 2-layer bidirectional LSTM 64->128 and
                 a Linear 256->10 on the last step, on 1x32x64.
  encoder_layer  nn.TransformerEncoderLayer(256, 4, batch_first=True), eval mode, on 8x128x256.
                 Eager runs under torch.no_grad, hence its fused fast path
                 (aten::_transformer_encoder_layer_fwd), as an inference user would get it; that
                 op has no ONNX export, and static_runtime.ort exports with autograd on, which
                 makes the layer take its plain-op path: only the export sees it, the module is
                 the same.
  decoder_layer  nn.TransformerDecoderLayer(256, 4, batch_first=True), eval mode, on a target of
                 8x128x256, a memory of 8x128x256 and the causal float mask of
                 nn.Transformer.generate_square_subsequent_mask(128), as a decoder is called: its
                 nn.MultiheadAttention modules take their slow path (masked self-attention,
                 cross-attention).
Every model goes through static_runtime.bench.compare at each of --threads (default 1,2): outputs
checked against TorchScript's (ONNX Runtime's too), then medians over interleaved rounds, ONNX
Runtime net of its node binding's per-call cost. A runtime that cannot run a model is reported
with the reason (e.g. "export failed: ..." in the ORT column), never dropped.

--wait-policy both (default) measures once with OMP_WAIT_POLICY as found and once more, at the
thread counts above 1, in a child process started with OMP_WAIT_POLICY=PASSIVE.

--memory adds, at 1 thread, two pre-LN transformer blocks (d=256, 4 heads, ffn 1024: run_all's
TwoBlockTransformer256) on 8x128x256 on each runtime (eager, ours, PyTorch's Static Runtime,
ONNX Runtime) in a fresh process: resident size after building the model, then the peak RSS
growth over 1 warm-up call and over the 20 calls after it, what malloc still holds after them
and the library pages they touched; for ours also the arena (its tensors and kernel scratch)
and the output's size, so that the growth above the arena can be accounted for.

Writes all samples to --json (default benchmarks/results/sequence_models.json), the chart of ours,
ONNX Runtime and optimize_for_inference relative to ONNX Runtime to --plot (default
benchmarks/results/sequence_models.png), and prints the markdown table.
"""
import argparse
import tempfile

import side_by_side as common  # first: it puts the static_runtime build on sys.path

import torch  # noqa: E402
import torchaudio  # noqa: E402
import torchvision  # noqa: E402
from torch import nn  # noqa: E402

from recurrent import Classifier  # noqa: E402 - benchmarks/recurrent.py

MODELS = ("vit_b_16", "wav2vec2_base", "lstm", "encoder_layer", "decoder_layer")
MEMORY_MODEL = "transformer_2block"
MEMORY_DESCRIPTION = "2 pre-LN blocks d=256, 4 heads, 8×128×256"
MEMORY_RUNTIMES = ("eager", "ours", "pytorch_sr", "onnxruntime")
MEMORY_WARMUP = 1
MEMORY_CALLS = 20


class Wav2Vec2Features(nn.Module):
    """wav2vec2's features without the lengths (None here), which ONNX cannot return."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
        return self.model(waveforms)[0]


def _vit_b_16() -> nn.Module:
    model = torchvision.models.vit_b_16()
    model.heads.head.reset_parameters()  # torchvision's zeros make every output 0
    return model


class CausalDecoderLayer(nn.Module):
    """A decoder layer called as a decoder is: the target, the encoder's memory, a causal mask."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(256, 4, batch_first=True)

    def forward(self, target: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.layer(target, memory, tgt_mask=mask)


def _wav2vec2_base() -> nn.Module:
    return Wav2Vec2Features(torchaudio.models.wav2vec2_base())


def _random(*shape):
    """Inputs of these shapes, drawn from a generator of its own (the same whatever ran before)."""

    def inputs(generator: torch.Generator) -> tuple:
        return tuple(torch.randn(*size, generator=generator) for size in shape)

    return inputs


def _decoder_inputs(generator: torch.Generator) -> tuple:
    target, memory = _random((8, 128, 256), (8, 128, 256))(generator)
    return target, memory, nn.Transformer.generate_square_subsequent_mask(target.size(1))


# name -> (description, model factory, inputs from a generator)
CASES = {
    "vit_b_16": ("torchvision vit_b_16, 1×3×224×224", _vit_b_16, _random((1, 3, 224, 224))),
    "wav2vec2_base": ("torchaudio wav2vec2_base, 1 s of 16 kHz audio (1×16000)", _wav2vec2_base,
                      _random((1, 16000))),
    "lstm": ("2-layer bidirectional LSTM 64→128 + Linear, 1×32×64",
             lambda: Classifier("LSTM"), _random((1, 32, 64))),
    "encoder_layer": ("nn.TransformerEncoderLayer(256, 4), 8×128×256",
                      lambda: nn.TransformerEncoderLayer(256, 4, batch_first=True),
                      _random((8, 128, 256))),
    "decoder_layer": ("nn.TransformerDecoderLayer(256, 4), causal mask, 8×128×256 + memory "
                      "8×128×256", CausalDecoderLayer, _decoder_inputs),
    MEMORY_MODEL: (MEMORY_DESCRIPTION, common.run_all.TwoBlockTransformer256,
                   _random((8, 128, 256))),
}


def inputs_of(name: str):
    """The model's inputs, the same for a given name, without building the model."""
    return CASES[name][2](torch.Generator().manual_seed(1))


def make(name: str):
    """(description, eval-mode module, inputs), the same for a given name."""
    description, factory, _ = CASES[name]
    torch.manual_seed(0)
    return description, factory().eval(), inputs_of(name)


def measure(args) -> list:
    """Every model through bench.compare in this process, OMP_WAIT_POLICY as found."""
    runs = []
    versions = {"torchvision": torchvision.__version__, "torchaudio": torchaudio.__version__}
    for name in args.models:
        description, model, inputs = make(name)
        result = common.compare(model, inputs, args, name, versions)
        runs.append({"model": name, "description": description, "result": result})
    return runs


def measure_passive(args) -> list:
    """measure() in a child process started with OMP_WAIT_POLICY=PASSIVE, threads above 1."""
    return common.measure_passive(__file__, args)


def _memory_figures(runtime: str, paths: dict) -> dict:
    """One runtime's figures from its own fresh process."""
    if runtime == "onnxruntime":
        _, model, inputs = make(MEMORY_MODEL)
        return common.memory_onnxruntime(model, inputs, MEMORY_CALLS, MEMORY_WARMUP)
    return common.memory_in_worker(runtime, paths, MEMORY_CALLS, MEMORY_WARMUP)


def measure_memory(args) -> list:
    runtimes = [runtime for runtime in MEMORY_RUNTIMES
                if not (runtime == "onnxruntime" and args.no_onnxruntime)]
    with tempfile.TemporaryDirectory() as directory:
        _, model, inputs = make(MEMORY_MODEL)
        paths = common.save_for_memory(model, inputs, directory, runtimes)
        return [common.memory_row(lambda: _memory_figures(runtime, paths), model=MEMORY_MODEL,
                                  runtime=runtime)
                for runtime in runtimes]


def markdown(data) -> str:
    runs = data["runs"]
    lines = []
    if runs:
        first = runs[0]["result"]
        machine = first["machine"]
        loads = [r["result"]["machine"]["load_average_1min"] for r in runs]
        env = ", ".join(f"`{k}={v}`" for k, v in first["environment"].items()
                        if k != "OMP_WAIT_POLICY")
        openblas = ("OpenBLAS's pool (openblas_set_num_threads), "
                    if first.get("openblas_threads_set") else "")
        lines += [
            f"Produced by `benchmarks/sequence_models.py` on {first['date']}: {machine['cpu']}, "
            f"{machine['cores']} cores, load average {min(loads):.1f}–{max(loads):.1f} while it "
            f"ran; {common.versions_text(runs)} with `gemm_backend={first['gemm_backend']}`; "
            f"environment as found: {env}. Each thread count is given to torch.set_num_threads, "
            f"{openblas}ours (RuntimePool intra_op_threads) and ONNX Runtime (intraOpNumThreads, "
            f"interOpNumThreads 1). Median time per call over {first['method']['rounds']} "
            "interleaved rounds, through each runtime's Python (ORT: node) API, ORT's per-call "
            "binding cost subtracted; random weights (vit_b_16's zero-initialized head "
            "re-initialized), outputs checked against TorchScript's first. Eager runs under "
            "torch.no_grad (nn.TransformerEncoderLayer: its fused fast path). **ours / ORT** and "
            "**ours / optimize_for_inference**: ours' time divided by theirs (below 1: ours is "
            "faster). **others busy**: the share of the CPUs other processes used while that row "
            "was measured (above a few %, distrust the 2-thread figures). Full samples: "
            "`benchmarks/results/sequence_models.json`.",
            "",
        ]
        lines += common.timing_tables(runs, skips_in_cells=True)
    if data.get("memory"):
        lines += _memory_markdown(data["memory"])
    return "\n".join(lines)


def _memory_markdown(rows) -> list:
    mib = common.mib
    lines = [f"**Memory**: {MEMORY_DESCRIPTION} (run_all's TwoBlockTransformer256), 1 thread, "
             f"each runtime in a fresh process, {MEMORY_WARMUP} warm-up call, then "
             f"{MEMORY_CALLS} calls. Each runtime loads the model from a file, as a deployment "
             "would: eager the pickled module (torch.load), ours the TorchScript archive "
             "(StaticModule(path)), PyTorch SR the same archive frozen "
             "(torch._C._jit_to_static_module), ORT the .onnx export. **RSS after build**: the "
             "process's resident size once the model is ready to run (Python + torch, with "
             "static_runtime for ours and for eager, whose pickle names run_all, which imports "
             "it; node + ONNX Runtime for ORT: compare the growths); **build growth**: that minus the RSS "
             "just before building. **Peak growth**, over the warm-up call and over the "
             f"{MEMORY_CALLS} calls after it: the high-water mark minus the RSS after build. "
             "**malloc holds**: bytes glibc's malloc had handed out after the calls and not "
             "after the build (what a runtime keeps allocated; not library pages or OpenBLAS's "
             "own buffers); **library pages**: the growth of the process's file-backed RSS over "
             "the calls, code and data of shared libraries first used by them (oneDNN's, say). "
             "**ours' arena**: the planned buffer every call reuses (its tensors "
             "and kernel scratch, which overlap in it, in brackets); **output**: the returned "
             "tensor, allocated per call; **above arena + output**: ours' peak growth over the "
             f"{MEMORY_CALLS} calls minus both.", "",
             "| runtime | RSS after build | build growth | peak growth, warm-up | peak growth, "
             f"{MEMORY_CALLS} calls | malloc holds | library pages | ours' arena (tensors + "
             "scratch) | output | above arena + output |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['runtime']} | failed: {row['error']} | | | | | | | | |")
            continue
        growth = row["peak"] - row["built"]
        warm = mib(row["warm_peak"] - row["built"]) if "warm_peak" in row else "–"
        held = mib(row["held"]) if "held" in row else "–"
        files = mib(row["file_growth"]) if "file_growth" in row else "–"
        arena = above = "–"
        if "arena_bytes" in row:
            arena = mib(row["arena_bytes"])
            if "arena_tensor_bytes" in row:
                arena += (f" ({mib(row['arena_tensor_bytes'])} + "
                          f"{mib(row['arena_scratch_bytes'])})")
            if "output_bytes" in row:
                above = mib(growth - row["arena_bytes"] - row["output_bytes"])
        output = mib(row["output_bytes"]) if "output_bytes" in row else "–"
        lines.append(f"| {row['runtime']} | {mib(row['built'])} | "
                     f"{mib(row['built'] - row['before'])} | {warm} | {mib(growth)} | {held} | "
                     f"{files} | {arena} | {output} | {above} |")
    return lines + [""]


def plot(data, path: str) -> None:
    """One panel per (wait policy, threads): ours, ORT and optimize_for_inference per model as
    time / ORT's, the 0.9 target drawn."""
    common.plot(data, path, "sequence_models.py", lambda run: run["model"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_model_argument(parser, MODELS)
    common.add_run_arguments(parser, "sequence_models",
                             f"also the RSS figures of {MEMORY_DESCRIPTION} on each runtime")
    args = parser.parse_args()
    args.models = common.parse_list(args.models)
    args.threads = common.parse_list(args.threads, int)
    unknown = set(args.models) - set(MODELS)
    if unknown:
        parser.error(f"unknown model(s) {sorted(unknown)}; expected some of {list(MODELS)}")
    common.run(args, measure, measure_passive, measure_memory, markdown, plot)


if __name__ == "__main__":
    main()
