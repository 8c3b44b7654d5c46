"""One batch-1 sequence through a 2-layer bidirectional LSTM (or GRU) 64->128 with a linear head,
input 1x32x64, on one thread: static_runtime vs eager PyTorch vs TorchScript, interleaved.

Usage (from the repository root, after the build):
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 benchmarks/recurrent.py [--kind GRU]

Prints, per runner, the median wall time of one call (calls interleaved across runners, so load
on a shared machine hits them alike) and the median CPU time of the calling thread per call
(time.thread_time, which a loaded machine disturbs less), and ratios against ours. Results are
checked against eager PyTorch first.
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import static_runtime  # noqa: E402


class Classifier(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.rnn = getattr(nn, kind)(64, 128, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", default="LSTM", choices=["LSTM", "GRU", "RNN"])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Classifier(args.kind).eval()
    x = torch.randn(1, 32, 64)
    ours = static_runtime.StaticModule(torch.jit.script(model))
    scripted = torch.jit.script(model)
    runners = {"static_runtime": lambda: ours(x), "eager": lambda: model(x),
               "torchscript": lambda: scripted(x)}
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x), atol=1e-5, rtol=1e-4)
        for run in runners.values():
            for _ in range(10):
                run()
        wall = {name: [] for name in runners}
        cpu = {name: [] for name in runners}
        for _ in range(args.calls):
            for name, run in runners.items():
                start_wall, start_cpu = time.perf_counter(), time.thread_time()
                run()
                wall[name].append(time.perf_counter() - start_wall)
                cpu[name].append(time.thread_time() - start_cpu)
    fallbacks = ours.stats()["fallback_ops"]
    print(f"{args.kind} 2x bidirectional 64->128 + linear, input 1x32x64, "
          f"{torch.get_num_threads()} thread; our fallbacks: {fallbacks}")
    ours_wall = statistics.median(wall["static_runtime"])
    ours_cpu = statistics.median(cpu["static_runtime"])
    for name in runners:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:15s} wall {w * 1e6:8.1f} us  cpu {c * 1e6:8.1f} us  "
              f"ours/this wall {ours_wall / w:5.2f}x cpu {ours_cpu / c:5.2f}x")


if __name__ == "__main__":
    main()
