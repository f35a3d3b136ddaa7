"""Mistakes the stubs must catch: ``mypy --strict`` has to report an error on exactly the
lines marked ``# E: <error code>`` (tests/test_typing.py).  Never run: these calls fail."""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import gemmkit as gk
from gemmkit.onnx_ops import run_node


def mistakes() -> None:
    a = np.zeros((2, 3), np.uint8)
    b = np.zeros((3, 4), np.int8)
    s = np.float32(0.5)
    pb = gk.pack_b(b, "matmul_integer")
    pq = gk.pack_b(b, "qlinear_matmul", b_scale=s, b_zero_point=np.int8(0))

    # int32 result taken for float32
    y: NDArray[np.float32] = gk.matmul_integer(a, b)  # E: assignment
    # B-side arguments live in a PackedB: passing them again is a ValueError
    gk.matmul_integer(a, pb, None, np.int8(0))  # E: call-overload
    gk.qlinear_matmul(a, s, np.uint8(0), pq, s, np.int8(0), s, np.uint8(0))  # E: call-overload
    # a plain b needs its scale and zero point
    gk.qlinear_matmul(a, s, np.uint8(0), b, None, None, s, np.uint8(0))  # E: call-overload
    gk.matmul_integer(a, b, None, None, None)  # E: call-overload
    # PackedB is immutable
    pb.b = b  # E: misc
    # pack_b: unknown op; qlinear_matmul without b_scale; transB belongs to gemm
    gk.pack_b(b, "matmull_integer")  # E: call-overload
    gk.pack_b(b, "qlinear_matmul", b_zero_point=np.int8(0))  # E: call-overload
    gk.pack_b(b, "matmul_integer", transB=1)  # E: call-overload
    # gemm's alpha is a real number, its flags integers
    gk.gemm(a, b, alpha="2")  # E: call-overload
    gk.gemm(a, b, transA=None)  # E: call-overload
    # cast: saturate is a bool (or 0/1), not a string
    gk.cast(a, np.float16, saturate="yes")  # E: call-overload
    # threads: an int
    gk.set_num_threads(2.0)  # E: arg-type
    # cpu_info() has a fixed set of keys
    gk.cpu_info()["isa_level"]  # E: typeddict-item
    # run_node takes a node-like object and a sequence of arrays
    run_node("Gemm", [a, b])  # E: arg-type
    print(y)
