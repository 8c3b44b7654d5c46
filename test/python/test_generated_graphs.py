"""Generated-graph property test: random TorchScript programs, static_runtime against the JIT.

graph_generator.py writes programs that mix element-wise, matmul/linear, reduction and view ops with
lists, tuples and dicts and with `if`/`for` blocks, each valid for any input shape. Every program
runs through a StaticModule with default options (out variants and the memory planner on) and
through the TorchScript interpreter, on inputs of shape A, A, B, B, A (so the planner re-plans):
outputs must match, what earlier calls returned must survive the later ones, and inputs must stay
untouched. The pattern this exists for: a tensor stored in a container early and read much later,
after the planner could have given its memory to another tensor.

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -s test/python/test_generated_graphs.py
    SRT_GENERATED_PROGRAMS=5000 SRT_GENERATED_SEED=7 ...   a longer run
    SRT_GENERATED_INDEX=42 ...                             only program 42, e.g. to reproduce a failure

With -s, the summary (programs checked, passed, failed, refused) is printed; if the runtime crashes
the process, run with -s in a terminal: the last "program N" shown is the one that did it.
"""

import os
import sys
from collections import Counter
from typing import Optional

import pytest
import torch

import graph_generator
import static_runtime
from conftest import assert_same, assert_unchanged, clone_tree

PROGRAMS = int(os.environ.get("SRT_GENERATED_PROGRAMS", "400"))
SEED = int(os.environ.get("SRT_GENERATED_SEED", "0"))
ONLY_INDEX = os.environ.get("SRT_GENERATED_INDEX")
REFUSAL_MARKERS = ("cannot run", "not supported")
MAX_REPORTED = 3  # failures shown with their source; the others by index


class JitError(Exception):
    """The reference itself raised on a program that compiles."""


def _run_program(program: graph_generator.Program, **options) -> Optional[str]:
    """Checks one program; returns why the runtime refused it (None if it ran); raises on a mismatch."""
    function = graph_generator.compile_program(program.source)  # fails only on a generator bug
    runs = [program.inputs(run) for run in range(len(program.shapes))]
    # The plain interpreter: the profiling executor of torch 1.13 re-specializes the graph on the
    # second call and then raises "Expected Tensor but got None" on some programs.
    try:
        with torch.no_grad(), torch.jit.optimized_execution(False):
            expected = [function(*args) for args in runs]
    except RuntimeError as error:
        raise JitError(str(error).splitlines()[-1]) from error
    try:
        module = static_runtime.StaticModule(function, **options)
    except RuntimeError as error:
        if any(marker in str(error) for marker in REFUSAL_MARKERS):
            return str(error).splitlines()[0]
        raise
    returned = []
    for run, args in enumerate(runs):
        where = f"run {run} (rows, cols = {program.shapes[run]})"
        before = clone_tree(args)
        actual = module(*args)
        assert_same(expected[run], actual, where)
        assert_unchanged(before, args, f"{where} input")
        returned.append(actual)
    for run, actual in enumerate(returned):
        assert_same(expected[run], actual, f"run {run}, checked again after the last run")
    return None


def _describe_failure(index: int, program: graph_generator.Program, error: Exception) -> str:
    # Whether it also fails without the memory planner tells a planner bug from a kernel bug.
    try:
        without_planner = "passes" if _run_program(program, optimize_memory=False) is None else "is refused"
    except Exception as other:
        without_planner = f"fails too ({type(other).__name__})"
    return (f"program {index}: {type(error).__name__}: {error}\n"
            f"with optimize_memory=False it {without_planner}\n"
            f"rerun: SRT_GENERATED_SEED={SEED} SRT_GENERATED_INDEX={index}\n{program.source}")


def test_generated_programs():
    indices = [int(ONLY_INDEX)] if ONLY_INDEX is not None else list(range(PROGRAMS))
    refusals: Counter = Counter()
    jit_errors = {}  # programs the reference itself fails on (a torch bug, see _run_program)
    failures = {}
    progress = sys.stdout.isatty()  # a crash ends the process before any report
    for index in indices:
        if progress:
            print(f"\rprogram {index}", end="", flush=True)
        program = graph_generator.generate(SEED, index)
        try:
            refusal = _run_program(program)
        except JitError as error:
            jit_errors[index] = str(error)
            continue
        except Exception as error:  # a mismatch, or an error raised by the runtime
            failures[index] = _describe_failure(index, program, error)
            continue
        if refusal is not None:
            refusals[refusal] += 1
    skipped = sum(refusals.values()) + len(jit_errors)
    summary = (f"generated programs (seed {SEED}): {len(indices)} checked, "
               f"{len(indices) - skipped - len(failures)} passed, {len(failures)} failed, "
               f"{sum(refusals.values())} refused by the runtime, {len(jit_errors)} failing in the JIT")
    print("\n" + summary)
    for reason, count in refusals.most_common():
        print(f"  refused {count}x: {reason}")
    for index, message in jit_errors.items():
        print(f"  JIT error in program {index}: {message}")
    if failures:
        pytest.fail(f"{summary}; failing: {sorted(failures)}\n\n"
                    + "\n\n".join(list(failures.values())[:MAX_REPORTED]), pytrace=False)
    # Programs that do not run test nothing: a few are tolerated, more mean a generator bug.
    assert skipped <= len(indices) // 100, summary
