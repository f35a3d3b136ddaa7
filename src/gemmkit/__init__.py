"""gemmkit: exact, complete and fast CPU kernels for the ONNX operators MatMulInteger,
QLinearMatMul and Gemm, as NumPy-style functions.

    gemmkit.matmul_integer(A, B, a_zero_point=None, b_zero_point=None)
    gemmkit.qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point,
                           y_scale, y_zero_point)
    gemmkit.gemm(A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=1)
    gemmkit.cast(x, dtype, saturate=True, out=None)    # float32/64/16, bfloat16, float8
    gemmkit.cpu_info()
    gemmkit.set_num_threads(n), gemmkit.get_num_threads(), with gemmkit.threads(n): ...
    gemmkit.pack_b(B, op, *, b_zero_point=None, b_scale=None, transB=0)  # B packed once

Positional order is the ONNX input order.  GEMMKIT_ISA caps every engine at an ISA level;
GEMMKIT_NUM_THREADS (else OMP_NUM_THREADS, else the usable CPUs) sets the threads.
Typed (PEP 561): the package ships py.typed and stubs for the compiled module; help() on
any function above gives its full semantics, dtypes, layouts and errors.
"""
__version__ = "0.1.0"

from ._core import PackedB, cast, cpu_info, gemm, matmul_integer, pack_b, qlinear_matmul
from ._threads import get_num_threads, set_num_threads, threads
from ._typing import CpuInfo

__all__ = ["matmul_integer", "qlinear_matmul", "gemm", "cast", "cpu_info", "CpuInfo",
           "set_num_threads", "get_num_threads", "threads", "pack_b", "PackedB",
           "__version__"]
