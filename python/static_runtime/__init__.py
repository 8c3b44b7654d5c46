"""Static Runtime: runs a TorchScript module as a flat, pre-planned program.

Example::

    import torch
    import static_runtime

    model = torch.jit.script(MyModel().eval())
    fast = static_runtime.StaticModule(model)   # or StaticModule("model.pt", optimize_memory=False)
    y = fast(x)
    print(fast.stats())
"""

# torch first: _C converts Tensors and ScriptModules with the pybind11 casters torch._C registers,
# and links against libtorch_python, which must already be initialized.
import torch  # noqa: F401

from static_runtime._C import IndividualMetrics, RuntimePool, StaticModule, __version__, pass_names

__all__ = ["IndividualMetrics", "RuntimePool", "StaticModule", "__version__", "pass_names"]
