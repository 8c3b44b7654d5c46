"""Differential tests: static_runtime against the TorchScript interpreter on every zoo model.

Every input set runs twice on the same StaticModule (the second run reuses the first run's
state), results match within fp32 tolerance, and arguments are left untouched.
"""

import pytest

import static_runtime
from conftest import (
    INVALID_OPTION_COMBOS,
    VALID_OPTION_COMBOS,
    ZOO_NAMES,
    options_id,
    run_and_compare,
)

# The full option matrix runs on models that cover the features the options change: views and
# copies (copy variants), many intermediates (memory planning), container and scalar outputs
# (output management), control flow, keyword arguments and in-place ops.
MATRIX_MODELS = [
    name
    for name in (
        "mlp",
        "transformer_block",
        "deep_and_wide",
        "cnn",
        "view_chain",
        "chunk",
        "dict_output",
        "scalar_output",
        "kwargs_defaults",
        "loop_on_value",
        "inplace_ops",
    )
    if name in ZOO_NAMES
]


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_zoo_default_options(zoo_case, name):
    case = zoo_case(name)
    run_and_compare(static_runtime.StaticModule(case.scripted), case)


@pytest.mark.parametrize("options", VALID_OPTION_COMBOS, ids=options_id)
@pytest.mark.parametrize("name", MATRIX_MODELS)
def test_zoo_option_matrix(zoo_case, name, options):
    case = zoo_case(name)
    module = static_runtime.StaticModule(case.scripted, **options)
    assert {name: module.options[name] for name in options} == options
    # Managed outputs are only lent to the caller until the next run.
    run_and_compare(module, case, keep_results=not options["manage_output_tensors"])


@pytest.mark.parametrize("options", INVALID_OPTION_COMBOS, ids=options_id)
def test_invalid_option_combination_is_rejected(zoo_case, options):
    case = zoo_case("mlp")
    with pytest.raises(RuntimeError, match="requires enable_out_variant"):
        static_runtime.StaticModule(case.scripted, **options)


def test_option_matrix_counts():
    # 16 combinations with out variants on, 4 without (copy-variant flags only).
    assert len(VALID_OPTION_COMBOS) == 20
    assert len(INVALID_OPTION_COMBOS) == 12
