"""One runtime's memory figures, measured in a fresh process that imports only what a deployment
of that runtime imports: torch, static_runtime for ours, and for eager whatever unpickling the
module brings in (torchvision, for its networks). The side-by-side scripts start it through
side_by_side.memory_in_worker; it is not meant to be run by hand.

Why a script of its own: run from the model scripts, every worker had imported torchvision,
torchaudio and static_runtime alike, 19 MiB of resident pages (torchvision alone 15.4) that ours
does not use and eager's TorchScript-free deployment does not need static_runtime for, so "RSS
after build" compared processes neither deployment would run.

    memory_worker.py RUNTIME MODEL_PATH INPUTS_PATH CALLS WARMUP [--module NAME[=FILE] ...]

RUNTIME is eager (MODEL_PATH a pickled module, torch.load), ours (a TorchScript archive,
static_runtime.StaticModule) or pytorch_sr (the same archive, frozen, PyTorch's Static Runtime);
INPUTS_PATH a torch.save'd tuple of inputs; --module imports a module before the RSS before
building is read, from FILE when it is not importable by name (benchmarks/run_all has no .py
suffix): the package eager's pickle names, so that the build's growth is the model's and RSS
after build the whole deployment's. Prints one JSON line of
figures, in bytes: before (RSS before building), built, built_anon_growth (anonymous RSS the
build added: the model's own memory, not library pages), peak (high-water mark during the calls,
reset after the build). With WARMUP > 0 the peak is reset again after that many calls, and
their high-water mark and the RSS after them are given too (warm_peak, warm), the bytes malloc
holds after the calls that it did not after the build (held), and the pages of files, i.e.
shared libraries' code and data, the calls made resident (file_growth).

The caller sets OPENBLAS_NUM_THREADS=1 in the environment: torch.set_num_threads does not reach
Debian's OpenBLAS, and the one-thread comparison would otherwise give eager a pool of every
core's buffers.
"""
import argparse
import ctypes
import gc
import importlib.machinery
import importlib.util
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _status_bytes(key: str) -> int:
    """A /proc/self/status figure (VmRSS, VmHWM, RssAnon, RssFile) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_peak() -> None:
    """Resets VmHWM to the current RSS (Linux >= 4.0), so the peak is that of what follows and
    not of the build (scripting and freezing can take more than a call)."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def _tensor_bytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(_tensor_bytes(item) for item in value)
    return 0


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _malloc_held() -> int:
    """Bytes glibc's malloc has handed out and not got back (heap and mmapped chunks), or -1
    without mallinfo2 (glibc < 2.33). Unlike RSS it sees memory held but not touched, and not
    what the calls touch outside malloc (library pages, OpenBLAS's own buffers)."""
    libc = ctypes.CDLL("libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        return -1
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def import_module(name: str, path: str = ""):
    """The module `name`, from the file `path` if given, registered in sys.modules so that
    unpickling (and inspect, for scripting) finds it."""
    if not path:
        return importlib.import_module(name)
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def _build(runtime: str, path: str):
    """(call, StaticModule or None) for the model at `path` on `runtime`."""
    if runtime == "eager":
        model = torch.load(path)

        def call(*args):
            with torch.no_grad():
                return model(*args)
        return call, None
    if runtime == "pytorch_sr":
        frozen = torch.jit.freeze(torch.jit.load(path).eval())
        return torch._C._jit_to_static_module(frozen._c), None
    if runtime == "ours":
        sys.path.insert(0, os.environ.get("SRT_PYTHONPATH", os.path.join(ROOT, "build", "python")))
        import static_runtime
        module = static_runtime.StaticModule(path)
        return module, module
    raise ValueError(f"unknown runtime {runtime!r}; expected eager, pytorch_sr or ours")


def measure(runtime: str, path: str, inputs, calls: int, warmup: int = 0) -> dict:
    """The figures of the module docstring, at one intra-op thread."""
    torch.set_num_threads(1)
    before = _status_bytes("VmRSS")
    before_anon = _status_bytes("RssAnon")
    call, module = _build(runtime, path)
    # Loading frees temporaries into glibc's heap, where the calls would find them without
    # growing RSS: collect, then hand them back, for every runtime alike.
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    figures = {"before": before, "built": _status_bytes("VmRSS"),
               "built_anon_growth": _status_bytes("RssAnon") - before_anon}
    held, file_pages = _malloc_held(), _status_bytes("RssFile")
    _reset_peak()
    if warmup:
        for _ in range(warmup):
            call(*inputs)
        figures.update(warm_peak=_status_bytes("VmHWM"), warm=_status_bytes("VmRSS"))
        _reset_peak()
    output_bytes = 0
    for _ in range(calls):
        output_bytes = _tensor_bytes(call(*inputs))  # dropped at once, as a caller would
    figures["peak"] = _status_bytes("VmHWM")
    if warmup:
        figures["file_growth"] = _status_bytes("RssFile") - file_pages
        if held >= 0:
            figures["held"] = _malloc_held() - held
    if module is not None:
        stats = module.stats()
        figures["arena_bytes"] = stats["managed_bytes"]
        if warmup:  # what fills the arena, and what ours allocates outside it
            plan = module.memory_plan()
            figures.update(
                output_bytes=output_bytes,
                arena_tensor_bytes=sum(b["bytes"] for b in plan if b["kind"] == "tensor"),
                arena_scratch_bytes=sum(b["bytes"] for b in plan if b["kind"] == "scratch"),
                unmanaged_tensors=stats["num_unmanaged_tensors"],
                unplanned_scratch_requests=stats["unplanned_scratch_requests"])
    elif warmup:
        figures["output_bytes"] = output_bytes
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runtime", choices=("eager", "ours", "pytorch_sr"))
    parser.add_argument("model_path")
    parser.add_argument("inputs_path")
    parser.add_argument("calls", type=int)
    parser.add_argument("warmup", type=int)
    parser.add_argument("--module", action="append", default=[], metavar="NAME[=FILE]")
    args = parser.parse_args()
    for entry in args.module:
        name, _, path = entry.partition("=")
        import_module(name, path)
    inputs = torch.load(args.inputs_path)
    print(json.dumps(measure(args.runtime, args.model_path, inputs, args.calls, args.warmup)))


if __name__ == "__main__":
    main()
