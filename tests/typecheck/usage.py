"""gemmkit used the way its users write it.

tests/test_typing.py type-checks this file with ``mypy --strict`` against the installed
package (its py.typed, _core.pyi and annotated modules) and also runs it, so every call
here is a real call that works.  ``assert_type`` pins the result types the stubs promise.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

import gemmkit as gk
from gemmkit.onnx_ops import SUPPORTED_OPS, run_node

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:
    def assert_type(value, _type):
        return value


def int8_ops() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (4, 64), dtype=np.uint8)
    b = rng.integers(-128, 128, (64, 8), dtype=np.int8)
    a_zp = np.arange(4, dtype=np.uint8)                 # per-row zero point of a

    y32 = gk.matmul_integer(a, b, a_zp, np.int8(0))
    assert_type(y32, NDArray[np.int32])
    assert_type(gk.matmul_integer(a, b), NDArray[np.int32])
    assert_type(gk.matmul_integer(a[0], b, 3, -1), NDArray[np.int32])   # Python ints, 1-D A
    batched = gk.matmul_integer(a[None, :, :], b, a_zp.reshape(1, 4, 1))
    assert batched.shape == (1, 4, 8)

    y8 = gk.qlinear_matmul(a, np.float32(0.02), np.uint8(3),
                           b, np.float32(0.01), np.int8(0),
                           np.float32(0.05), np.uint8(128))
    assert_type(y8, NDArray[np.uint8])
    # Python numbers as scales and as a's zero point; per-column b scale and zero point
    ys8 = gk.qlinear_matmul(a, 0.02, 3, b, np.full(8, 0.01, np.float32), np.zeros(8, np.int8),
                            0.05, np.array(0, np.int8))
    assert_type(ys8, NDArray[np.int8])
    assert ys8.dtype == np.int8
    # float8 output (opset 21): ml_dtypes types are numpy.generic to a type checker
    yf8 = gk.qlinear_matmul(a, np.float16(0.02), np.uint8(3), b,
                            np.array(0.01, ml_dtypes.bfloat16), np.int8(0),
                            np.float32(0.05), np.zeros((), ml_dtypes.float8_e4m3fn))
    assert yf8.dtype == ml_dtypes.float8_e4m3fn

    # weights packed once
    pb = gk.pack_b(b, "matmul_integer", b_zero_point=np.int8(1))
    assert_type(gk.matmul_integer(a, pb, a_zp), NDArray[np.int32])
    pq = gk.pack_b(b, "qlinear_matmul", b_scale=np.float32(0.01), b_zero_point=np.int8(0))
    y8p = gk.qlinear_matmul(a, np.float32(0.02), np.uint8(3), pq, None, None,
                            np.float32(0.05), np.uint8(128))
    assert_type(y8p, NDArray[np.uint8])
    assert np.array_equal(y8p, y8)

    op: str = pq.op
    weights: NDArray[Any] = pq.b
    zp: NDArray[Any] | None = pq.b_zero_point
    scale: NDArray[Any] | None = pq.b_scale
    size: int = pq.nbytes
    is_packed: bool = pq.packed
    family: str = pq.isa
    assert op == "qlinear_matmul" and zp is not None and scale is not None
    assert weights.shape == (64, 8) and size > 0 and isinstance(is_packed, bool) and family
    again: gk.PackedB = pickle.loads(pickle.dumps(pq))
    assert again.op == pq.op and np.array_equal(again.b, pq.b)


def gemm_ops() -> None:
    A = np.ones((3, 5), np.float32)
    B = np.ones((4, 5), np.float32)
    y = gk.gemm(A, B, np.zeros(4, np.float32), alpha=2.0, transB=1)
    assert_type(y, NDArray[np.float32])
    assert y.shape == (3, 4)

    x64: NDArray[np.float64] = np.ones((2, 2))
    y64 = gk.gemm(x64, np.eye(2), 1.5, alpha=np.float64(0.5), beta=2)   # Python float C
    assert_type(y64, NDArray[np.float64])
    # opsets 1/6: C of shape (M, N) exactly; flags as bools or NumPy integers
    y_b0 = gk.gemm(x64, x64, np.zeros((2, 2)), 1.0, 1.0, True, np.int8(0), broadcast=0)
    assert_type(y_b0, NDArray[np.float64])

    i64: NDArray[np.int64] = np.arange(6, dtype=np.int64).reshape(2, 3)
    yi = gk.gemm(i64, i64, np.int64(5), alpha=3, beta=np.int64(1), transB=1)
    assert_type(yi, NDArray[np.int64])

    bf = np.ones((2, 3), ml_dtypes.bfloat16)
    ybf = gk.gemm(bf, bf, alpha=np.array(1.0, ml_dtypes.bfloat16), transA=1)
    assert ybf.dtype == ml_dtypes.bfloat16 and ybf.shape == (3, 3)

    pg = gk.pack_b(B, "gemm", transB=1)
    assert_type(gk.gemm(A, pg, transB=1), NDArray[np.float32])


def casts() -> None:
    x = np.array([1.0625, 300.0, 1e6, -np.inf, np.nan], np.float32)
    h = gk.cast(x, np.float16)
    assert_type(h, NDArray[np.float16])
    assert_type(gk.cast(x, np.dtype(np.float64)), NDArray[np.float64])
    f8 = gk.cast(x, ml_dtypes.float8_e4m3fn)                 # saturate=True: 448 for 1e6
    by_name = gk.cast(x, "float8_e4m3fn", saturate=False)   # 1e6 -> NaN
    assert float(f8[2]) == 448.0 and np.isnan(float(by_name[2]))
    out: NDArray[np.float64] = np.empty((3, 5), np.float64)[::-1]
    r = gk.cast(np.tile(x, (3, 1)), out=out)                 # dtype taken from out
    assert_type(r, NDArray[np.float64])
    assert r is out
    assert gk.cast(x, "bfloat16", 1, out=None).dtype == ml_dtypes.bfloat16


def info_and_threads() -> None:
    info = gk.cpu_info()
    assert_type(info, gk.CpuInfo)
    isa: str = info["isa"]
    l2: int = info["caches"]["l2"]
    bf16_family: str = info["engines"]["gemm"]["bfloat16"]
    assert isa in info["available"] and l2 >= 0 and bf16_family
    assert info["num_threads_source"] in ("GEMMKIT_NUM_THREADS", "OMP_NUM_THREADS", "cpus")

    old = gk.set_num_threads(2)
    assert_type(old, int)
    with gk.threads(1) as n:
        assert_type(n, int)
        assert gk.get_num_threads() == 1
    gk.set_num_threads(old)
    assert_type(gk.get_num_threads(), int)


# run_node reads only these fields of a node: any object that has them will do (onnx's
# NodeProto is checked in usage_onnx.py).
@dataclass
class Attribute:
    name: str
    type: int            # onnx.AttributeProto.FLOAT = 1, INT = 2
    f: float = 0.0
    i: int = 0


@dataclass
class Node:
    op_type: str
    input: list[str]
    attribute: list[Attribute] = field(default_factory=list)
    domain: str = ""


def onnx_nodes() -> None:
    assert "Gemm" in SUPPORTED_OPS
    node = Node("Gemm", ["A", "B", "C"], [Attribute("alpha", 1, f=0.5),
                                         Attribute("transB", 2, i=1)])
    A = np.ones((2, 3), np.float32)
    (y,) = run_node(node, [A, A, None], opset=13)   # C omitted
    assert_type(y, NDArray[Any])
    assert y.shape == (2, 2) and float(y[0, 0]) == 1.5


def main() -> None:
    int8_ops()
    gemm_ops()
    casts()
    info_and_threads()
    onnx_nodes()


if __name__ == "__main__":
    main()
