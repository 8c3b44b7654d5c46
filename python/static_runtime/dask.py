"""static_runtime on Dask: batch inference for data that outgrows one machine.

    import dask.array as da
    from distributed import Client
    import static_runtime.dask

    client = Client("tcp://scheduler:8786")          # or distributed.LocalCluster()
    x = da.from_zarr(...).rechunk({0: 4096, 1: -1})  # chunked along the first dimension only
    y = static_runtime.dask.predict("/shared/model.pt", x, gemm_backend="openblas")
    y.to_zarr(...)                                   # or y.compute()

The task graph holds the model's path, never its weights: each worker process loads the model
once (a cache keyed by path, file modification time and options) into a RuntimePool with one
runtime per worker thread, and serves every chunk it is given from that pool. The path must
therefore be readable on every worker (a shared file system, or the same file on each machine).
Dask itself recomputes the chunks of a worker that dies; a chunk that fails raises ChunkError
naming the chunk, its rows and the worker.
"""

import os
import socket
import threading
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

import dask
import dask.array as da
import dask.bag as db
import numpy as np
import torch

import static_runtime

# predict()'s keywords that size the pool rather than configure the StaticModule.
_POOL_OPTIONS = ("num_runtimes", "intra_op_threads")

OptionsKey = Tuple[Tuple[str, Hashable], ...]


class ChunkError(RuntimeError):
    """A chunk (or bag partition) failed on a worker; the message says which, where and why."""


def predict(model: "os.PathLike[str] | str", x: da.Array, *,
            output_shape: Optional[Sequence[int]] = None, dtype: Any = None,
            **options: Any) -> da.Array:
    """The model's output for x, chunk by chunk on the workers, as a lazy dask array.

    model: path of a TorchScript archive (torch.jit.save), readable on every worker.
    x: dask array chunked along its first dimension only (x.rechunk({1: -1, ...}) otherwise);
    each chunk is one call of forward, whose single tensor output keeps the chunk's rows.
    options: StaticModule keywords (gemm_backend=..., disabled_passes=[...], ...), plus
    num_runtimes (default: the worker's thread count) and intra_op_threads (default 1: the
    worker's threads already run chunks in parallel).
    output_shape (the output's dimensions after the first) and dtype: the output's layout; when
    either is missing one worker runs the model on a single row of zeros to learn it.
    Returns an array with x's chunks along the first dimension.
    """
    if not isinstance(x, da.Array):
        raise TypeError(f"predict(): x must be a dask.array.Array, got {type(x).__name__}")
    if x.ndim < 1 or any(len(chunks) != 1 for chunks in x.chunks[1:]):
        raise ValueError(
            f"predict(): x must be chunked along its first dimension only, got chunks "
            f"{tuple(len(c) for c in x.chunks)} per dimension; rechunk with "
            f"x.rechunk({{{', '.join(f'{d}: -1' for d in range(1, x.ndim))}}})")
    path = os.path.abspath(os.fspath(model))
    key = _options_key(options)

    if output_shape is None or dtype is None:
        probed_shape, probed_dtype = dask.delayed(_probe, pure=True)(
            path, key, tuple(x.shape[1:]), str(x.dtype)).compute()
        output_shape = probed_shape if output_shape is None else output_shape
        dtype = probed_dtype if dtype is None else dtype
    output_shape = tuple(int(d) for d in output_shape)
    dtype = np.dtype(dtype)

    out_ndim = 1 + len(output_shape)
    extra = {}
    if out_ndim < x.ndim:
        extra["drop_axis"] = list(range(out_ndim, x.ndim))
    elif out_ndim > x.ndim:
        extra["new_axis"] = list(range(x.ndim, out_ndim))
    return x.map_blocks(
        _predict_block, path, key, dtype=dtype,
        chunks=(x.chunks[0],) + tuple((d,) for d in output_shape),
        meta=np.empty((0,) * out_ndim, dtype=dtype),
        name="static_runtime-predict-" + dask.base.tokenize(x, path, _mtime(path), key),
        **extra)


def predict_bag(model: "os.PathLike[str] | str", inputs: db.Bag, **options: Any) -> db.Bag:
    """forward on every element of a bag, for models whose inputs are not one array: an element
    is a tuple or list (positional arguments), a dict (keyword arguments) or a single tensor.
    The result holds what forward returns (tensors, tuples, dicts), element by element.
    options: as for predict()."""
    if not isinstance(inputs, db.Bag):
        raise TypeError(f"predict_bag(): inputs must be a dask.bag.Bag, got "
                        f"{type(inputs).__name__}")
    path = os.path.abspath(os.fspath(model))
    key = _options_key(options)
    run = dask.delayed(_predict_partition, pure=True)
    return db.from_delayed([run(part, path, key, index)
                            for index, part in enumerate(inputs.to_delayed())])


def cached_models() -> List[Dict[str, Any]]:
    """What this process has loaded (call on workers with client.run): path, options,
    num_runtimes and num_created per cached model."""
    with _lock:
        return [{"path": path, "options": dict(key), "num_runtimes": pool.num_runtimes,
                 "num_created": pool.num_created}
                for (path, _, key), pool in _pools.items()]


def _mtime(path: str) -> Optional[int]:
    # In the graph's name, so that a rewritten model is not taken for results Dask already has;
    # the client may not see the workers' file system.
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _options_key(options: Dict[str, Any]) -> OptionsKey:
    # Sorted and hashable: the cache key on the workers, and part of the graph's token.
    def freeze(value: Any) -> Hashable:
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(sorted(value) if isinstance(value, (set, frozenset)) else value)
        return value
    return tuple(sorted((name, freeze(value)) for name, value in options.items()))


# The per-process cache: (path, mtime_ns, options) -> RuntimePool. The lock makes a worker whose
# threads all start on the same model load it once.
_lock = threading.Lock()
_pools: Dict[Tuple[str, int, OptionsKey], static_runtime.RuntimePool] = {}


def _worker_threads() -> int:
    try:
        from distributed import get_worker
        worker = get_worker()
        state = getattr(worker, "state", worker)
        return int(state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return dask.config.get("num_workers", None) or os.cpu_count() or 1


def _worker_name() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"pid {os.getpid()} on {socket.gethostname()} (no distributed worker)"


def _pool(path: str, key: OptionsKey) -> static_runtime.RuntimePool:
    mtime = os.stat(path).st_mtime_ns  # a rewritten file at the same path is a new model
    with _lock:
        pool = _pools.get((path, mtime, key))
        if pool is None:
            options = dict(key)
            num_runtimes = options.pop("num_runtimes", None) or _worker_threads()
            intra_op_threads = options.pop("intra_op_threads", 1)
            module = static_runtime.StaticModule(
                path, **{name: list(value) if isinstance(value, tuple) else value
                         for name, value in options.items()})
            pool = static_runtime.RuntimePool(module, num_runtimes,
                                              intra_op_threads=intra_op_threads)
            _pools[(path, mtime, key)] = pool
    return pool


def _loaded_pool(path: str, key: OptionsKey, where: str) -> static_runtime.RuntimePool:
    try:
        return _pool(path, key)
    except Exception as error:  # the cause, whatever it is, goes back to the client in the text
        raise ChunkError(f"static_runtime.dask: {where}: cannot load model {path!r} with "
                         f"options {dict(key)}: {_message(error)}") from error


def _owned(output: Any, key: OptionsKey) -> Any:
    # With manage_output_tensors the runtime reuses an output's memory on its next run.
    if dict(key).get("manage_output_tensors") and isinstance(output, torch.Tensor):
        return output.clone()
    return output


def _message(error: BaseException) -> str:
    text = str(error).strip()
    # c10::Error texts end in a C++ backtrace after the first line; the first lines say it.
    return text.split("\nException raised from")[0].strip() or type(error).__name__


def _probe(path: str, key: OptionsKey, row_shape: Tuple[int, ...],
           dtype: str) -> Tuple[Tuple[int, ...], str]:
    where = f"probe (one row of zeros, shape {(1,) + row_shape}) on worker {_worker_name()}"
    pool = _loaded_pool(path, key, where)
    try:
        output = pool(torch.zeros((1,) + row_shape, dtype=_torch_dtype(dtype)))
    except Exception as error:
        raise ChunkError(f"static_runtime.dask: {where}: the model failed: "
                         f"{_message(error)}") from error
    _check_output(output, 1, where)
    return tuple(output.shape[1:]), str(output.numpy().dtype)


def _torch_dtype(numpy_dtype: str) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=numpy_dtype)).dtype


def _check_output(output: Any, rows: int, where: str) -> None:
    if not isinstance(output, torch.Tensor):
        raise ChunkError(f"static_runtime.dask: {where}: predict() needs a model returning one "
                         f"tensor, got {type(output).__name__}; use predict_bag for others")
    if output.dim() < 1 or output.shape[0] != rows:
        raise ChunkError(f"static_runtime.dask: {where}: the output has shape "
                         f"{tuple(output.shape)}, expected its first dimension to be the "
                         f"chunk's {rows} rows")


def _predict_block(block: np.ndarray, path: str, key: OptionsKey,
                   block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
    info = block_info[0]
    start, stop = info["array-location"][0]
    where = (f"chunk {info['chunk-location'][0]} (rows {start}:{stop}) on worker "
             f"{_worker_name()}")
    declared = tuple(stop - start for start, stop in info["array-location"])
    if block.shape != declared:
        raise ChunkError(f"static_runtime.dask: {where}: the chunk has shape {block.shape}, but "
                         f"the array declares {declared}")
    pool = _loaded_pool(path, key, where)
    # from_numpy shares memory; it needs a writable, C-contiguous array (np.require copies if not).
    tensor = torch.from_numpy(np.require(block, requirements=["C", "W"]))
    try:
        output = pool(tensor)
    except Exception as error:
        raise ChunkError(f"static_runtime.dask: {where}: the model failed on the chunk "
                         f"(shape {block.shape}, {block.dtype}): {_message(error)}") from error
    _check_output(output, stop - start, where)
    return _owned(output, key).numpy()


def _predict_partition(elements: Sequence[Any], path: str, key: OptionsKey,
                       partition: int) -> List[Any]:
    where = f"partition {partition} on worker {_worker_name()}"
    pool = _loaded_pool(path, key, where)
    results = []
    for index, element in enumerate(elements):
        try:
            if isinstance(element, dict):
                output = pool(**element)
            elif isinstance(element, (tuple, list)):
                output = pool(*element)
            else:
                output = pool(element)
        except Exception as error:
            raise ChunkError(f"static_runtime.dask: {where}, element {index}: the model "
                             f"failed: {_message(error)}") from error
        results.append(_owned(output, key))
    return results
