"""Run single ONNX nodes (MatMulInteger, QLinearMatMul, Gemm) with gemmkit.

``onnx`` is not a runtime dependency of gemmkit: this module only reads the NodeProto it
is given (op_type, domain, input names, attributes) and never imports onnx itself, so it
works with any object shaped like ``onnx.NodeProto``.

    >>> from gemmkit.onnx_ops import run_node
    >>> (y,) = run_node(node, [a, b])            # node.op_type == "MatMulInteger"

Inputs: either one array per entry of ``node.input`` (``None`` where the name is empty,
i.e. an omitted optional input), or one array per *non-empty* name (the convention of
onnx's own backend test cases).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ._typing import NodeLike

__all__ = ["run_node", "SUPPORTED_OPS"]

SUPPORTED_OPS = ("MatMulInteger", "QLinearMatMul", "Gemm")

# onnx.AttributeProto.AttributeType values (stable across onnx versions).
_ATTR_FLOAT, _ATTR_INT = 1, 2

_FLOAT8_NAMES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def _attributes(node) -> dict[str, Any]:
    out = {}
    for attr in node.attribute:
        if attr.type == _ATTR_FLOAT:
            out[attr.name] = float(attr.f)
        elif attr.type == _ATTR_INT:
            out[attr.name] = int(attr.i)
        else:
            raise NotImplementedError(
                f"{node.op_type}: attribute {attr.name!r} of type {attr.type} is not supported")
    return out


def _align_inputs(node, inputs: Sequence[Any]) -> list[Any]:
    """One entry per node.input position (None for an omitted optional input)."""
    names = list(node.input)
    inputs = list(inputs)
    if len(inputs) == len(names):
        return [None if n == "" else x for n, x in zip(names, inputs)]
    present = [i for i, n in enumerate(names) if n != ""]
    if len(inputs) == len(present):
        out = [None] * len(names)
        for i, x in zip(present, inputs):
            out[i] = x
        return out
    # Trailing optional inputs may be omitted entirely.
    if len(inputs) < len(names) and all(n != "" for n in names[:len(inputs)]):
        return inputs + [None] * (len(names) - len(inputs))
    raise ValueError(
        f"{node.op_type}: got {len(inputs)} inputs for node inputs {names!r} "
        f"({len(present)} non-empty)")


def _get(vals, i):
    return vals[i] if i < len(vals) else None


def _is_float8(x) -> bool:
    return x is not None and np.asarray(x).dtype.name in _FLOAT8_NAMES


def _check_unknown_attrs(node, attrs, allowed):
    extra = sorted(set(attrs) - set(allowed))
    if extra:
        raise ValueError(f"{node.op_type}: unexpected attributes {extra}")


def _run_matmul_integer(node, vals, attrs, opset):
    from . import matmul_integer

    _check_unknown_attrs(node, attrs, ())
    if opset is not None and opset < 10:
        raise NotImplementedError(f"MatMulInteger does not exist in opset {opset}")
    a, b = _get(vals, 0), _get(vals, 1)
    if a is None or b is None:
        raise ValueError("MatMulInteger: inputs A and B are required")
    return [matmul_integer(a, b, _get(vals, 2), _get(vals, 3))]


def _run_qlinear_matmul(node, vals, attrs, opset):
    from . import qlinear_matmul

    _check_unknown_attrs(node, attrs, ())
    if opset is not None and opset < 10:
        raise NotImplementedError(f"QLinearMatMul does not exist in opset {opset}")
    if len(vals) != 8 or any(v is None for v in vals):
        raise ValueError(
            "QLinearMatMul: all 8 inputs (a, a_scale, a_zero_point, b, b_scale, "
            "b_zero_point, y_scale, y_zero_point) are required")
    if opset is not None and opset < 21:
        # Opset 10: T1/T2/T3 in {int8, uint8}, scales float32 only.
        for name, v in zip(("a", "a_zero_point", "b", "b_zero_point", "y_zero_point"),
                           (vals[0], vals[2], vals[3], vals[5], vals[7])):
            if _is_float8(v):
                raise TypeError(
                    f"QLinearMatMul-{opset}: {name} has dtype {np.asarray(v).dtype}; "
                    f"float8 types need opset 21")
        for name, v in zip(("a_scale", "b_scale", "y_scale"), (vals[1], vals[4], vals[6])):
            dt = np.asarray(v).dtype
            if dt != np.float32:
                raise TypeError(
                    f"QLinearMatMul-{opset}: {name} has dtype {dt}; opset {opset} "
                    f"requires float32 scales (float16/bfloat16 need opset 21)")
    return [qlinear_matmul(*vals)]


def _run_gemm(node, vals, attrs, opset):
    from . import gemm

    _check_unknown_attrs(node, attrs, ("alpha", "beta", "transA", "transB", "broadcast"))
    a, b, c = _get(vals, 0), _get(vals, 1), _get(vals, 2)
    if a is None or b is None:
        raise ValueError("Gemm: inputs A and B are required")
    if opset is not None and opset >= 7 and "broadcast" in attrs:
        raise ValueError(f"Gemm-{opset}: attribute 'broadcast' was removed in opset 7")
    if opset is not None and opset < 11 and c is None:
        raise ValueError(f"Gemm-{opset}: input C is required before opset 11")
    if opset is not None and opset < 7:
        broadcast = attrs.get("broadcast", 0)  # opset 1/6 default: no broadcasting
    else:
        broadcast = attrs.get("broadcast", 1)
    return [gemm(a, b, c,
                 alpha=attrs.get("alpha", 1.0),
                 beta=attrs.get("beta", 1.0),
                 transA=attrs.get("transA", 0),
                 transB=attrs.get("transB", 0),
                 broadcast=broadcast)]


_RUNNERS = {
    "MatMulInteger": _run_matmul_integer,
    "QLinearMatMul": _run_qlinear_matmul,
    "Gemm": _run_gemm,
}


def run_node(node: NodeLike, inputs: Sequence[ArrayLike | None],
             opset: int | None = None) -> list[NDArray[Any]]:
    """Evaluates one ONNX node with gemmkit.

    node: an ``onnx.NodeProto`` of op_type MatMulInteger, QLinearMatMul or Gemm in the
    default domain.  inputs: arrays in node-input order (see the module docstring).
    opset: the model's default-domain opset version, if known; it selects version-specific
    behaviour (Gemm's ``broadcast`` default in opsets 1/6, QLinearMatMul's float8 types
    only from opset 21).  Returns the list of outputs (one array).
    Raises NotImplementedError for any other op type or domain.
    """
    domain = getattr(node, "domain", "") or ""
    if domain not in ("", "ai.onnx"):
        raise NotImplementedError(f"gemmkit does not implement domain {domain!r} ops")
    runner = _RUNNERS.get(node.op_type)
    if runner is None:
        raise NotImplementedError(
            f"gemmkit implements {', '.join(SUPPORTED_OPS)}; not {node.op_type!r}")
    vals = _align_inputs(node, inputs)
    return runner(node, vals, _attributes(node), opset)
