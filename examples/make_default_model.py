"""Regenerates examples/default_model.pt, the model the `srt` tools run when no model is given.

Usage: /usr/bin/python3 examples/make_default_model.py [OUT_PATH]   (default: default_model.pt next to this file)

The default model is the zoo's `transformer_2block`: two pre-LayerNorm transformer encoder blocks in plain ops
(d_model 64, 4 heads, FFN 256), the workload the runtime's attention and memory-planning work targets, and small
enough (~0.4 MB) to commit. Its example input travels inside the file as the extra file "srt/example_inputs", one
`DIMxDIM:dtype` line per positional input, so tools can run it without being told a shape.
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "models"))

import zoo  # noqa: E402  (found through the sys.path entry above)

MODEL_NAME = "transformer_2block"


def main() -> int:
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "default_model.pt")
    entry = zoo.entries()[MODEL_NAME]
    zoo.check_entries({MODEL_NAME: entry})
    spec = zoo.example_input_spec(entry)
    torch.jit.save(zoo.to_torchscript(entry), out_path, _extra_files={"srt/example_inputs": spec})
    print(f"wrote {MODEL_NAME} to {out_path} ({os.path.getsize(out_path)} bytes), example inputs: {spec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
