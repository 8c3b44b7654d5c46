"""Several Python threads sharing one StaticModule (the GIL is released while the model runs)."""

import threading
import time

import pytest
import torch

import static_runtime
from conftest import assert_same

THREADS = 4
CALLS = 50


@pytest.mark.parametrize("name", ["transformer_block", "loop_on_value"])
def test_threads_share_one_module(zoo_case, name):
    case = zoo_case(name)
    module = static_runtime.StaticModule(case.scripted)
    barrier = threading.Barrier(THREADS)
    errors = []

    def worker(thread_index: int) -> None:
        try:
            barrier.wait()
            for call in range(CALLS):
                # Threads interleave input sets so runtimes see shapes change between runs.
                index = (thread_index + call) % len(case.inputs)
                actual = module(*case.inputs[index], **case.kwargs[index])
                assert_same(case.expected[index], actual, f"thread {thread_index} call {call}")
        except BaseException as error:  # noqa: B902 - reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    assert not errors, errors[0]


def test_threads_with_errors_do_not_poison_the_module(zoo_case):
    case = zoo_case("mlp")
    module = static_runtime.StaticModule(case.scripted)
    errors = []

    def worker(thread_index: int) -> None:
        try:
            for call in range(CALLS):
                if (thread_index + call) % 3 == 0:
                    with pytest.raises(RuntimeError, match=r"linear .*zoo.py:\d+"):
                        module(torch.randn(2, 7))
                else:
                    assert_same(case.expected[0], module(*case.inputs[0]), f"thread {thread_index} call {call}")
        except BaseException as error:  # noqa: B902
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[0]


class Spin(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        y = x
        for _ in range(n):
            y = torch.tanh(y) + x
        return y


def test_gil_is_released_while_running():
    # While another thread is inside a call, the main thread keeps running Python. Had the call held
    # the GIL, the main thread would stall for the whole call: its longest pause would be the call's
    # duration. Retried because a loaded machine can pause a thread on its own.
    scripted = torch.jit.script(Spin())
    module = static_runtime.StaticModule(scripted)
    x = torch.randn(4)
    n = 20000
    start = time.perf_counter()
    expected = module(x, n)
    duration = time.perf_counter() - start
    assert_same(scripted(x, n), expected)

    longest_pauses = []
    for _ in range(3):
        finished = threading.Event()
        thread = threading.Thread(target=lambda: (module(x, n), finished.set()))
        last = time.perf_counter()
        longest = 0.0
        thread.start()
        while not finished.is_set():
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
        thread.join()
        longest_pauses.append(longest)
        if longest < duration / 2:
            return
    pytest.fail(f"the main thread stalled for {longest_pauses} s during calls of {duration:.3f} s")
