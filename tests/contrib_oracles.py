"""Reference implementations of the com.microsoft contrib ops, written from their
definitions (gemmkit/contrib.py's docstring, from onnxruntime's ContribOperators.md and
the graphs/kernels named there), independent of gemmkit.

Integer parts are exact int64 (oracles.int_acc) wrapped to int32.  Every float32 step is
computed as the exact (or float64) result of the operation rounded once to float32 with
``_f32``: for +, -, *, / of two float32 values the float64 result rounded to float32 is
the correctly rounded float32 result (float64 has 53 >= 2 * 24 + 2 bits, so the double
rounding is innocuous), and int32 -> float64 is exact.  Nothing here imports gemmkit.
"""
from __future__ import annotations

import numpy as np

import oracles as o

F32 = np.float32
FLT_MAX = o.FLT_MAX


def _f32(x):
    """Round float64 values once to float32 (nearest even; overflow -> inf)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float32)


def _f64(x):
    return np.asarray(x).astype(np.float64)


def acc_int32(a, b, a_zp=None, b_zp=None):
    """MatMulInteger's int32 accumulator (exact, wrapped mod 2**32), numpy.matmul shape."""
    return o.matmul_integer(a, b, a_zp, b_zp)


# ----------------------------------------------------------------------------------------
# MatMulIntegerToFloat:  Y = f32(f32(acc) * f32(a_scale * b_scale)) [+ bias]
# ----------------------------------------------------------------------------------------

def matmul_integer_to_float(a, b, a_scale, b_scale, a_zp=None, b_zp=None, bias=None):
    t = np.asarray(a_scale).dtype
    acc = acc_int32(a, b, a_zp, b_zp)
    scale = _f32(_f64(a_scale) * _f64(b_scale))         # NumPy broadcasting, as Mul
    y = _f32(_f64(_f32(_f64(acc))) * _f64(scale))
    if bias is not None:
        y = _f32(_f64(y) + _f64(bias))
    y = np.broadcast_to(y, acc.shape)
    if t == np.float16:
        y = y.astype(np.float16)   # float32 -> float16, nearest even (a single rounding)
    return np.array(y, order="C")  # (np.ascontiguousarray makes a 0-d result 1-D)


# ----------------------------------------------------------------------------------------
# DynamicQuantizeLinear (uint8) and DynamicQuantizeMatMul
# ----------------------------------------------------------------------------------------

def dynamic_quantize_linear(x):
    x = np.asarray(x, dtype=np.float32)
    xs = x.astype(np.float64)
    lo = min(0.0, float(xs.min())) if x.size else 0.0
    hi = max(0.0, float(xs.max())) if x.size else 0.0
    if hi == lo:
        scale = F32(1.0)
    else:
        scale = _f32(_f64(_f32(hi - lo)) / 255.0)[()]
    zp0 = _f32(0.0 - _f64(_f32(lo / float(scale))))[()]
    zp = int(np.rint(min(max(float(zp0), 0.0), 255.0)))   # clamp, then nearest even
    q = np.rint(_f64(_f32(xs / float(scale)))) + zp
    q = np.clip(q, 0, 255).astype(np.uint8)
    return q, np.asarray(scale, np.float32), np.asarray(zp, np.uint8)


def dynamic_quantize_matmul(a, b, b_scale, b_zp=None, bias=None):
    q, s, z = dynamic_quantize_linear(a)
    return matmul_integer_to_float(q, b, s, b_scale, z, b_zp, bias)


# ----------------------------------------------------------------------------------------
# QGemm
# ----------------------------------------------------------------------------------------

def qgemm_scale(alpha, a_scale, b_scale):
    """s = f32(f32(f32(alpha) * a_scale) * b_scale), shape () or (N,)."""
    sa = _f32(_f64(F32(alpha)) * _f64(np.asarray(a_scale).reshape(())))
    return _f32(_f64(sa) * _f64(np.asarray(b_scale).reshape(-1)))


def qgemm(a, a_scale, a_zp, b, b_scale, b_zp=None, c=None, y_scale=None, y_zp=None,
          alpha=1.0, trans_a=0, trans_b=0):
    a = np.asarray(a)
    b = np.asarray(b)
    a2 = a.T if trans_a else a
    b2 = b.T if trans_b else b
    bz = None if b_zp is None else np.asarray(b_zp).reshape(-1)
    acc = acc_int32(a2, b2, np.asarray(a_zp).reshape(()), bz)
    if c is not None:
        acc = o.wrap_int32(acc.astype(np.int64) + np.asarray(c).astype(np.int64))
    acc = np.broadcast_to(acc, (a2.shape[0], b2.shape[1]))
    s = qgemm_scale(alpha, a_scale, b_scale)
    if y_scale is None:
        return np.ascontiguousarray(_f32(_f64(_f32(_f64(acc))) * _f64(s)))
    m = _f32(_f64(s) / _f64(np.asarray(y_scale).reshape(())))
    m = np.where(np.isinf(m), np.copysign(F32(FLT_MAX), m), m)
    dt = np.asarray(y_zp).dtype
    info = np.iinfo(dt)
    x = np.rint(_f64(acc) * _f64(m)) + float(np.asarray(y_zp).reshape(-1)[0])
    return np.ascontiguousarray(np.clip(x, info.min, info.max).astype(dt))


# ----------------------------------------------------------------------------------------
# onnxruntime's float32 requantization (for stating the tie cases, never the truth)
# ----------------------------------------------------------------------------------------

def ort_style_requantize(acc, m, y_zp):
    """What onnxruntime's MLAS requantization computes: f32(f32(acc) * m) rounded to
    nearest even, plus the zero point, saturated.  Used only to say *where* onnxruntime
    may differ from the exact definition (ties and |acc| > 2**24), not as an oracle."""
    dt = np.asarray(y_zp).dtype
    info = np.iinfo(dt)
    x = np.rint(_f64(_f32(_f64(_f32(_f64(acc))) * _f64(m)))) + float(
        np.asarray(y_zp).reshape(-1)[0])
    return np.clip(x, info.min, info.max).astype(dt)
