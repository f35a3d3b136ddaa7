"""Run ONNX nodes and whole models with gemmkit: MatMulInteger, QLinearMatMul and Gemm,
and the ``com.microsoft`` contrib ops QGemm, MatMulIntegerToFloat and
DynamicQuantizeMatMul that onnxruntime's quantizer emits around them.

``onnx`` is not a runtime dependency of gemmkit: :func:`run_node` only reads the NodeProto
it is given (op_type, domain, input names, attributes) and never imports onnx itself, so it
works with any object shaped like ``onnx.NodeProto``; :func:`reference_ops` imports onnx
when it is called.

One node:

    >>> from gemmkit.onnx_ops import run_node
    >>> (y,) = run_node(node, [a, b])            # node.op_type == "MatMulInteger"

Inputs: either one array per entry of ``node.input`` (``None`` where the name is empty,
i.e. an omitted optional input), or one array per *non-empty* name (the convention of
onnx's own backend test cases).

A whole model, with onnx's reference evaluator running every node of these six op types
on gemmkit (and the other nodes itself):

    >>> import onnx.reference, gemmkit.onnx_ops
    >>> sess = onnx.reference.ReferenceEvaluator(
    ...     model, new_ops=gemmkit.onnx_ops.reference_ops())
    >>> (y,) = sess.run(None, {"x": x})

Every opset form is handled as :func:`run_node` handles it (Gemm's attributes, its
optional C and opset-1/6 ``broadcast``; QLinearMatMul's float8 and float16/bfloat16 scales
from opset 21).  The contrib ops' exact semantics are in :mod:`gemmkit.contrib`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ._typing import NodeLike

__all__ = ["run_node", "reference_ops", "SUPPORTED_OPS", "CONTRIB_OPS", "CONTRIB_DOMAIN"]

SUPPORTED_OPS = ("MatMulInteger", "QLinearMatMul", "Gemm")
CONTRIB_DOMAIN = "com.microsoft"
CONTRIB_OPS = ("QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul")

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
    if len(vals) > 4:
        raise ValueError(f"MatMulInteger: at most 4 inputs (A, B, a_zero_point, "
                         f"b_zero_point), got {len(vals)}")
    a, b = _get(vals, 0), _get(vals, 1)
    if a is None or b is None:
        raise ValueError("MatMulInteger: inputs A and B are required")
    return [matmul_integer(a, b, _get(vals, 2), _get(vals, 3))]


def _run_qlinear_matmul(node, vals, attrs, opset):
    from . import qlinear_matmul

    _check_unknown_attrs(node, attrs, ())
    if opset is not None and opset < 10:
        raise NotImplementedError(f"QLinearMatMul does not exist in opset {opset}")
    if len(vals) > 8:
        raise ValueError(f"QLinearMatMul: exactly 8 inputs (a, a_scale, a_zero_point, b, "
                         f"b_scale, b_zero_point, y_scale, y_zero_point), got {len(vals)}")
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
            if type(v) is float or type(v) is int:
                continue  # a Python number: read as float32, as qlinear_matmul reads it
            dt = np.asarray(v).dtype
            if dt != np.float32:
                raise TypeError(
                    f"QLinearMatMul-{opset}: {name} has dtype {dt}; opset {opset} "
                    f"requires float32 scales (float16/bfloat16 need opset 21)")
    return [qlinear_matmul(*vals)]


def _run_gemm(node, vals, attrs, opset):
    from . import gemm

    _check_unknown_attrs(node, attrs, ("alpha", "beta", "transA", "transB", "broadcast"))
    if len(vals) > 3:
        raise ValueError(f"Gemm: at most 3 inputs (A, B, C), got {len(vals)}")
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


def _run_qgemm(node, vals, attrs, opset):
    from .contrib import qgemm

    _check_unknown_attrs(node, attrs, ("alpha", "transA", "transB"))
    names = ("A", "a_scale", "a_zero_point", "B", "b_scale")
    missing = [n for i, n in enumerate(names) if _get(vals, i) is None]
    if missing:
        raise ValueError(f"QGemm: inputs {', '.join(missing)} are required")
    if len(vals) > 9:
        raise ValueError(f"QGemm: at most 9 inputs, got {len(vals)}")
    args = list(vals) + [None] * (9 - len(vals))
    return [qgemm(*args, alpha=attrs.get("alpha", 1.0), transA=attrs.get("transA", 0),
                  transB=attrs.get("transB", 0))]


def _run_matmul_integer_to_float(node, vals, attrs, opset):
    from .contrib import matmul_integer_to_float

    _check_unknown_attrs(node, attrs, ())
    names = ("A", "B", "a_scale", "b_scale")
    missing = [n for i, n in enumerate(names) if _get(vals, i) is None]
    if missing:
        raise ValueError(f"MatMulIntegerToFloat: inputs {', '.join(missing)} are required")
    if len(vals) > 7:
        raise ValueError(f"MatMulIntegerToFloat: at most 7 inputs, got {len(vals)}")
    return [matmul_integer_to_float(*vals)]


def _run_dynamic_quantize_matmul(node, vals, attrs, opset):
    from .contrib import dynamic_quantize_matmul

    _check_unknown_attrs(node, attrs, ())
    names = ("A", "B", "b_scale")
    missing = [n for i, n in enumerate(names) if _get(vals, i) is None]
    if missing:
        raise ValueError(f"DynamicQuantizeMatMul: inputs {', '.join(missing)} are required")
    if len(vals) > 5:
        raise ValueError(f"DynamicQuantizeMatMul: at most 5 inputs, got {len(vals)}")
    return [dynamic_quantize_matmul(*vals)]


_RUNNERS = {
    ("", "MatMulInteger"): _run_matmul_integer,
    ("", "QLinearMatMul"): _run_qlinear_matmul,
    ("", "Gemm"): _run_gemm,
    (CONTRIB_DOMAIN, "QGemm"): _run_qgemm,
    (CONTRIB_DOMAIN, "MatMulIntegerToFloat"): _run_matmul_integer_to_float,
    (CONTRIB_DOMAIN, "DynamicQuantizeMatMul"): _run_dynamic_quantize_matmul,
}


def _runner(node):
    domain = getattr(node, "domain", "") or ""
    if domain == "ai.onnx":
        domain = ""
    runner = _RUNNERS.get((domain, node.op_type))
    if runner is None:
        if domain not in ("", CONTRIB_DOMAIN):
            raise NotImplementedError(f"gemmkit does not implement domain {domain!r} ops")
        ops = SUPPORTED_OPS if domain == "" else CONTRIB_OPS
        raise NotImplementedError(
            f"gemmkit implements {', '.join(ops)} in domain {domain or 'ai.onnx'!r}; "
            f"not {node.op_type!r}")
    return runner


def run_node(node: NodeLike, inputs: Sequence[ArrayLike | None],
             opset: int | None = None) -> list[NDArray[Any]]:
    """Evaluates one ONNX node with gemmkit.

    node: an ``onnx.NodeProto`` of op_type MatMulInteger, QLinearMatMul or Gemm in the
    default domain, or QGemm, MatMulIntegerToFloat or DynamicQuantizeMatMul in domain
    ``com.microsoft`` (see :mod:`gemmkit.contrib`).  inputs: arrays in node-input order
    (see the module docstring).  opset: the model's default-domain opset version, if
    known; it selects version-specific behaviour (Gemm's ``broadcast`` default in opsets
    1/6, QLinearMatMul's float8 types only from opset 21).  Returns the list of outputs
    (one array).  Raises NotImplementedError for any other op type or domain.
    """
    runner = _runner(node)
    vals = _align_inputs(node, inputs)
    return runner(node, vals, _attributes(node), opset)


def _default_opset(opsets) -> int | None:
    if not opsets:
        return None
    v = opsets.get("", opsets.get("ai.onnx"))
    return None if v is None else int(v)


def _evaluator_attrs(node, kwargs) -> dict[str, Any]:
    """The attributes the node sets, with the values the evaluator resolved (an attribute
    linked to a function's attribute arrives in kwargs).  Attributes the node leaves out
    keep their opset's default (run_node's rules), not the evaluator's latest-schema
    default."""
    out = {}
    for attr in node.attribute:
        v = kwargs.get(attr.name, None)
        if v is None:
            continue
        if attr.type == _ATTR_FLOAT:
            out[attr.name] = float(v)
        elif attr.type == _ATTR_INT:
            out[attr.name] = int(v)
        else:
            raise NotImplementedError(
                f"{node.op_type}: attribute {attr.name!r} of type {attr.type} is not supported")
    return out


def _reference_run(self, *inputs, **kwargs):
    node = self.onnx_node
    runner = _runner(node)
    vals = _align_inputs(node, inputs)
    attrs = _evaluator_attrs(node, kwargs)
    opset = _default_opset(self.run_params.get("opsets"))
    return tuple(runner(node, vals, attrs, opset))


_REFERENCE_OPS: list[type[Any]] | None = None


def reference_ops() -> list[type[Any]]:
    """The ``onnx.reference.op_run.OpRun`` classes that make onnx's reference evaluator run
    MatMulInteger, QLinearMatMul, Gemm (default domain) and QGemm, MatMulIntegerToFloat,
    DynamicQuantizeMatMul (``com.microsoft``) on gemmkit::

        ReferenceEvaluator(model, new_ops=gemmkit.onnx_ops.reference_ops())

    Each class runs its node as :func:`run_node` does, with the model's default-domain
    opset.  A model using the contrib ops must import the ``com.microsoft`` opset (models
    from onnxruntime's quantizer do).  Imports onnx (ImportError if it is missing).
    """
    global _REFERENCE_OPS
    if _REFERENCE_OPS is None:
        from onnx.reference.op_run import OpRun

        classes = []
        for domain, op_type in _RUNNERS:
            classes.append(type(op_type, (OpRun,), {
                "op_domain": domain,
                "_run": _reference_run,
                "__module__": __name__,
                "__qualname__": f"reference_ops.<{domain or 'ai.onnx'}>.{op_type}",
                "__doc__": f"{op_type} ({domain or 'ai.onnx'}) run on gemmkit "
                           f"(gemmkit.onnx_ops.run_node).",
            }))
        _REFERENCE_OPS = classes
    return list(_REFERENCE_OPS)
