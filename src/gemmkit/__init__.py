"""gemmkit: exact, complete and fast CPU kernels for ONNX MatMulInteger, QLinearMatMul and Gemm."""
from ._core import *  # noqa: F401,F403
