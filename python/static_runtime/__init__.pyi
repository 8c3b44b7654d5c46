import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import torch

__version__: str

def pass_names() -> List[str]:
    """Names of the optimization passes, in the order they run; any can go in disabled_passes."""
    ...

class IndividualMetrics:
    """What StaticModule.benchmark_individual_ops measured: the fields of PyTorch's
    StaticModule.IndividualMetrics, in milliseconds per run (means over the main runs).
    str() gives PyTorch's report (time per node kind, slowest first, then the totals)."""

    setup_time: float
    """Binding arguments into the value table."""
    memory_alloc_time: float
    """Pointing managed tensors and kernel scratch into the arena."""
    memory_dealloc_time: float
    """Detaching them, dropping inputs and intermediates."""
    output_dealloc_time: float
    """Dropping the outputs (and handing managed output tensors back)."""
    first_iter_time: float
    """The first run of a fresh runtime: learning sizes and planning memory included."""
    total_time: float
    """Sum of time_per_node."""
    time_per_node: List[float]
    """Top-level nodes in program order; an If / Loop node includes its blocks."""
    time_per_node_type: Dict[str, float]
    """By node kind, e.g. "srt::fused_linear"."""
    percent_per_node_type: Dict[str, float]
    """Each kind's share of total_time, in percent."""
    instances_per_node_type: Dict[str, int]
    """Top-level nodes of each kind."""
    out_nodes: Set[str]
    """Node kinds run by out-variant kernels."""
    native_nodes: Set[str]
    """Node kinds run by native kernels."""
    fallback_nodes: Set[str]
    """Node kinds run through the JIT operator fallback."""
    out_nodes_count: int
    native_nodes_count: int
    fallback_nodes_count: int
    total_nodes_count: int
    """Top-level nodes; = out_nodes_count + native_nodes_count + fallback_nodes_count."""

InputSet = Union[Sequence[Any], Tuple[Any, ...]]

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
        fp32_precision: str = ...,
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
    def benchmark(
        self,
        args: Union[InputSet, List[InputSet]],
        kwargs: Optional[Union[Dict[str, Any], List[Dict[str, Any]]]] = None,
        warmup_runs: int = 1,
        main_runs: int = 100,
    ) -> float:
        """Mean milliseconds per run of forward on a fresh runtime. args: one input set (tuple or list
        of forward's arguments) or a list of input sets; kwargs: None, a dict for every set, or one
        dict per set. Each set runs warmup_runs times, then main_runs times on the clock."""
        ...
    def benchmark_individual_ops(
        self,
        args: Union[InputSet, List[InputSet]],
        kwargs: Optional[Union[Dict[str, Any], List[Dict[str, Any]]]] = None,
        warmup_runs: int = 1,
        main_runs: int = 100,
    ) -> IndividualMetrics:
        """Times every phase of a run and every top-level node (one first run, warm-up, then
        main_runs timed passes over the input sets), like PyTorch's benchmark_individual_ops."""
        ...
    def memory_plan(self, *args: Any, **kwargs: Any) -> List[Dict[str, Any]]:
        """The arena layout after a run, one dict per buffer holding memory, sorted by offset: name,
        kind ("tensor" or "scratch"), first_node, last_node (top-level node indices, inclusive),
        offset, bytes. With arguments, runs forward on them first; without, the plan of the runtime
        the last call used ([] before any run or with optimize_memory=False)."""
        ...
    profiling: bool
    """Whether runs record a torch.profiler event per node (named by its kind) and one per run
    ("forward") while a profiler is active; True by default, free without a profiler."""
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
    @property
    def batch_independent(self) -> bool:
        """Whether forward treats every item of a batch on its own (RuntimePool's split_batch)."""
        ...
    @property
    def batch_independence_reason(self) -> str:
        """Where batch_independent is False: the node or argument that is not, and why."""
        ...

class RuntimePool:
    """A bounded pool of runtimes of one StaticModule; calls block while all are busy."""

    def __init__(
        self,
        module: StaticModule,
        num_runtimes: int,
        intra_op_threads: int = 0,
        profiling: bool = True,
        workers: str = "auto",
        split_batch: bool = True,
    ) -> None: ...
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
    profiling: bool
    @property
    def workers(self) -> str: ...
    @property
    def split_batch(self) -> bool: ...
