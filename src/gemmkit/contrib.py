"""The ``com.microsoft`` contrib operators that onnxruntime's quantizer emits around the
int8 products, on gemmkit's engines.

    gemmkit.contrib.qgemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point=None, C=None,
                          y_scale=None, y_zero_point=None, alpha=1.0, transA=0, transB=0)
    gemmkit.contrib.matmul_integer_to_float(A, B, a_scale, b_scale, a_zero_point=None,
                                            b_zero_point=None, bias=None)
    gemmkit.contrib.dynamic_quantize_matmul(A, B, b_scale, b_zero_point=None, bias=None)
    gemmkit.contrib.dynamic_quantize_linear(x)        # -> (y, y_scale, y_zero_point)

Positional order is the ONNX input order (attributes of QGemm come last, by keyword or
position), so a node's inputs can be splatted in.  The integer part of every op is
gemmkit's exact MatMulInteger / QLinearMatMul (every product exact, int32 sums wrapping
modulo 2**32, any strides, every kernel path bit-identical); what follows it is a fixed
sequence of IEEE float32 operations, each rounded to nearest even, so every output is
defined to the bit and identical on every CPU.

Where the definitions come from: the operator schemas of onnxruntime's contrib operator
documentation (docs/ContribOperators.md) give the inputs, types and shapes; they do not fix
the floating-point steps, which are taken from the graphs these ops replace and from
onnxruntime's CPU kernels (quant_gemm.cc, dynamic_quantize_matmul.cc, MLAS's
QuantizeLinear and its scale/bias output processor):

MatMulIntegerToFloat (T3 = float32)
    ``Y = f32(f32(acc) * f32(a_scale * b_scale)) [+ bias]``
    acc = (A - a_zero_point) @ (B - b_zero_point) as MatMulInteger (int32); ``f32(acc)``
    rounds it to float32; the scale product is one float32 multiplication; then one float32
    multiplication and (with a bias) one float32 addition.  This is, operation for
    operation, the subgraph onnxruntime fuses into this op -- ``Add(Mul(Cast(
    MatMulInteger(A, B, a_zp, b_zp), to=float), Mul(a_scale, b_scale)), bias)`` -- and what
    its CPU kernel computes (no fused multiply-add).  The scales therefore broadcast as the
    ``Mul`` nodes do (NumPy rules against the output ``[..., M, N]``): size 1 per tensor,
    ``[N]`` per column, ``[M, 1]`` per row; either scale may hold B's per-column scale
    (onnxruntime's fusion takes them in the order of the ``Mul`` it replaces).  The zero
    points follow MatMulInteger (per-tensor, per-row ``[M]`` of A, per-column ``[N]`` of B).
    T3 = float16: the same float32 steps on the exactly widened scales and bias, the result
    rounded once to float16.
DynamicQuantizeMatMul
    ``MatMulIntegerToFloat(y, B, y_scale, b_scale, y_zero_point, b_zero_point, bias)`` with
    ``(y, y_scale, y_zero_point) = DynamicQuantizeLinear(A)`` -- the subgraph it replaces.
DynamicQuantizeLinear (uint8, float32 steps, ONNX DynamicQuantizeLinear-11)
    ``lo = min(0, min(A))``, ``hi = max(0, max(A))``; ``scale = f32(f32(hi - lo) / 255)``
    (1.0 when ``hi == lo``, i.e. A is all zeros, as onnxruntime's kernel: then every
    element quantizes to the zero point 0 and the product is 0 whatever the scale);
    ``zero_point = round_half_even(clamp(f32(0 - f32(lo / scale)), 0, 255))``;
    ``y = saturate(round_half_even(f32(A / scale)) + zero_point)`` (a division, as the spec
    and onnxruntime's MLAS do, not a multiplication by the reciprocal).  NaN or infinite
    elements, or a range beyond float32, raise ValueError.
QGemm (A, B 2-D; transA/transB; alpha)
    ``acc = (A' - a_zero_point) @ (B' - b_zero_point) [+ C]`` in int32 (C int32, added
    modulo 2**32, broadcast unidirectionally to (M, N));
    ``s = f32(f32(f32(alpha) * a_scale) * b_scale)`` (per column when b_scale is ``[N]``),
    in that order, as onnxruntime's kernel forms it.
    - no y_scale / y_zero_point: ``Y = f32(f32(acc) * s)``, float32.
    - with them: ``m = f32(s / y_scale)`` and ``Y = saturate(round_half_even(double(acc) *
      double(m)) + y_zero_point)`` -- exactly gemmkit's QLinearMatMul requantization (with
      ``alpha = 1`` and no C the op *is* QLinearMatMul, bit for bit).  onnxruntime rounds
      ``f32(f32(acc) * m)`` instead, so where ``acc * m`` lies within a float32 rounding
      of a half-integer (or |acc| > 2**24) it can differ by one quantum.
    a_scale / a_zero_point / y_scale / y_zero_point are per tensor (size 1); b_scale and
    b_zero_point per tensor or per column ``[N]``, of the same shape (b_zero_point may be
    omitted: 0).

Errors (before any work): ``TypeError`` for a wrong dtype or argument type, ``ValueError``
for a wrong shape or value; the message names the operator and the argument and shows the
shapes/dtypes.  B may be a :class:`gemmkit.PackedB` made by ``pack_b(B, "matmul_integer",
b_zero_point=...)`` (the b_zero_point then lives in the pack; QGemm needs ``transB=0``);
results are those of the unpacked call.
"""
from __future__ import annotations

import numbers
import re
from typing import TYPE_CHECKING, Any, Tuple

import numpy as np

from . import PackedB, _core, matmul_integer, qlinear_matmul

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["qgemm", "matmul_integer_to_float", "dynamic_quantize_matmul",
           "dynamic_quantize_linear"]

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_FLT_MAX = np.float32(np.finfo(np.float32).max)


# ----------------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------------

def _desc(x) -> str:
    if isinstance(x, PackedB):
        return f"PackedB({x.op!r}, {x.b.dtype}{list(x.b.shape)})"
    if isinstance(x, (np.ndarray, np.generic)):
        return f"{x.dtype}{list(np.shape(x))}"
    return type(x).__name__


def _int8_tensor(x, name: str, op: str, packed_ok: bool = False) -> Any:
    if packed_ok and isinstance(x, PackedB):
        if x.op != "matmul_integer":
            raise ValueError(
                f"{op}: {name} is a PackedB made for {x.op!r}; {op} takes "
                f"pack_b({name}, 'matmul_integer', b_zero_point=...)")
        return x
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: {name} must be a NumPy array of uint8 or int8, "
                        f"got {_desc(x)}")
    if x.dtype not in _INT8:
        raise TypeError(f"{op}: {name} must be uint8 or int8, got {x.dtype} "
                        f"(shape {list(x.shape)})")
    return x


def _float_tensor(x, name: str, op: str, dtypes=(_F32,)) -> np.ndarray:
    """An array or NumPy scalar of one of ``dtypes``; a Python float/int is read as
    float32 (as gemmkit's scales are)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a float tensor, got a bool")
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
    elif isinstance(x, numbers.Real):
        with np.errstate(over="ignore"):
            arr = np.asarray(np.float32(float(x)))
    else:
        raise TypeError(f"{op}: {name} must be a NumPy array or scalar of "
                        f"{' or '.join(map(str, dtypes))}, got {_desc(x)}")
    if not arr.dtype.isnative and arr.dtype.newbyteorder("=") in dtypes:
        arr = arr.astype(arr.dtype.newbyteorder("="))  # the same values, native order
    if arr.dtype not in dtypes:
        raise TypeError(f"{op}: {name} must be {' or '.join(map(str, dtypes))}, "
                        f"got {arr.dtype} (shape {list(arr.shape)})")
    return arr


def _small_int8(x, dt: np.dtype, name: str, op: str, partner: str) -> np.ndarray:
    """A per-tensor zero point of dtype ``dt`` (array / NumPy scalar of dt, or a Python
    int in dt's range); its shape is checked by the caller."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be {dt}, got a bool")
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
        if arr.dtype != dt:
            raise TypeError(f"{op}: {name} must have the dtype of {partner} ({dt}), "
                            f"got {arr.dtype} (shape {list(arr.shape)})")
        return arr
    if isinstance(x, numbers.Integral):
        info = np.iinfo(dt)
        if not info.min <= int(x) <= info.max:
            raise ValueError(f"{op}: {name} = {int(x)} is outside {dt}'s range "
                             f"[{info.min}, {info.max}]")
        return np.asarray(int(x), dtype=dt)
    raise TypeError(f"{op}: {name} must be a NumPy array or scalar of {dt}, got {_desc(x)}")


def _flag(v, name: str, op: str) -> int:
    if isinstance(v, np.ndarray) and v.ndim == 0 and (
            v.dtype.kind in "iub"):
        v = v[()]
    if not isinstance(v, (numbers.Integral, np.bool_)):
        raise TypeError(f"{op}: {name} must be 0 or 1, got {v!r} ({type(v).__name__})")
    if int(v) not in (0, 1):
        raise ValueError(f"{op}: {name} must be 0 or 1, got {int(v)}")
    return int(v)


def _real(v, name: str, op: str) -> float:
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {v!r} "
                        f"({type(v).__name__})")
    return float(v)


def _matmul_shape(a_shape: tuple, b_shape: tuple):
    """numpy.matmul's output shape, or None where numpy.matmul would refuse."""
    if len(b_shape) == 2 and len(a_shape) >= 2:  # the usual case, without broadcasting
        return a_shape[:-1] + b_shape[1:] if a_shape[-1] == b_shape[0] else None
    if not a_shape or not b_shape:
        return None
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        return None
    out = batch + (a2[-2], b2[-1])
    if len(b_shape) == 1:
        out = out[:-1]
    if len(a_shape) == 1:
        out = out[:-2] + out[-1:] if len(b_shape) != 1 else out[:-1]
    return out


def _onto_output(x: np.ndarray, out_shape: tuple, name: str, op: str, how: str):
    """x must broadcast (NumPy rules) onto the output without enlarging it."""
    if x.ndim == 0 or (x.ndim == 1 and out_shape and x.shape[0] in (1, out_shape[-1])):
        return  # per tensor, or a row of the last axis (the usual forms)
    try:
        ok = np.broadcast_shapes(x.shape, out_shape) == tuple(out_shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{op}: {name} has shape {list(x.shape)}, which does not broadcast "
                         f"onto the output shape {list(out_shape)} ({how})")


_ENGINE_PREFIX = re.compile(r"^(MatMulInteger|QLinearMatMul): ")


def _engine(op: str, fn, *args):
    """Runs an engine call; its argument errors are re-raised under the op's name."""
    try:
        return fn(*args)
    except (TypeError, ValueError) as exc:
        msg = _ENGINE_PREFIX.sub("", str(exc))
        raise type(exc)(f"{op}: {msg}") from exc


def _b_shape(B) -> tuple:
    return tuple(B.b.shape) if isinstance(B, PackedB) else tuple(B.shape)


# ----------------------------------------------------------------------------------------
# MatMulIntegerToFloat / DynamicQuantizeMatMul
# ----------------------------------------------------------------------------------------

def _check_integer_to_float(op, A_shape, B, a_scale, b_scale, bias, a_scale_name="a_scale",
                            t_dtypes=(_F32, _F16)):
    """Checks MatMulIntegerToFloat's float arguments against the output shape (before any
    work); returns (a_scale, b_scale, bias or None) as arrays."""
    sa = _float_tensor(a_scale, a_scale_name, op, t_dtypes)
    sb = _float_tensor(b_scale, "b_scale", op, t_dtypes)
    if sa.dtype != sb.dtype:
        raise TypeError(f"{op}: {a_scale_name} and b_scale must have one dtype (T3), got "
                        f"{sa.dtype} and {sb.dtype}")
    bias_arr = None
    if bias is not None:
        bias_arr = _float_tensor(bias, "bias", op, (sa.dtype,))
    out_shape = _matmul_shape(tuple(A_shape), _b_shape(B))
    if out_shape is not None:   # else the engine reports the shapes
        for name, x in ((a_scale_name, sa), ("b_scale", sb)):
            _onto_output(x, out_shape, name, op,
                         "scales broadcast as NumPy does: size 1, [N] per column, "
                         "[M, 1] per row")
        if bias_arr is not None:
            _onto_output(bias_arr, out_shape, "bias", op, "bias is [N] or broadcasts so")
    return sa, sb, bias_arr


def _per_column(v, n):
    """v (float32) as a contiguous 1-D array of 1 element (per tensor) or n (per column
    of an [..., n] output, any leading 1s), else None."""
    if v.size == 1:
        return np.ascontiguousarray(v.reshape(1))
    if v.ndim >= 1 and v.shape[-1] == n and v.size == n:
        return np.ascontiguousarray(v.reshape(n))
    return None


def _integer_to_float(op, A, B, sa, sb, a_zero_point, b_zero_point, bias_arr):
    if isinstance(B, PackedB) and b_zero_point is None:
        acc = _engine(op, matmul_integer, A, B, a_zero_point)
    else:
        acc = _engine(op, matmul_integer, A, B, a_zero_point, b_zero_point)
    if sa.dtype == _F32 and acc.flags.c_contiguous and acc.ndim >= 1:
        # per-tensor or per-column scales and bias (the usual forms): the scale product
        # and one pass over acc in C, the same float32 operations
        n = acc.shape[-1]
        sa1, sb1 = _per_column(sa, n), _per_column(sb, n)
        b1 = None if bias_arr is None else _per_column(bias_arr, n)
        if sa1 is not None and sb1 is not None and (
                bias_arr is None or (b1 is not None and b1.size == n)):
            return _core._i32_scale(acc, sa1, sb1, b1)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        # one float32 multiplication of the (exactly widened) scales
        scale = np.multiply(sa.astype(_F32), sb.astype(_F32), dtype=_F32)
        y = acc.astype(_F32)                       # int32 -> float32, nearest even
        y = np.multiply(y, scale, dtype=_F32)      # one float32 multiplication
        if bias_arr is not None:
            y = np.add(y, bias_arr.astype(_F32), dtype=_F32)   # one float32 addition
    if not isinstance(y, np.ndarray) or y.shape != acc.shape or not y.flags.c_contiguous:
        # an array of acc's shape, 0-d included (NumPy's ufuncs return a 0-d result as a
        # scalar, and np.ascontiguousarray makes it 1-D)
        y = np.array(np.broadcast_to(y, acc.shape), order="C")
    if sa.dtype == _F16:
        y = y.astype(_F16)                         # rounded once, nearest even
    return y


def matmul_integer_to_float(A: NDArray[Any], B: NDArray[Any] | PackedB, a_scale: ArrayLike,
                            b_scale: ArrayLike, a_zero_point: ArrayLike | None = None,
                            b_zero_point: ArrayLike | None = None,
                            bias: ArrayLike | None = None) -> NDArray[Any]:
    """com.microsoft MatMulIntegerToFloat: ``f32(f32(acc) * f32(a_scale * b_scale)) +
    bias`` with ``acc`` = MatMulInteger(A, B, a_zero_point, b_zero_point) (int32, exact).

    A, B: uint8/int8, numpy.matmul shapes (B may be a ``pack_b(B, "matmul_integer")``).
    a_scale, b_scale: float32 (or both float16: float16 output); they broadcast as NumPy
    does onto the output (size 1, ``[N]`` per column, ``[M, 1]`` per row), either one may
    be per column.  Zero points as MatMulInteger (per-tensor, ``[M]`` per row of A,
    ``[N]`` per column of B).  bias: optional, the scales' dtype, ``[N]`` (or any shape
    that broadcasts onto the output).  Returns float32 (float16 for float16 scales).
    See the module docstring for the exact float32 steps.
    """
    op = "MatMulIntegerToFloat"
    A = _int8_tensor(A, "A", op)
    B = _int8_tensor(B, "B", op, packed_ok=True)
    sa, sb, bias_arr = _check_integer_to_float(op, A.shape, B, a_scale, b_scale, bias)
    return _integer_to_float(op, A, B, sa, sb, a_zero_point, b_zero_point, bias_arr)


def dynamic_quantize_linear(
        x: NDArray[Any]) -> Tuple[NDArray[np.uint8], NDArray[np.float32], NDArray[np.uint8]]:
    """ONNX DynamicQuantizeLinear: float32 ``x`` -> ``(y uint8, y_scale float32,
    y_zero_point uint8)`` (the latter two 0-d arrays).

    ``scale = (max(0, max(x)) - min(0, min(x))) / 255`` in float32 (1.0 for an all-zero
    x), ``zero_point = round(clamp(0 - min / scale, 0, 255))``, ``y = saturate(round(x /
    scale) + zero_point)``, every rounding to nearest even.  NaN or infinite elements, a
    range beyond float32 and one whose scale underflows to 0 (below 255 * 2**-150, all
    denormal) raise ValueError.
    """
    return _dynamic_quantize_linear(x, "DynamicQuantizeLinear", "x")


def _dynamic_quantize_linear(x, op: str, name: str):
    if not isinstance(x, (np.ndarray, np.generic)):
        raise TypeError(f"{op}: {name} must be a float32 NumPy array, got {_desc(x)}")
    x = np.asarray(x)
    if x.dtype != _F32:
        raise TypeError(f"{op}: {name} must be float32, got {x.dtype} "
                        f"(shape {list(x.shape)})")
    # one C call (the min/max and quantizing passes in the codecs family of the dispatch,
    # the scalar steps in float32): each operation the float32 one the NumPy definition
    # above names
    # (np.array, not np.ascontiguousarray: that makes a 0-d x 1-D)
    status, q, scale, zp, lo, hi = _core._dql_u8(
        x if x.flags.c_contiguous else np.array(x, order="C"))
    if status == 1:
        raise ValueError(f"{op}: {name} (float32{list(x.shape)}) holds NaN or infinity; "
                         f"its quantization range is undefined")
    if status == 2:
        raise ValueError(f"{op}: the range of {name}, {hi!r} - ({lo!r}), overflows float32")
    if status == 3:  # a range below 255 * 2**-150: x / scale and min / scale undefined
        raise ValueError(f"{op}: the range of {name}, {hi!r} - ({lo!r}), is too small for "
                         f"float32: its scale (range / 255) underflows to 0")
    return q, np.asarray(scale, dtype=_F32), np.asarray(zp, dtype=np.uint8)


def dynamic_quantize_matmul(A: NDArray[Any], B: NDArray[Any] | PackedB, b_scale: ArrayLike,
                            b_zero_point: ArrayLike | None = None,
                            bias: ArrayLike | None = None) -> NDArray[np.float32]:
    """com.microsoft DynamicQuantizeMatMul: A (float32) quantized by DynamicQuantizeLinear
    (uint8, per tensor), then MatMulIntegerToFloat with B (uint8/int8, or a
    ``pack_b(B, "matmul_integer")``), b_scale (float32; size 1 or ``[N]`` per column),
    b_zero_point (optional, B's dtype) and bias (optional, float32 ``[N]``).  Returns
    float32 in numpy.matmul's shape.
    """
    op = "DynamicQuantizeMatMul"
    if not isinstance(A, np.ndarray):
        raise TypeError(f"{op}: A must be a float32 NumPy array, got {_desc(A)}")
    if A.dtype != _F32:
        raise TypeError(f"{op}: A must be float32, got {A.dtype} (shape {list(A.shape)})")
    B = _int8_tensor(B, "B", op, packed_ok=True)
    _, sb, bias_arr = _check_integer_to_float(op, A.shape, B, np.float32(1), b_scale, bias,
                                              "A's scale", (_F32,))
    if _matmul_shape(tuple(A.shape), _b_shape(B)) is None:
        # the engine's own shape error, before A is quantized
        _engine(op, matmul_integer, np.zeros(A.shape, np.uint8), B)
    q, a_scale, a_zp = _dynamic_quantize_linear(A, op, "A")
    return _integer_to_float(op, q, B, a_scale, sb, a_zp, b_zero_point, bias_arr)


# ----------------------------------------------------------------------------------------
# QGemm
# ----------------------------------------------------------------------------------------

def _requantize(acc: np.ndarray, m: np.ndarray, y_zp: np.ndarray) -> np.ndarray:
    """gemmkit's QLinearMatMul requantization: saturate(rint(double(acc) * double(m)) +
    zp)."""
    info = np.iinfo(y_zp.dtype)
    x = np.rint(acc.astype(np.float64) * m.astype(np.float64))
    x += float(y_zp.reshape(-1)[0])
    return np.clip(x, info.min, info.max).astype(y_zp.dtype)


def qgemm(A: NDArray[Any], a_scale: ArrayLike, a_zero_point: ArrayLike,
          B: NDArray[Any] | PackedB, b_scale: ArrayLike, b_zero_point: ArrayLike | None = None,
          C: ArrayLike | None = None, y_scale: ArrayLike | None = None,
          y_zero_point: ArrayLike | None = None, alpha: float = 1.0, transA: int = 0,
          transB: int = 0) -> NDArray[Any]:
    """com.microsoft QGemm: quantized Gemm, float32 output or requantized.

    A: uint8/int8 (M, K), or (K, M) with transA=1.  B: uint8/int8 (K, N), or (N, K) with
    transB=1 (or a ``pack_b(B, "matmul_integer", b_zero_point=...)`` of the (K, N) matrix,
    transB=0).  a_scale float32 and a_zero_point (A's dtype) per tensor; b_scale float32
    and b_zero_point (B's dtype, optional: 0) per tensor or per column ``[N]``, one shape.
    C: optional int32, broadcast unidirectionally to (M, N), added to the int32
    accumulator (mod 2**32).  y_scale (float32) and y_zero_point (uint8/int8), per tensor,
    both or neither: with them the output is y_zero_point's dtype, else float32.
    alpha: the float attribute (multiplies the scale: ``f32(f32(alpha) * a_scale)``).

    float32 output: ``f32(f32(acc) * s)``, ``s = f32(f32(f32(alpha) * a_scale) * b_scale)``.
    Quantized: ``saturate(rint(double(acc) * double(f32(s / y_scale))) + y_zero_point)``,
    QLinearMatMul's requantization.  See the module docstring.
    """
    op = "QGemm"
    A = _int8_tensor(A, "A", op)
    B = _int8_tensor(B, "B", op, packed_ok=True)
    ta = _flag(transA, "transA", op)
    tb = _flag(transB, "transB", op)
    alpha_v = _real(alpha, "alpha", op)
    packed = isinstance(B, PackedB)
    if A.ndim != 2:
        raise ValueError(f"{op}: A must be 2-D, got shape {list(A.shape)}")
    b_full = _b_shape(B)
    if len(b_full) != 2:
        raise ValueError(f"{op}: B must be 2-D, got shape {list(b_full)}")
    if packed and tb:
        raise ValueError(f"{op}: a packed B holds (K, N); call with transB=0")
    m_, k_ = (A.shape[1], A.shape[0]) if ta else A.shape
    kb, n_ = (b_full[1], b_full[0]) if tb else b_full
    if k_ != kb:
        raise ValueError(f"{op}: inner dimensions differ: A has shape {list(A.shape)} "
                         f"(transA={ta}, K={k_}), B has shape {list(b_full)} "
                         f"(transB={tb}, K={kb})")
    b_dt = B.b.dtype if isinstance(B, PackedB) else B.dtype

    sa = _float_tensor(a_scale, "a_scale", op)
    if sa.size != 1:
        raise ValueError(f"{op}: a_scale must be per tensor (size 1), got shape "
                         f"{list(sa.shape)}")
    if a_zero_point is None:
        raise ValueError(f"{op}: a_zero_point is required")
    azp = _small_int8(a_zero_point, A.dtype, "a_zero_point", op, "A")
    if azp.size != 1:
        raise ValueError(f"{op}: a_zero_point must be per tensor (size 1), got shape "
                         f"{list(azp.shape)}")
    sb = _float_tensor(b_scale, "b_scale", op)
    if not (sb.size == 1 and sb.ndim <= 1) and sb.shape != (n_,):
        raise ValueError(f"{op}: b_scale must be per tensor (shape () or [1]) or per "
                         f"column [N] = [{n_}], got shape {list(sb.shape)}")
    bzp = None
    if b_zero_point is not None:
        if packed:
            raise ValueError(f"{op}: b_zero_point is in the packed B; do not pass it again")
        bzp = _small_int8(b_zero_point, b_dt, "b_zero_point", op, "B")
        if bzp.shape != sb.shape:
            raise ValueError(f"{op}: b_scale and b_zero_point must have the same shape, got "
                             f"{list(sb.shape)} and {list(bzp.shape)}")
    c_arr = None
    if C is not None:
        if not isinstance(C, (np.ndarray, np.generic)):
            raise TypeError(f"{op}: C must be an int32 NumPy array, got {_desc(C)}")
        c_arr = np.asarray(C)
        if c_arr.dtype != np.int32:
            raise TypeError(f"{op}: C must be int32, got {c_arr.dtype} "
                            f"(shape {list(c_arr.shape)})")
        if c_arr.ndim > 2:
            raise ValueError(f"{op}: C must broadcast to (M, N) = ({m_}, {n_}), got shape "
                             f"{list(c_arr.shape)}")
        _onto_output(c_arr, (m_, n_), "C", op, "(), [1], [N], [1, N], [M, 1] or [M, N]")
    if (y_scale is None) != (y_zero_point is None):
        raise ValueError(f"{op}: y_scale and y_zero_point go together (float32 output "
                         f"without both), got y_scale={_desc(y_scale)}, "
                         f"y_zero_point={_desc(y_zero_point)}")
    quantized = y_scale is not None
    if quantized:
        sy = _float_tensor(y_scale, "y_scale", op)
        if sy.size != 1:
            raise ValueError(f"{op}: y_scale must be per tensor (size 1), got shape "
                             f"{list(sy.shape)}")
        if not isinstance(y_zero_point, (np.ndarray, np.generic)):
            raise TypeError(f"{op}: y_zero_point must be a NumPy array or scalar of uint8 or "
                            f"int8 (it fixes the output dtype), got {_desc(y_zero_point)}")
        yzp = np.asarray(y_zero_point)
        if yzp.dtype not in _INT8:
            raise TypeError(f"{op}: y_zero_point must be uint8 or int8, got {yzp.dtype}")
        if yzp.size != 1:
            raise ValueError(f"{op}: y_zero_point must be per tensor (size 1), got shape "
                             f"{list(yzp.shape)}")
    for name, s in (("a_scale", sa), ("b_scale", sb)) + ((("y_scale", sy),) if quantized
                                                         else ()):
        if not np.isfinite(s).all():
            raise ValueError(f"{op}: {name} must be finite, got {s!r}")
    if quantized and np.any(sy == 0):
        raise ValueError(f"{op}: y_scale must not be 0")
    if not np.isfinite(alpha_v):
        raise ValueError(f"{op}: alpha must be finite, got {alpha_v!r}")
    with np.errstate(over="ignore", under="ignore"):
        sa_alpha = np.float32(np.float32(alpha_v) * sa.reshape(()).astype(_F32))
    if not np.isfinite(sa_alpha):
        raise ValueError(f"{op}: alpha * a_scale = {alpha_v!r} * {float(sa.reshape(-1)[0])!r}"
                         f" overflows float32")

    a = A.T if ta else A
    b = B if isinstance(B, PackedB) else (B.T if tb else B)
    if quantized and c_arr is None and not packed:
        # QLinearMatMul with a_scale' = f32(alpha * a_scale): its multiplier
        # f32(f32(a_scale' * b_scale) / y_scale) is the one defined above.
        bz = bzp if bzp is not None else np.zeros(sb.shape, b_dt)
        return _engine(op, qlinear_matmul, a, np.asarray(sa_alpha), azp.reshape(()), b, sb,
                       bz, sy.reshape(()), yzp.reshape(()))
    if packed:
        acc = _engine(op, matmul_integer, a, b, azp)
    else:
        acc = _engine(op, matmul_integer, a, b, azp, bzp)
    if c_arr is not None:
        acc = np.add(acc, c_arr, dtype=np.int32)   # int32 arithmetic: wraps mod 2**32
    sb32 = sb.astype(_F32).reshape(-1)              # size 1 or [N]: broadcasts along N
    if not quantized and acc.flags.c_contiguous and acc.shape == (m_, n_):
        # f32(f32(acc) * f32(sa_alpha * b_scale)) in one C pass, the same float32 steps
        return _core._i32_scale(acc, np.array([sa_alpha], _F32), sb32, None)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        s = np.multiply(sa_alpha, sb32, dtype=_F32)
        if not quantized:
            y = np.multiply(acc.astype(_F32), s, dtype=_F32)
            return np.ascontiguousarray(np.broadcast_to(y, (m_, n_)))
        m = np.divide(s, sy.reshape(()).astype(_F32), dtype=_F32)
    m = np.where(np.isinf(m), np.copysign(_FLT_MAX, m), m).astype(_F32)
    y = _requantize(acc, m, yzp)
    return np.ascontiguousarray(np.broadcast_to(y, (m_, n_)))
