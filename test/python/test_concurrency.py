"""Several Python threads sharing one StaticModule (the GIL is released while the model runs)."""

import threading

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


class WaitForFlag(torch.nn.Module):
    """Marks that it started, then spins until the caller raises the flag or the limit runs out."""

    def forward(self, started: torch.Tensor, flag: torch.Tensor, limit: int) -> int:
        started.fill_(1.0)
        spins = 0
        while bool(flag[0] == 0.0) and spins < limit:
            spins += 1
        return spins


def test_gil_is_released_while_running():
    # The main thread can only see `started` and raise the flag while another thread is inside a
    # call if that call released the GIL; holding it, the call spins until its limit. Whether the
    # flag arrived in time decides, not how long anything took, so a busy machine cannot fail it.
    module = static_runtime.StaticModule(torch.jit.script(WaitForFlag()))
    limit = 5_000_000  # seconds of spinning: far more than a running main thread needs
    started = torch.zeros(1)
    flag = torch.zeros(1)
    result = {}
    thread = threading.Thread(target=lambda: result.update(spins=module(started, flag, limit)))
    thread.start()
    while started[0] == 0.0 and thread.is_alive():
        pass
    flag.fill_(1.0)
    thread.join(timeout=600)
    assert not thread.is_alive(), "the call did not return"
    assert result["spins"] < limit, "the flag never reached the call: it held the GIL while running"
