"""Writes the model zoo (zoo.py) to a directory for the C++ differential tests.

Usage: /usr/bin/python3 test/models/make_zoo.py OUT_DIR

For every zoo entry NAME it writes:

  NAME.pt         the TorchScript module (scripted, or traced when the entry is not scriptable), saved with the
                  extra file "srt/example_inputs": the first input set as one `DIMxDIM:dtype` line per positional
                  input, or "" when that set has non-tensor inputs.
  NAME.inputs.pt  a scripted holder module carrying the input sets as attributes:
                    num_sets: int                 the number of input sets, S (also what forward() returns)
                    args_<i>: Tuple[...]          i in [0, S): the positional arguments of set i, in order
                                                  (tensors, ints, floats as the model takes them)
                    kwarg_<i>_<name>: <type>      one attribute per keyword argument <name> of set i; absent
                                                  when set i passes that argument positionally or not at all
                  Each keyword argument is its own attribute because a set's keyword values have different types
                  (float and Tensor in kwargs_defaults), which no typed TorchScript Dict can hold. <i> is decimal
                  digits and <name> follows the first "_" after them, so it may itself contain "_".
                  In C++: `auto inputs = torch::jit::load(path);`
                          `inputs.attr("args_0").toTupleRef().elements();`
                          keyword arguments: `inputs.named_attributes(/*recurse=*/false)` filtered on "kwarg_<i>_".
  manifest.txt    one model name per line, in zoo order.

The reference outputs are not written: the C++ tests compute them by running NAME.pt through the JIT.
"""

import argparse
import os
import sys
import time
from typing import Any, Dict, Tuple

import torch

import zoo


class InputSets(torch.nn.Module):
    """Holds the input sets as typed attributes, so LibTorch reads them back without Python pickles."""

    def __init__(self, entry: zoo.ZooEntry) -> None:
        super().__init__()
        self.num_sets = len(entry.inputs)
        for index, (args, kwargs) in enumerate(zip(entry.inputs, entry.kwargs)):
            setattr(self, f"args_{index}", tuple(args))
            for name, value in kwargs.items():
                setattr(self, f"kwarg_{index}_{name}", value)

    def forward(self) -> int:
        return self.num_sets


def _read_back_input_sets(path: str) -> Tuple[list, list]:
    """Loads NAME.inputs.pt the way the C++ reader does: args by name, kwargs by enumerating the attributes."""
    holder = torch.jit.load(path)
    args = [getattr(holder, f"args_{index}") for index in range(holder.num_sets)]
    kwargs: list = [{} for _ in range(holder.num_sets)]
    # The Python twin of C++ Module::named_attributes(/*recurse=*/false).
    for attribute, value in torch._C._jit_debug_module_iterators(holder._c)["named_attributes"]:
        if attribute.startswith("kwarg_"):
            index, _, name = attribute[len("kwarg_") :].partition("_")
            kwargs[int(index)][name] = value
    return args, kwargs


def _same_value(expected: Any, actual: Any) -> bool:
    if isinstance(expected, torch.Tensor):
        return isinstance(actual, torch.Tensor) and expected.dtype == actual.dtype and torch.equal(expected, actual)
    if isinstance(expected, (tuple, list)):
        return len(expected) == len(actual) and all(_same_value(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(_same_value(expected[k], actual[k]) for k in expected)
    return type(expected) is type(actual) and expected == actual


def write_entry(entry: zoo.ZooEntry, out_dir: str) -> None:
    model_path = os.path.join(out_dir, f"{entry.name}.pt")
    torch.jit.save(
        zoo.to_torchscript(entry),
        model_path,
        _extra_files={"srt/example_inputs": zoo.example_input_spec(entry)},
    )
    inputs_path = os.path.join(out_dir, f"{entry.name}.inputs.pt")
    torch.jit.save(torch.jit.script(InputSets(entry)), inputs_path)
    args, kwargs = _read_back_input_sets(inputs_path)
    if not _same_value(entry.inputs, args) or not _same_value(entry.kwargs, kwargs):
        raise RuntimeError(f"{inputs_path}: input sets read back differ from the ones written")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="directory to write NAME.pt, NAME.inputs.pt and manifest.txt into")
    out_dir = parser.parse_args().out_dir
    os.makedirs(out_dir, exist_ok=True)

    start = time.monotonic()
    entries: Dict[str, zoo.ZooEntry] = zoo.entries()
    zoo.check_entries(entries)
    for entry in entries.values():
        write_entry(entry, out_dir)
        kind = "scripted" if entry.scriptable else "traced"
        print(f"{entry.name}: {kind}, {len(entry.inputs)} input sets")
    with open(os.path.join(out_dir, "manifest.txt"), "w") as manifest:
        manifest.writelines(f"{name}\n" for name in entries)
    print(f"wrote {len(entries)} models to {out_dir} in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
