"""gemmkit: exact, complete and fast CPU kernels for the ONNX operators MatMulInteger,
QLinearMatMul and Gemm, as NumPy-style functions.

    gemmkit.matmul_integer(A, B, a_zero_point=None, b_zero_point=None)
    gemmkit.qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point,
                           y_scale, y_zero_point)
    gemmkit.gemm(A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=1)
    gemmkit.cast(x, dtype, saturate=True, out=None)    # float32/64/16, bfloat16, float8
    gemmkit.cpu_info()

Positional order is the ONNX input order.  GEMMKIT_ISA caps every engine at an ISA level.
"""
__version__ = "0.1.0"

from ._core import cast, cpu_info, gemm, matmul_integer, qlinear_matmul

__all__ = ["matmul_integer", "qlinear_matmul", "gemm", "cast", "cpu_info", "__version__"]
