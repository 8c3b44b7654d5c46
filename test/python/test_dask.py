"""static_runtime.dask on real Dask clusters (worker processes on loopback): results match the
model run locally, a killed worker's chunks are recomputed, failures name the chunk and the
worker and leave the cluster usable, and a cluster started with dask-scheduler / dask-worker
works the same. Registered as its own ctest (python_dask) with a time limit."""

import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

dask = pytest.importorskip("dask", reason="needs Debian's python3-dask")
da = pytest.importorskip("dask.array", reason="needs Debian's python3-dask")
db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed", reason="needs Debian's python3-distributed")

import static_runtime.dask as srt_dask  # noqa: E402

FEATURES = 16


class Mlp(torch.nn.Module):
    def __init__(self, hidden: int = 64, outputs: int = 4) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(FEATURES, hidden)
        self.fc2 = torch.nn.Linear(hidden, outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class Deep(torch.nn.Module):
    def __init__(self, hidden: int = 512, outputs: int = 8) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(FEATURES, hidden)
        self.fc2 = torch.nn.Linear(hidden, hidden)
        self.fc3 = torch.nn.Linear(hidden, outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class RowSums(torch.nn.Module):
    """(N, 4, 8) -> (N,): the output has fewer dimensions than the input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1).sum(1) * 2.0


class Pair(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + 2.0 * b


def _save(module: torch.nn.Module, path) -> str:
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dask_models")
    torch.manual_seed(0)
    return {
        "mlp": _save(Mlp(), directory / "mlp.pt"),
        # ~1 MB of weights and some ms per 512-row chunk: long enough to kill a worker mid-job.
        "big": _save(Deep(), directory / "big.pt"),
        "row_sums": _save(RowSums(), directory / "row_sums.pt"),
        "pair": _save(Pair(), directory / "pair.pt"),
    }


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0")
    with distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        yield client
    cluster.close()


def _local(path: str, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return torch.jit.load(path)(torch.from_numpy(x)).numpy()


def _random(rows: int, chunk: int, *shape: int) -> da.Array:
    # Seeds are fixed when the graph is built: a recomputed chunk has the same values.
    return da.random.RandomState(0).standard_normal((rows,) + shape,
                                                    chunks=(chunk,) + shape).astype(np.float32)


def test_two_workers_match_local_model(client, models):
    x = _random(1000, 128, FEATURES)
    y = srt_dask.predict(models["mlp"], x)
    assert y.chunks == (x.chunks[0], (4,))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.compute(), _local(models["mlp"], x.compute()),
                               rtol=1e-5, atol=1e-5)
    # Every worker that served chunks loaded the model once, into a pool of one runtime per
    # worker thread (1 here).
    loaded = client.run(srt_dask.cached_models)
    for worker, entries in loaded.items():
        mine = [entry for entry in entries if entry["path"] == models["mlp"]]
        assert len(mine) <= 1, (worker, entries)
        for entry in mine:
            assert entry["num_runtimes"] == 1 and entry["num_created"] == 1, entry
    assert sum(len(entries) for entries in loaded.values()) >= 1


def test_graph_carries_the_path_not_the_weights(client, models):
    x = _random(4096, 512, FEATURES)
    y = srt_dask.predict(models["big"], x, output_shape=(8,), dtype=np.float32)
    graph_bytes = len(pickle.dumps(dict(y.__dask_graph__())))
    assert os.path.getsize(models["big"]) > 1_000_000
    assert graph_bytes < 100_000, graph_bytes


def test_output_with_fewer_dimensions_and_options(client, models):
    x = _random(300, 100, 4, 8)
    y = srt_dask.predict(models["row_sums"], x, gemm_backend="aten", disabled_passes=[])
    assert y.shape == (300,) and y.chunks == ((100, 100, 100),)
    np.testing.assert_allclose(y.compute(), _local(models["row_sums"], x.compute()),
                               rtol=1e-5, atol=1e-4)


def test_bag_of_tuples_and_dicts(client, models):
    torch.manual_seed(1)
    pairs = [(torch.randn(3, 5), torch.randn(3, 5)) for _ in range(7)]
    as_tuples = db.from_sequence(pairs, npartitions=3)
    as_dicts = db.from_sequence([{"a": a, "b": b} for a, b in pairs], npartitions=2)
    for bag in (as_tuples, as_dicts):
        results = srt_dask.predict_bag(models["pair"], bag).compute()
        assert len(results) == len(pairs)
        for (a, b), result in zip(pairs, results):
            torch.testing.assert_close(result, a + 2.0 * b)


def test_input_chunked_along_other_dimensions_is_refused(models):
    x = da.zeros((100, FEATURES), chunks=(50, 8), dtype=np.float32)
    with pytest.raises(ValueError, match=r"first dimension only.*rechunk"):
        srt_dask.predict(models["mlp"], x)


def _still_usable(client, models) -> None:
    x = _random(256, 64, FEATURES)
    np.testing.assert_allclose(srt_dask.predict(models["mlp"], x).compute(),
                               _local(models["mlp"], x.compute()), rtol=1e-5, atol=1e-5)


def _worker_addresses(client):
    return set(client.scheduler_info()["workers"])


def test_bad_model_path_names_chunk_and_worker(client, models, tmp_path):
    missing = str(tmp_path / "missing.pt")
    x = _random(200, 100, FEATURES)
    # Layout given: no probe, so the chunks themselves find the path missing.
    y = srt_dask.predict(missing, x, output_shape=(4,), dtype=np.float32)
    with pytest.raises(srt_dask.ChunkError) as raised:
        y.compute()
    message = str(raised.value)
    assert "missing.pt" in message and "No such file" in message, message
    assert "chunk " in message and "rows " in message, message
    assert any(address in message for address in _worker_addresses(client)), message
    # Without the layout the probe fails first, and says so.
    with pytest.raises(srt_dask.ChunkError, match=r"probe .* on worker tcp://127\.0\.0\.1"):
        srt_dask.predict(missing, x)
    _still_usable(client, models)


def test_wrongly_shaped_chunk_names_chunk_and_worker(client, models):
    # An array whose third chunk is not what it claims to be (e.g. a reader that got the
    # feature count wrong): the chunk is refused before the model sees it.
    good = np.zeros((100, FEATURES), np.float32)
    bad = np.zeros((100, FEATURES - 1), np.float32)
    pieces = [da.from_delayed(dask.delayed(lambda v: v)(piece), (100, FEATURES),
                              dtype=np.float32) for piece in (good, good, bad, good)]
    x = da.concatenate(pieces)
    y = srt_dask.predict(models["mlp"], x, output_shape=(4,), dtype=np.float32)
    with pytest.raises(srt_dask.ChunkError,
                       match=r"chunk 2 \(rows 200:300\) on worker tcp://127\.0\.0\.1:\d+: the "
                       r"chunk has shape \(100, 15\), but the array declares \(100, 16\)"):
        y.compute()

    # An array that is what it claims but not what the model takes: the model's own error,
    # with the chunk and the worker.
    x = da.zeros((200, FEATURES + 3), chunks=(100, FEATURES + 3), dtype=np.float32)
    y = srt_dask.predict(models["mlp"], x, output_shape=(4,), dtype=np.float32)
    with pytest.raises(srt_dask.ChunkError) as raised:
        y.compute()
    message = str(raised.value)
    assert "the model failed on the chunk (shape (100, 19), float32)" in message, message
    assert "on worker tcp://127.0.0.1:" in message, message
    assert "Exception raised from" not in message  # no C++ backtrace
    _still_usable(client, models)


def test_killed_worker_result_is_complete(client, models):
    x = _random(24 * 512, 512, FEATURES)
    expected = _local(models["big"], x.compute())
    y = srt_dask.predict(models["big"], x, output_shape=(8,), dtype=np.float32).persist()
    futures = distributed.futures_of(y)
    deadline = time.monotonic() + 120
    while sum(f.done() for f in futures) < 3:
        assert time.monotonic() < deadline, "no chunk finished in 120 s"
        time.sleep(0.02)
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    done_at_kill = sum(f.done() for f in futures)
    os.kill(pids[victim], signal.SIGKILL)
    print(f"killed {victim} (pid {pids[victim]}) with {done_at_kill}/{len(futures)} chunks done")

    result = y.compute()
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)
    assert result.shape == (24 * 512, 8)
    # The nanny restarts the worker; the next test gets its two workers back.
    client.wait_for_workers(2, timeout=120)


def _wait_for_file(path: str, process: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert process.poll() is None, f"{process.args[0]} exited with {process.returncode}"
        assert time.monotonic() < deadline, f"{path} did not appear in {seconds} s"
        time.sleep(0.1)


def test_cluster_started_from_the_command_line(models, tmp_path):
    scheduler_file = str(tmp_path / "scheduler.json")
    bin_dir = os.path.dirname(os.path.realpath(sys.executable))
    processes = []
    try:
        scheduler = subprocess.Popen(
            [os.path.join(bin_dir, "dask-scheduler"), "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", scheduler_file],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(scheduler)
        _wait_for_file(scheduler_file, scheduler, 60)
        worker = subprocess.Popen(
            [os.path.join(bin_dir, "dask-worker"), "--scheduler-file", scheduler_file,
             "--nworkers", "2", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(worker)
        with distributed.Client(scheduler_file=scheduler_file, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            assert all(address.startswith("tcp://127.0.0.1:")
                       for address in _worker_addresses(client))
            x = _random(512, 128, FEATURES)
            np.testing.assert_allclose(srt_dask.predict(models["mlp"], x).compute(),
                                       _local(models["mlp"], x.compute()), rtol=1e-5,
                                       atol=1e-5)
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGINT)
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
