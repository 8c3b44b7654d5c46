import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch

__version__: str

def pass_names() -> List[str]:
    """Names of the optimization passes, in the order they run; any can go in disabled_passes."""
    ...

class StaticModule:
    """A TorchScript module prepared once into an immutable program; calls are thread-safe."""

    def __init__(
        self,
        module_or_path: Union[torch.jit.ScriptModule, torch.jit.ScriptFunction, str, bytes, os.PathLike],
        *,
        enable_out_variant: bool = ...,
        optimize_memory: bool = ...,
        manage_output_tensors: bool = ...,
        use_copy_variants: bool = ...,
        use_maybe_copy_variants: bool = ...,
        gemm_backend: str = ...,
        memory_planner: str = ...,
        disabled_passes: Iterable[str] = ...,
        unbound_constants: Iterable[str] = ...,
    ) -> None:
        """Prepares `forward` of a ScriptModule (or a scripted function, whose argument defaults are not
        kept), or of the module saved at a path. optimize_memory and manage_output_tensors require
        enable_out_variant."""
        ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs forward; returns what forward returns (tensor, tuple, list, dict or scalar)."""
        ...
    def stats(self) -> Dict[str, Any]:
        """Kernel counts ("nodes", "out_variant_nodes", "native_nodes", "fallback_nodes",
        "fallback_ops"), planned memory ("managed_bytes", "managed_lower_bound_bytes") and what each
        optimization pass did ("passes": name, ran, changed, nodes_before, nodes_after)."""
        ...
    def run(
        self,
        inputs: Union[Sequence[torch.Tensor], Dict[str, torch.Tensor]],
        outputs: Optional[Union[Sequence[torch.Tensor], Dict[str, torch.Tensor]]] = None,
    ) -> Any:
        """Without outputs: forward(*inputs) or forward(**inputs). With outputs (preallocated,
        contiguous, same dtype, large enough): writes each tensor output into them and returns
        the actual shapes."""
        ...
    def set_constant(self, name: str, value: torch.Tensor) -> None:
        """Supplies an unbound constant (unbound_constants=[...]) by attribute name, e.g.
        "fc1.weight"; every runtime of the module uses it from its next run."""
        ...
    def run_async(self, *args: Any, **kwargs: Any) -> torch.futures.Future:
        """Runs forward on ATen's inter-op pool; wait() returns the outputs or raises the error."""
        ...
    @property
    def input_names(self) -> List[str]:
        """forward's parameter names."""
        ...
    @property
    def output_names(self) -> List[str]:
        """output_0, output_1, ...: the names run(inputs, outputs) uses."""
        ...
    @property
    def graph(self) -> str:
        """The prepared TorchScript graph, as text."""
        ...
    @property
    def schema(self) -> str:
        """forward's schema without `self`."""
        ...
    @property
    def options(self) -> Dict[str, Any]:
        """The StaticModuleOptions the module was built with."""
        ...

class RuntimePool:
    """A bounded pool of runtimes of one StaticModule; calls block while all are busy."""

    def __init__(self, module: StaticModule, num_runtimes: int, intra_op_threads: int = 0) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def run(
        self,
        inputs: Union[Sequence[torch.Tensor], Dict[str, torch.Tensor]],
        outputs: Optional[Union[Sequence[torch.Tensor], Dict[str, torch.Tensor]]] = None,
    ) -> Any: ...
    def run_async(self, *args: Any, **kwargs: Any) -> torch.futures.Future: ...
    @property
    def num_runtimes(self) -> int: ...
    @property
    def num_created(self) -> int: ...
    intra_op_threads: int
