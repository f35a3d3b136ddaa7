"""Reference implementations written from the spec (DESIGN.md §2), independent of gemmkit.

Everything here is plain NumPy in int64 / float64 (plus float32 where the spec fixes float32
arithmetic, e.g. the requantization multiplier).  Nothing imports gemmkit.

Conventions
-----------
* ``a`` is [..., M, K], ``b`` is [..., K, N] after numpy.matmul's 1-D promotion.
* A zero point / scale for ``a``: size-1 -> per tensor; 1-D [M] -> per row (row m uses
  element m, *not* NumPy's last-axis broadcast); N-D -> broadcast to [..., M, 1].
* For ``b``: size-1 -> per tensor; 1-D [N] -> per column; N-D -> broadcast to [..., 1, N].
* For ``y``: size-1 -> per tensor; 1-D [M] -> per row; N-D -> broadcast to [..., M, N]
  (so [..., M, 1] is per row, [..., 1, N] per column).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

FLOAT8_TYPES = tuple(
    np.dtype(getattr(ml_dtypes, n))
    for n in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
)
INT8_TYPES = (np.dtype(np.uint8), np.dtype(np.int8))
BF16 = np.dtype(ml_dtypes.bfloat16)
FLT_MAX = float(np.finfo(np.float32).max)


def is_float8(dt) -> bool:
    return np.dtype(dt) in FLOAT8_TYPES


def wrap_int32(x):
    """Two's-complement wrap of an int64 array into int32 (mod 2**32)."""
    x = np.asarray(x, dtype=np.int64)
    return (((x + 2**31) % 2**32) - 2**31).astype(np.int32)


# ----------------------------------------------------------------------------------------
# numpy.matmul shape handling
# ----------------------------------------------------------------------------------------

def _promote(a, b):
    """Returns (a3, b3, squeeze_m, squeeze_n) with a3 [..., M, K], b3 [..., K, N]."""
    sq_m = a.ndim == 1
    sq_n = b.ndim == 1
    if sq_m:
        a = a.reshape(1, -1)
    if sq_n:
        b = b.reshape(-1, 1)
    return a, b, sq_m, sq_n


def _squeeze(y, sq_m, sq_n):
    """Removes the dims numpy.matmul added for 1-D operands ([..., M, N] -> ...)."""
    if sq_n:
        y = y[..., 0]  # [..., M]
    if sq_m:
        y = y[..., 0] if sq_n else y[..., 0, :]
    return y


def _a_param(p, m):
    """Zero point / scale of ``a`` as an array broadcastable to [..., M, 1]."""
    p = np.asarray(p)
    if p.size == 1:
        return p.reshape(())
    if p.ndim == 1:
        assert p.shape[0] == m, (p.shape, m)
        return p.reshape(m, 1)
    return p


def _b_param(p, n):
    """Zero point / scale of ``b`` as an array broadcastable to [..., 1, N]."""
    p = np.asarray(p)
    if p.size == 1:
        return p.reshape(())
    if p.ndim == 1:
        assert p.shape[0] == n, (p.shape, n)
        return p.reshape(1, n)
    return p


def _y_param(p, m, sq_m=False, sq_n=False):
    """y_scale / y_zero_point as an array broadcastable to [..., M, N].  Where a (b) is
    1-D the returned output has no M (N) dim, and p broadcasts against that output as
    NumPy would: a size-1 dim goes where the dim was removed (a 1-D a's [N] is per
    column, not per row)."""
    p = np.asarray(p)
    if p.size == 1:
        return p.reshape(())
    if sq_m or sq_n:
        if sq_m:
            p = p[..., None, :] if not sq_n else p[..., None]
        if sq_n:
            p = p[..., None]
        return p
    if p.ndim == 1:
        assert p.shape[0] == m
        return p.reshape(m, 1)
    return p


# ----------------------------------------------------------------------------------------
# MatMulInteger
# ----------------------------------------------------------------------------------------

def int_acc(a, b, a_zp=None, b_zp=None):
    """Exact int64 (A - a_zp) @ (B - b_zp) in the [..., M, N] (promoted) layout, unwrapped."""
    a = np.asarray(a)
    b = np.asarray(b)
    a3, b3, sq_m, sq_n = _promote(a, b)
    m, n = a3.shape[-2], b3.shape[-1]
    ai = a3.astype(np.int64)
    bi = b3.astype(np.int64)
    if a_zp is not None:
        ai = ai - _a_param(np.asarray(a_zp).astype(np.int64), m)
    if b_zp is not None:
        bi = bi - _b_param(np.asarray(b_zp).astype(np.int64), n)
    # Batch dims of the zero points may broadcast into the output, so broadcast a, b first.
    batch = np.broadcast_shapes(ai.shape[:-2], bi.shape[:-2])
    ai = np.broadcast_to(ai, batch + ai.shape[-2:])
    bi = np.broadcast_to(bi, batch + bi.shape[-2:])
    if ai.shape[-1] == 0:
        acc = np.zeros(batch + (m, n), dtype=np.int64)
    elif ai.shape[-1] * 255 * 255 < 2**53:
        # Every partial sum is an integer of magnitude <= K * 255**2 < 2**53, so float64
        # (BLAS) arithmetic is exact here and much faster than NumPy's int64 loops.
        acc = np.matmul(ai.astype(np.float64), bi.astype(np.float64)).astype(np.int64)
    else:
        acc = np.matmul(ai, bi)
    return acc, sq_m, sq_n


def matmul_integer(a, b, a_zp=None, b_zp=None):
    acc, sq_m, sq_n = int_acc(a, b, a_zp, b_zp)
    return _squeeze(wrap_int32(acc), sq_m, sq_n)


# ----------------------------------------------------------------------------------------
# float8 codec reference (saturating, round-to-nearest-even)
# ----------------------------------------------------------------------------------------

_F8_TABLES = {}


def _f8_table(dt):
    dt = np.dtype(dt)
    if dt not in _F8_TABLES:
        codes = np.arange(128, dtype=np.uint8)
        vals = codes.view(dt).astype(np.float64)
        keep = np.isfinite(vals)
        pos_codes = codes[keep]
        pos_vals = vals[keep]
        assert np.all(np.diff(pos_vals) > 0)
        nan_code = int(np.array([np.nan], dtype=np.float32).astype(dt).view(np.uint8)[0])
        _F8_TABLES[dt] = (pos_codes, pos_vals, nan_code)
    return _F8_TABLES[dt]


def f8_max(dt) -> float:
    return float(_f8_table(dt)[1][-1])


def encode_f8_saturate(x, dt):
    """float64 values -> uint8 codes of ``dt`` with ONNX saturate=1 semantics.

    Round to nearest, ties to even (the code with an even mantissa, i.e. an even code),
    computed directly from the float64 value (no double rounding).  |x| beyond the
    largest finite value and +-inf -> +-max finite; NaN -> NaN.  Written independently of
    ml_dtypes' own cast, which is not saturating.
    """
    dt = np.dtype(dt)
    pos_codes, pos_vals, nan_code = _f8_table(dt)
    x = np.asarray(x, dtype=np.float64)
    nan = np.isnan(x)
    neg = np.signbit(x)
    ax = np.minimum(np.abs(np.where(nan, 0.0, x)), pos_vals[-1])
    hi = np.clip(np.searchsorted(pos_vals, ax, side="left"), 0, len(pos_vals) - 1)
    lo = np.clip(hi - 1, 0, len(pos_vals) - 1)
    d_hi = pos_vals[hi] - ax
    d_lo = ax - pos_vals[lo]
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (pos_codes[hi] % 2 == 0))
    idx = np.where(pick_hi, hi, lo)
    code = pos_codes[idx].astype(np.uint8)
    uz = "fnuz" in dt.name
    if uz:
        # No negative zero in the fnuz types: -0 encodes as 0.
        code = np.where(neg & (code != 0), code | 0x80, code)
    else:
        code = np.where(neg, code | 0x80, code)
    code = np.where(nan, nan_code, code).astype(np.uint8)
    return code


def decode_f8(codes, dt):
    return np.asarray(codes, dtype=np.uint8).view(np.dtype(dt)).astype(np.float64)


def f8_from_float(x, dt):
    """Convenience: float values -> float8 array of dtype dt (saturating, RNE)."""
    return encode_f8_saturate(x, dt).view(np.dtype(dt))


# ----------------------------------------------------------------------------------------
# QLinearMatMul
# ----------------------------------------------------------------------------------------

def _scale_f32(s):
    """Scale widened exactly to float32 (float32, float16, bfloat16, python float)."""
    if isinstance(s, float):
        return np.asarray(np.float32(s))
    s = np.asarray(s)
    return s.astype(np.float32)


def _f32_or_max(m):
    """Overflow of the float32 multiplier is clamped to +-FLT_MAX."""
    m = np.asarray(m, dtype=np.float32)
    return np.where(np.isinf(m), np.copysign(np.float32(FLT_MAX), m), m).astype(np.float32)


def multiplier(a_scale, b_scale, y_scale, m, n, sq_m=False, sq_n=False):
    """float32 m = f32(f32(a_scale) * f32(b_scale)) / f32(y_scale), shape broadcastable
    to [..., M, N]; overflow clamped to +-FLT_MAX.  sq_m / sq_n: a / b is 1-D
    (_y_param)."""
    sa = _a_param(_scale_f32(a_scale), m)
    sb = _b_param(_scale_f32(b_scale), n)
    sy = _y_param(_scale_f32(y_scale), m, sq_m, sq_n)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        prod = (sa * sb).astype(np.float32)
        mult = (prod / sy).astype(np.float32)
    return _f32_or_max(mult)


def _int_range(dt):
    info = np.iinfo(dt)
    return info.min, info.max


def _float_of(q):
    q = np.asarray(q)
    return q.astype(np.float64)


def qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    """Returns (expected, tol) where ``expected`` is the exact expected output when the
    spec pins it bit-exactly (a, b both int8/uint8), else None and ``tol`` describes
    the admissible interval: a tuple (x_lo, x_hi, out_dtype, y_zp_b) such that the
    output must be the (saturating) encoding of some x in [x_lo, x_hi]."""
    a = np.asarray(a)
    b = np.asarray(b)
    y_dt = np.asarray(y_zp).dtype
    a3, b3, sq_m, sq_n = _promote(a, b)
    m, n, k = a3.shape[-2], b3.shape[-1], a3.shape[-1]
    yzp = _y_param(np.asarray(y_zp), m, sq_m, sq_n)

    if not is_float8(a.dtype) and not is_float8(b.dtype):
        acc, _, _ = int_acc(a, b, a_zp, b_zp)
        acc = wrap_int32(acc).astype(np.float64)
        mult = multiplier(a_scale, b_scale, y_scale, m, n, sq_m, sq_n).astype(np.float64)
        x = acc * mult  # IEEE double product, as the spec says
        if is_float8(y_dt):
            xv = x + yzp.astype(np.float64)
            out = encode_f8_saturate(xv, y_dt).view(y_dt)
        else:
            lo, hi = _int_range(y_dt)
            r = np.rint(x) + yzp.astype(np.float64)
            out = np.clip(r, lo, hi).astype(y_dt)
        out = np.broadcast_to(out, acc.shape)
        return _squeeze(np.ascontiguousarray(out), sq_m, sq_n), None

    # float8 on a or b: float32 dequantize + float32 accumulation; oracle in float64
    # with an error bound.
    ra = (_float_of(a3) - _a_param(_float_of(a_zp), m)) * _a_param(
        _scale_f32(a_scale).astype(np.float64), m)
    rb = (_float_of(b3) - _b_param(_float_of(b_zp), n)) * _b_param(
        _scale_f32(b_scale).astype(np.float64), n)
    batch = np.broadcast_shapes(ra.shape[:-2], rb.shape[:-2])
    ra = np.broadcast_to(ra, batch + ra.shape[-2:])
    rb = np.broadcast_to(rb, batch + rb.shape[-2:])
    sy = _y_param(_scale_f32(y_scale).astype(np.float64), m, sq_m, sq_n)
    with np.errstate(all="ignore"):
        if k == 0:
            real = np.zeros(batch + (m, n))
            mag = np.zeros(batch + (m, n))
        else:
            real = np.matmul(ra, rb)
            mag = np.matmul(np.abs(ra), np.abs(rb))
        x = real / sy
        yz = yzp.astype(np.float64)
        eps = 2.0 ** -24
        err = (2.0 * (k + 8) * eps * mag / np.abs(sy)
               + 4 * eps * (np.abs(x) + np.abs(yz)) + 1e-300)
        if is_float8(y_dt):
            x_lo = x + yz - err
            x_hi = x + yz + err
        else:
            x_lo = x - err
            x_hi = x + err
    shape = batch + (m, n)
    x_lo = np.broadcast_to(x_lo, shape)
    x_hi = np.broadcast_to(x_hi, shape)
    yz_b = np.broadcast_to(yzp, shape)
    return None, (_squeeze(x_lo, sq_m, sq_n), _squeeze(x_hi, sq_m, sq_n), y_dt,
                  _squeeze(yz_b, sq_m, sq_n))


def qlinear_f8_sequential(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    """The float8-input path's exact result (DESIGN.md §2 in float32, each step rounded):
    real = (float(q) - float(zp)) * scale, each output's sum from +0 one product at a time
    in increasing k, x = acc / y_scale, then the output cast.  Per-row a / per-column b
    parameters as 1-d arrays (np.full them for per-tensor ones)."""
    f = np.float32
    ra = (a.astype(f) - a_zp.astype(f)[:, None]) * a_scale.astype(f)[:, None]
    rb = (b.astype(f) - b_zp.astype(f)[None, :]) * b_scale.astype(f)[None, :]
    acc = np.zeros((a.shape[0], b.shape[1]), f)
    with np.errstate(all="ignore"):
        for k in range(a.shape[1]):
            acc = acc + ra[:, k:k + 1] * rb[k:k + 1, :]
        x = acc / f(y_scale)
        if is_float8(y_zp.dtype):
            xz = (x + np.asarray(y_zp).astype(f)).astype(np.float64)
            return encode_f8_saturate(xz, y_zp.dtype).view(y_zp.dtype)
        lo, hi = _int_range(y_zp.dtype)
        r = np.where(np.isnan(x), 0.0, np.rint(x.astype(np.float64))) + float(y_zp)
        return np.clip(r, lo, hi).astype(y_zp.dtype)


def encode_output(x, y_dt, y_zp_b=None):
    """Monotone output map used for tolerance checks: int8/uint8: saturate(rint(x)+zp);
    float8: saturating encode (x already includes the zero point)."""
    y_dt = np.dtype(y_dt)
    if is_float8(y_dt):
        return decode_f8(encode_f8_saturate(x, y_dt), y_dt)
    lo, hi = _int_range(y_dt)
    return np.clip(np.rint(x) + np.asarray(y_zp_b, dtype=np.float64), lo, hi)


def check_qlinear(out, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    """Asserts that ``out`` is what the spec admits for these inputs."""
    exp, tol = qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
    y_dt = np.asarray(y_zp).dtype
    assert isinstance(out, np.ndarray), type(out)
    assert out.dtype == y_dt, (out.dtype, y_dt)
    if exp is not None:
        assert out.shape == exp.shape, (out.shape, exp.shape)
        if is_float8(y_dt):
            got = canonical_f8_codes(out)
            want = canonical_f8_codes(exp)
            bad = got != want
        else:
            bad = out != exp
        if np.any(bad):
            idx = tuple(np.argwhere(bad)[0])
            raise AssertionError(
                f"{int(bad.sum())} of {bad.size} elements differ; first at {idx}: "
                f"got {out[idx]!r}, expected {exp[idx]!r}")
        return
    x_lo, x_hi, y_dt, yz = tol
    assert out.shape == x_lo.shape, (out.shape, x_lo.shape)
    lo = encode_output(x_lo, y_dt, yz)
    hi = encode_output(x_hi, y_dt, yz)
    got = out.astype(np.float64)
    nan_expected = np.isnan(x_lo) | np.isnan(x_hi)
    if is_float8(y_dt):
        ok = np.where(nan_expected, np.isnan(got), (got >= lo) & (got <= hi))
    else:
        ok = nan_expected | ((got >= lo) & (got <= hi))
    if not np.all(ok):
        idx = tuple(np.argwhere(~ok)[0])
        raise AssertionError(
            f"{int((~ok).sum())} of {ok.size} elements outside tolerance; first at {idx}: "
            f"got {got[idx]!r}, admissible [{lo[idx]!r}, {hi[idx]!r}] "
            f"(x in [{x_lo[idx]!r}, {x_hi[idx]!r}])")


def canonical_f8_codes(arr):
    """uint8 codes with every NaN mapped to one value and -0 to +0 (sign of a zero
    result is not pinned down by the spec); NaN -> -1."""
    codes = np.asarray(arr).view(np.uint8).astype(np.int16)
    vals = np.asarray(arr).astype(np.float64)
    codes[np.isnan(vals)] = -1
    codes[vals == 0] = 0
    return codes
