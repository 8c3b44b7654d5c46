"""Rows per second of static_runtime.dask.predict on a LocalCluster of 1 and 2 worker processes
(1 thread each, loopback), against eager PyTorch with the same weights in the same workers.

Usage (from the repository root, after the build):
    /usr/bin/python3 benchmarks/dask_throughput.py [--workers 1 2] [--rows 65536] [--chunk 512]

The input is generated and persisted on the workers before timing; a row is the best of
--repeats runs of `persist + wait` of the whole output (so results stay on the workers, as they
would before a to_zarr), after one untimed run that loads the models. Both sides run 1 intra-op
thread per worker thread; the workers' own threads are the parallelism. Outputs are checked
against each other before timing.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# After a PYTHONPATH given (ctest gives its build directory's); worker processes import it too.
sys.path.append(os.path.join(ROOT, "build", "python"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    + [os.path.join(ROOT, "build", "python")])

import dask.array as da  # noqa: E402
import distributed  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import static_runtime.dask  # noqa: E402


class Mlp(torch.nn.Module):
    def __init__(self, features: int, hidden: int, outputs: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, hidden)
        self.fc3 = torch.nn.Linear(hidden, outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def eager_block(block: np.ndarray, path: str, sizes: tuple) -> np.ndarray:
    # Eager PyTorch's side of the comparison: the nn.Module with the archive's weights, built
    # once per worker (kept on the worker object; this function is shipped by value).
    worker = distributed.get_worker()
    cache = worker.__dict__.setdefault("_eager_models", {})
    if path not in cache:
        torch.set_num_threads(1)
        module = Mlp(*sizes).eval()
        module.load_state_dict(torch.jit.load(path).state_dict())
        cache[path] = module
    with torch.inference_mode():
        return cache[path](torch.from_numpy(np.require(block, requirements=["C", "W"]))).numpy()


def best_rows_per_second(make, x, rows: int, repeats: int) -> float:
    # Each run gets distinct keys (x + run: fused into the same task as the model call), else
    # the scheduler hands back results it still holds from the previous run.
    distributed.wait(make(x + np.float32(-1)).persist())  # loads the model on every worker
    best = float("inf")
    for run in range(repeats):
        start = time.perf_counter()
        result = make(x + np.float32(run)).persist()
        distributed.wait(result)
        best = min(best, time.perf_counter() - start)
        del result
    return rows / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rows", type=int, default=65536)
    parser.add_argument("--chunk", type=int, default=512)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="/tmp/srt_dask_throughput_mlp.pt")
    args = parser.parse_args()

    sizes = (args.features, args.hidden, 10)
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(Mlp(*sizes).eval()), args.model)
    print(f"model: MLP {args.features}-{args.hidden}-{args.hidden}-10, {args.rows} rows in "
          f"chunks of {args.chunk}; 1 thread per worker, best of {args.repeats}")
    print(f"{'workers':>8} {'static_runtime rows/s':>22} {'eager PyTorch rows/s':>21} "
          f"{'ratio':>6}")
    for workers in args.workers:
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0") as cluster, \
                distributed.Client(cluster) as client:
            client.wait_for_workers(workers)
            x = da.random.RandomState(0).standard_normal(
                (args.rows, args.features), chunks=(args.chunk, args.features)).astype(np.float32)
            x = x.persist()
            distributed.wait(x)

            def ours(x):
                return static_runtime.dask.predict(args.model, x, output_shape=(10,),
                                                   dtype=np.float32)

            def eager(x):
                return x.map_blocks(eager_block, args.model, sizes, dtype=np.float32,
                                    chunks=(x.chunks[0], (10,)))

            head = x[: 2 * args.chunk]
            np.testing.assert_allclose(ours(head).compute(), eager(head).compute(),
                                       rtol=1e-4, atol=1e-4)
            ours_rate = best_rows_per_second(ours, x, args.rows, args.repeats)
            eager_rate = best_rows_per_second(eager, x, args.rows, args.repeats)
            print(f"{workers:>8} {ours_rate:>22,.0f} {eager_rate:>21,.0f} "
                  f"{ours_rate / eager_rate:>6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
