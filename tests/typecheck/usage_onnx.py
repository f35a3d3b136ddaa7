"""run_node with onnx's own NodeProto (type-checked and run by tests/test_typing.py when
onnx is installed): onnx's typed NodeProto must satisfy gemmkit's NodeLike."""
from __future__ import annotations

import numpy as np
from onnx import helper

from gemmkit.onnx_ops import run_node


def main() -> None:
    node = helper.make_node("MatMulInteger", ["A", "B", "", "b_zp"], ["Y"])
    a = np.full((2, 3), 3, np.uint8)
    b = np.ones((3, 4), np.int8)
    (y,) = run_node(node, [a, b, None, np.int8(1)], opset=10)
    assert y.dtype == np.int32 and not y.any()
    gemm = helper.make_node("Gemm", ["A", "B"], ["Y"], alpha=2.0, transA=1)
    (g,) = run_node(gemm, [np.ones((3, 2), np.float32), np.ones((3, 4), np.float32)])
    assert g.shape == (2, 4) and float(g[0, 0]) == 6.0


if __name__ == "__main__":
    main()
