"""Types named in gemmkit's signatures that exist at runtime too (so that they can be
imported and used in annotations): the shape of ``cpu_info()``'s dict and what
``onnx_ops.run_node`` reads from a node.  The compiled module's own signatures are in
``_core.pyi``; this module holds no code that gemmkit runs.
"""
from __future__ import annotations

from typing import Iterable, List, Literal, Protocol, Sequence, TypedDict

__all__ = ["CpuInfo", "CacheSizes", "Engines", "GemmEngines", "PackOp", "NodeLike",
           "AttributeLike"]

#: The ops ``pack_b`` packs for (its ``op`` argument, ``PackedB.op``).
PackOp = Literal["matmul_integer", "qlinear_matmul", "gemm"]


class CacheSizes(TypedDict):
    """Bytes of one core's L1 data and L2 caches and of the L3 (0: not reported)."""
    l1d: int
    l2: int
    l3: int


class GemmEngines(TypedDict):
    """The Gemm kernel family per element type (an ISA level, or a level plus the one
    feature it needs beyond it, e.g. ``"avx512bf16"``)."""
    float16: str
    bfloat16: str
    float32: str
    float64: str
    int32: str
    uint32: str
    int64: str
    uint64: str


class Engines(TypedDict):
    """The kernel family each engine runs at the selected ISA level: ``qgemm``
    (MatMulInteger / QLinearMatMul), ``gemm`` (per element type), ``codecs`` (casts)."""
    qgemm: str
    gemm: GemmEngines
    codecs: str


class CpuInfo(TypedDict):
    """What ``gemmkit.cpu_info()`` returns (a plain dict with exactly these keys).

    isa: the selected ISA level (the best usable one, or ``GEMMKIT_ISA``).
    engines: each engine's kernel family at that level.
    available: levels usable on this machine, best first.
    compiled: levels some engine has a family for in this build, best first.
    features: CPU features detected, with OS support checked.
    caches: cache sizes in bytes (CPUID; 0 where none is reported).
    num_threads: threads a call from this Python thread may use now.
    num_threads_process: the process-wide setting.
    num_threads_source: where the process setting came from at import.
    usable_cpus: CPUs this process may run on (affinity mask, capped by a cgroup quota).
    pool_threads: pool worker threads alive now (0 before the first parallel call).
    """
    isa: str
    engines: Engines
    available: List[str]
    compiled: List[str]
    features: List[str]
    caches: CacheSizes
    num_threads: int
    num_threads_process: int
    num_threads_source: Literal["GEMMKIT_NUM_THREADS", "OMP_NUM_THREADS", "cpus"]
    usable_cpus: int
    pool_threads: int


class AttributeLike(Protocol):
    """The fields of an ``onnx.AttributeProto`` that ``run_node`` reads."""
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> int: ...
    @property
    def f(self) -> float: ...
    @property
    def i(self) -> int: ...


class NodeLike(Protocol):
    """The fields of an ``onnx.NodeProto`` that ``run_node`` reads (onnx's own NodeProto
    has them; gemmkit never imports onnx)."""
    @property
    def op_type(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def input(self) -> Sequence[str]: ...
    @property
    def attribute(self) -> Iterable[AttributeLike]: ...
