"""Serving from Python: RuntimePool, run_async, run(inputs, outputs), disabled passes."""

import threading

import pytest
import torch

import static_runtime
import zoo


def _mlp():
    entry = zoo.entries()["mlp"]
    return entry.module, static_runtime.StaticModule(torch.jit.script(entry.module))


def test_run_async_returns_a_torch_future():
    eager, module = _mlp()
    x = torch.randn(3, 64)
    future = module.run_async(x)
    assert isinstance(future, torch._C.Future)
    result = future.wait()
    assert future.done()
    with torch.no_grad():
        torch.testing.assert_close(result, eager(x))


def test_run_async_raises_the_error_on_wait():
    _, module = _mlp()
    future = module.run_async(torch.randn(3, 7))
    with pytest.raises(RuntimeError, match="linear|mat1 and mat2|shape"):
        future.wait()
    # The module keeps working.
    assert module(torch.randn(2, 64)).shape == (2, 10)


def test_run_with_lists_dicts_and_preallocated_outputs():
    eager, module = _mlp()
    assert module.input_names == ["x"]
    assert module.output_names == ["output_0"]
    x = torch.randn(5, 64)
    with torch.no_grad():
        expected = eager(x)
    torch.testing.assert_close(module.run([x]), expected)
    torch.testing.assert_close(module.run({"x": x}), expected)
    buffer = torch.full((8, 10), float("nan"))
    shapes = module.run([x], [buffer])
    assert shapes == [(5, 10)]
    torch.testing.assert_close(buffer.view(-1)[:50].view(5, 10), expected)
    shapes = module.run({"x": x[:2]}, {"output_0": buffer})
    assert shapes == [(2, 10)]
    with pytest.raises(RuntimeError, match="output 'output_0' holds 4 elements"):
        module.run([x], [torch.empty(4)])
    with pytest.raises(TypeError, match="both as lists or both as dicts"):
        module.run([x], {"output_0": buffer})


def test_runtime_pool_serves_threads_and_blocks_at_its_size():
    eager, module = _mlp()
    pool = static_runtime.RuntimePool(module, num_runtimes=2, intra_op_threads=1)
    inputs = [torch.randn(n, 64) for n in (1, 4, 9)]
    with torch.no_grad():
        expected = [eager(x) for x in inputs]
    failures = []

    def client(offset):
        for i in range(100):
            k = (offset + i) % len(inputs)
            if not torch.allclose(pool(inputs[k]), expected[k], atol=1e-5):
                failures.append(k)

    threads = [threading.Thread(target=client, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert pool.num_runtimes == 2
    assert 1 <= pool.num_created <= 2
    assert pool.intra_op_threads == 1
    pool.intra_op_threads = 2
    torch.testing.assert_close(pool.run_async(inputs[0]).wait(), expected[0])
    with pytest.raises(RuntimeError, match="intra_op_threads must be >= 0"):
        pool.intra_op_threads = -1


class _SqueezeAndChain(torch.nn.Module):
    """A squeeze-excitation scaling and a fused element-wise chain, large enough to split."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * torch.sigmoid(x.mean((2, 3), keepdim=True))
        return torch.tanh(y) * 0.5 + y


def test_runtime_pool_own_workers_split_kernels_and_match_eager():
    # Convolutions in pieces, element-wise ranges, pooling and the classifier's single-row product
    # in slices.
    torch.manual_seed(0)
    eager = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=1, groups=32), torch.nn.Hardswish(),
        torch.nn.Conv2d(32, 64, 1), _SqueezeAndChain(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(64, 1000)).eval()
    module = static_runtime.StaticModule(torch.jit.script(eager))
    pool = static_runtime.RuntimePool(module, num_runtimes=2, intra_op_threads=2, workers="own")
    assert pool.workers == "own"
    inputs = [torch.randn(1, 3, 64, 48), torch.randn(3, 3, 66, 70)]
    with torch.no_grad():
        expected = [eager(x) for x in inputs]
    failures = []

    def client(offset):
        for i in range(20):
            k = (offset + i) % len(inputs)
            if not torch.allclose(pool(inputs[k]), expected[k], atol=1e-4, rtol=1e-4):
                failures.append(k)

    threads = [threading.Thread(target=client, args=(t,)) for t in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    pool.intra_op_threads = 1  # keeps the workers setting
    assert pool.workers == "own"
    torch.testing.assert_close(pool(inputs[0]), expected[0], atol=1e-4, rtol=1e-4)
    assert static_runtime.RuntimePool(module, 1).workers == "auto"
    with pytest.raises(RuntimeError, match='workers must be "auto", "openmp" or "own", got "omp"'):
        static_runtime.RuntimePool(module, 1, workers="omp")


_OWN_WORKERS_UNDER_POLICY = """
import torch, static_runtime
module = static_runtime.StaticModule(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 4))))
for workers in ("auto", "own"):
    static_runtime.RuntimePool(module, 1, intra_op_threads=2, workers=workers)(torch.randn(2, 4))
    print("ran", workers, flush=True)
"""


@pytest.mark.parametrize("policy,warned", [("ACTIVE", True), ("PASSIVE", False)])
def test_own_workers_warn_once_where_openmp_threads_never_sleep(policy, warned):
    # Read once per process, so each policy runs in a process of its own; "auto" never warns.
    import os
    import subprocess
    import sys
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    done = subprocess.run([sys.executable, "-c", _OWN_WORKERS_UNDER_POLICY], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ran", "auto", "ran", "own"]
    assert ('workers="own" with OpenMP\'s threads set never to sleep' in done.stderr) == warned, \
        done.stderr


def test_disabled_passes_option_and_pass_reports():
    names = static_runtime.pass_names()
    assert "dead_code" in names
    eager, _ = _mlp()
    module = static_runtime.StaticModule(torch.jit.script(eager), disabled_passes=["dead_code"])
    assert module.options["disabled_passes"] == ["dead_code"]
    reports = {report["name"]: report for report in module.stats()["passes"]}
    assert set(reports) == set(names)
    assert reports["dead_code"]["ran"] is False
    with pytest.raises(RuntimeError, match="unknown pass 'nope'"):
        static_runtime.StaticModule(torch.jit.script(eager), disabled_passes=["nope"])
    with pytest.raises(TypeError, match="list or set of pass names"):
        static_runtime.StaticModule(torch.jit.script(eager), disabled_passes="dead_code")


def test_unbound_constants_are_set_after_build():
    eager, _ = _mlp()
    module = static_runtime.StaticModule(torch.jit.script(eager), unbound_constants=["fc2.weight"])
    assert module.options["unbound_constants"] == ["fc2.weight"]
    x = torch.randn(3, 64)
    with pytest.raises(RuntimeError, match="not set yet: fc2.weight"):
        module(x)
    module.set_constant("fc2.weight", eager.fc2.weight.detach())
    with torch.no_grad():
        torch.testing.assert_close(module(x), eager(x))
    with pytest.raises(RuntimeError, match="not an unbound constant"):
        module.set_constant("fc1.weight", eager.fc1.weight.detach())
    with pytest.raises(TypeError, match="list or set of attribute names"):
        static_runtime.StaticModule(torch.jit.script(eager), unbound_constants="fc2.weight")
