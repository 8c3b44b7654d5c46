"""Requests per second when several client threads share one model: our RuntimePool of N runtimes,
one of our runtimes behind a mutex, and PyTorch's built-in Static Runtime, called from the same
threads in the same process.

Usage (from the repository root, after the build):
    /usr/bin/python3 benchmarks/throughput.py [--seconds 2] [--clients 1 2 4]
                                              [--model mlp transformer_block deep_and_wide]

Each client thread calls the model in a loop for --seconds; a row is total completed calls per
second, the median of --repeats such windows. Every runtime runs with 1 intra-op thread, so the
clients are the only parallelism. Results are checked against eager PyTorch before timing.
"""
import argparse
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import torch  # noqa: E402

import static_runtime  # noqa: E402
import zoo  # noqa: E402


def runners(entry, clients):
    """name -> callable(*inputs), each safe to call from `clients` threads at once."""
    scripted = torch.jit.script(entry.module.eval())
    module = static_runtime.StaticModule(scripted)
    pool = static_runtime.RuntimePool(module, num_runtimes=clients, intra_op_threads=1)
    single = static_runtime.RuntimePool(module, num_runtimes=1, intra_op_threads=1)
    pytorch_sr = torch._C._jit_to_static_module(torch.jit.freeze(scripted)._c)
    pytorch_lock = threading.Lock()

    def pytorch_static_runtime(*args):
        # PyTorch's StaticModule call is not documented thread-safe; callers serialize it.
        with pytorch_lock:
            return pytorch_sr(*args)

    return {
        f"ours: pool of {clients}": pool,
        "ours: 1 runtime, mutex": single,
        "PyTorch SR, mutex": pytorch_static_runtime,
    }


def measure(run, inputs, clients, seconds):
    done = [0] * clients
    stop = threading.Event()

    def client(index):
        while not stop.is_set():
            run(*inputs)
            done[index] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(done) / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--model", nargs="+", default=["mlp", "transformer_block", "deep_and_wide"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    entries = zoo.entries()
    env = ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"))
    print(f"# throughput, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, 1 intra-op thread "
          f"per runtime, {env}; requests/s, median of {args.repeats} windows of {args.seconds}s")
    for name in args.model:
        entry = entries[name]
        inputs = entry.inputs[0]
        with torch.no_grad():
            expected = entry.module(*inputs)
        print(f"\n{name} {[tuple(t.shape) for t in inputs]}")
        print(f"  {'runtime':<26}" + "".join(f"{c:>3} client(s)" for c in args.clients))
        table = {}
        for clients in args.clients:
            for label, run in runners(entry, clients).items():
                torch.testing.assert_close(run(*inputs), expected, rtol=1e-4, atol=1e-4)
                key = label.replace(f"pool of {clients}", "pool of N")
                rates = [measure(run, inputs, clients, args.seconds) for _ in range(args.repeats)]
                table.setdefault(key, []).append(statistics.median(rates))
        for label, rates in table.items():
            print(f"  {label:<26}" + "".join(f"{rate:>14.0f}" for rate in rates))


if __name__ == "__main__":
    main()
