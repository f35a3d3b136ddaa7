"""Inputs that NumPy and ONNX users really pass and that once gave silent wrong answers,
hangs or NumPy-internal errors: NumPy scalars of every supported dtype (ml_dtypes ones
included) as scales and zero points, ranks beyond NumPy's 32-operand helpers, and
products deep enough to overflow a kernel's int32 depth index."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import oracles as o

U8, S8 = np.uint8, np.int8
F8 = list(o.FLOAT8_TYPES)
BF16 = np.dtype(ml_dtypes.bfloat16)
SCALE_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
ZP_DTYPES = [np.dtype(U8), np.dtype(S8)] + [np.dtype(d) for d in F8]


def _gk():
    import gemmkit
    return gemmkit


def _scalar(value, dtype):
    """The NumPy scalar of `dtype` holding `value` (what indexing a 1-element array
    returns), and the 0-d array of the same value."""
    arr = np.array(value, dtype=dtype)
    return arr[()], arr


# ----------------------------------------------------------------------------------------
# 1. NumPy scalars (ml_dtypes included) read exactly as the 0-d array of the same value
# ----------------------------------------------------------------------------------------

def test_reported_cases(isa):
    gk = _gk()
    a = np.array([[100]], U8)
    b = np.array([[1]], S8)
    one, u0, s0 = np.float32(1), np.uint8(0), np.int8(0)
    # bfloat16 a_scale 0.5: 100 * 0.5 = 50
    y = gk.qlinear_matmul(a, ml_dtypes.bfloat16(0.5), u0, b, one, s0, one, u0)
    np.testing.assert_array_equal(y, [[50]])
    # float8_e4m3fn a_zero_point 2: (10 - 2) * 1 = 8
    f = np.array([[10]], ml_dtypes.float8_e4m3fn)
    zp = np.array(2, ml_dtypes.float8_e4m3fn)[()]
    y = gk.qlinear_matmul(f, one, zp, np.array([[1]], S8), one, s0, one, s0)
    np.testing.assert_array_equal(y, [[8]])


@pytest.mark.parametrize("fdt", F8, ids=[np.dtype(d).name for d in F8])
def test_float8_y_zero_point_scalar(isa, fdt):
    # 16 * 1 / 1 + (-4) = 12 in every float8 format
    gk = _gk()
    a = np.array([[16]], U8)
    b = np.array([[1]], S8)
    one = np.float32(1)
    yzp_s, yzp_a = _scalar(-4.0, fdt)
    y_s = gk.qlinear_matmul(a, one, np.uint8(0), b, one, np.int8(0), one, yzp_s)
    y_a = gk.qlinear_matmul(a, one, np.uint8(0), b, one, np.int8(0), one, yzp_a)
    assert y_s.dtype == np.dtype(fdt)
    assert float(y_s[0, 0]) == 12.0
    np.testing.assert_array_equal(y_s.view(np.uint8), y_a.view(np.uint8))


_QL_ORDER = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
             "y_zero_point")


def _positional(args):
    return [args[k] for k in _QL_ORDER]


@pytest.mark.parametrize("sdt", SCALE_DTYPES, ids=[d.name for d in SCALE_DTYPES])
@pytest.mark.parametrize("pos", ["a_scale", "b_scale", "y_scale"])
def test_scale_scalars_match_0d_arrays(isa, sdt, pos):
    gk = _gk()
    rng = np.random.default_rng(7)
    base = dict(a=rng.integers(0, 256, (3, 9)).astype(U8), a_scale=np.float32(0.02),
                a_zero_point=np.uint8(3), b=rng.integers(-128, 128, (9, 4)).astype(S8),
                b_scale=np.float32(0.03), b_zero_point=np.int8(-2),
                y_scale=np.float32(0.5), y_zero_point=np.uint8(100))
    for value in (0.375, 1.5, 0.0625, 3.0):
        s, s0d = _scalar(value, sdt)
        got = gk.qlinear_matmul(**{**base, pos: s})
        np.testing.assert_array_equal(got, gk.qlinear_matmul(**{**base, pos: s0d}))
        exp, _ = o.qlinear_matmul(*_positional({**base, pos: s0d}))
        np.testing.assert_array_equal(got, exp)


@pytest.mark.parametrize("sdt", SCALE_DTYPES, ids=[d.name for d in SCALE_DTYPES])
@pytest.mark.parametrize("pos", ["a_scale", "b_scale", "y_scale"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_scale_scalars_rejected_like_0d_arrays(sdt, pos, bad):
    gk = _gk()
    args = dict(a=np.ones((2, 3), U8), a_scale=np.float32(1), a_zero_point=np.uint8(0),
                b=np.ones((3, 2), S8), b_scale=np.float32(1), b_zero_point=np.int8(0),
                y_scale=np.float32(1), y_zero_point=np.uint8(0))
    s, s0d = _scalar(bad, sdt)
    for v in (s, s0d):
        with pytest.raises(ValueError, match=pos):
            gk.qlinear_matmul(**{**args, pos: v})


@pytest.mark.parametrize("sdt", SCALE_DTYPES, ids=[d.name for d in SCALE_DTYPES])
def test_zero_y_scale_scalar_rejected(sdt):
    gk = _gk()
    s, s0d = _scalar(0.0, sdt)
    for v in (s, s0d):
        with pytest.raises(ValueError, match="y_scale"):
            gk.qlinear_matmul(np.ones((2, 3), U8), np.float32(1), np.uint8(0),
                              np.ones((3, 2), S8), np.float32(1), np.int8(0),
                              v, np.uint8(0))


def _tensor(rng, shape, dt):
    if o.is_float8(dt):
        return rng.integers(-6, 7, shape).astype(np.float32).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


@pytest.mark.parametrize("zdt", ZP_DTYPES, ids=[d.name for d in ZP_DTYPES])
@pytest.mark.parametrize("pos", ["a_zero_point", "b_zero_point", "y_zero_point"])
def test_zero_point_scalars_match_0d_arrays(isa, zdt, pos):
    """The zero point's tensor takes the zero point's dtype; the others stay integer."""
    gk = _gk()
    rng = np.random.default_rng(11)
    dts = {"a": np.dtype(U8), "b": np.dtype(S8), "y": np.dtype(U8)}
    dts[pos[0]] = zdt
    a, b = _tensor(rng, (3, 8), dts["a"]), _tensor(rng, (8, 5), dts["b"])
    values = [-4.0, 2.0, 0.5, 0.0] if o.is_float8(zdt) else \
        [int(np.iinfo(zdt).min), 3, int(np.iinfo(zdt).max)]
    base = dict(a=a, a_scale=np.float32(0.05), a_zero_point=np.zeros((), dts["a"]),
                b=b, b_scale=np.float32(0.04), b_zero_point=np.zeros((), dts["b"]),
                y_scale=np.float32(0.25), y_zero_point=np.zeros((), dts["y"]))
    for value in values:
        zs, z0d = _scalar(value, zdt)
        got = gk.qlinear_matmul(**{**base, pos: zs})
        want = gk.qlinear_matmul(**{**base, pos: z0d})
        assert got.dtype == want.dtype == dts["y"]
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        if pos != "y_zero_point" and not o.is_float8(zdt):
            zps = (zs, None) if pos == "a_zero_point" else (None, zs)
            zps0 = (z0d, None) if pos == "a_zero_point" else (None, z0d)
            np.testing.assert_array_equal(gk.matmul_integer(a, b, *zps),
                                          o.matmul_integer(a, b, *zps0))


@pytest.mark.parametrize("zdt", ZP_DTYPES[:2], ids=["uint8", "int8"])
def test_zero_point_scalar_of_another_dtype_rejected(zdt):
    gk = _gk()
    other = S8 if zdt == np.dtype(U8) else U8
    a = np.ones((2, 3), zdt)
    with pytest.raises(TypeError, match="a_zero_point"):
        gk.matmul_integer(a, np.ones((3, 2), S8), other(1))
    for fdt in F8:
        with pytest.raises(TypeError, match="a_zero_point"):
            gk.matmul_integer(a, np.ones((3, 2), S8), _scalar(1.0, fdt)[0])


# ----------------------------------------------------------------------------------------
# 4. Ranks beyond 32 (NumPy's broadcast_shapes limit) on every entry point
# ----------------------------------------------------------------------------------------

def _high_rank(x, lead):
    return x.reshape((1,) * lead + x.shape)


@pytest.mark.parametrize("lead", [31, 36, 61])
def test_matmul_integer_high_rank_broadcast(isa, lead):
    gk = _gk()
    rng = np.random.default_rng(lead)
    a3 = rng.integers(0, 256, (2, 5, 7)).astype(U8)
    b = rng.integers(-128, 128, (7, 3)).astype(S8)
    want = o.matmul_integer(a3, b)
    a = _high_rank(a3, lead)                      # (1,)*lead + (2, 5, 7) against 2-D b
    y = gk.matmul_integer(a, b)
    assert y.shape == (1,) * lead + (2, 5, 3)
    np.testing.assert_array_equal(y.reshape(want.shape), want)
    # both batched, broadcasting against each other at high rank
    b4 = np.stack([b, b[::-1]]).reshape(2, 1, 7, 3)
    a4 = a3.reshape(1, 2, 5, 7)                 # batch (1, 2) against (2, 1): (2, 2)
    y = gk.matmul_integer(_high_rank(a4, lead - 1), _high_rank(b4, lead - 1))
    want = o.matmul_integer(a4, b4)
    assert y.shape == (1,) * (lead - 1) + want.shape
    np.testing.assert_array_equal(y.reshape(want.shape), want)


@pytest.mark.parametrize("lead", [33, 40])
def test_qlinear_matmul_high_rank_broadcast(isa, lead):
    gk = _gk()
    rng = np.random.default_rng(lead)
    a3 = rng.integers(0, 256, (3, 4, 6)).astype(U8)
    b2 = rng.integers(-128, 128, (6, 5)).astype(S8)
    bzp = rng.integers(-5, 5, (5,)).astype(S8)
    bs = rng.uniform(0.01, 0.05, (5,)).astype(np.float32)
    args = (np.float32(0.03), np.uint8(7), b2, bs, bzp, np.float32(0.2), np.uint8(128))
    want = gk.qlinear_matmul(a3, *args)
    exp, _ = o.qlinear_matmul(a3, *args)
    np.testing.assert_array_equal(want, exp)
    y = gk.qlinear_matmul(_high_rank(a3, lead), *args)
    assert y.shape == (1,) * lead + want.shape
    np.testing.assert_array_equal(y.reshape(want.shape), want)
    # per-row zero point of a given at high rank: [..., M, 1]
    azp = rng.integers(0, 9, (3, 4, 1)).astype(U8)
    as_ = np.full((3, 4, 1), 0.03, np.float32)
    y = gk.qlinear_matmul(_high_rank(a3, lead), _high_rank(as_, lead), _high_rank(azp, lead),
                          *args[2:])
    exp, _ = o.qlinear_matmul(a3, as_, azp, *args[2:])
    np.testing.assert_array_equal(y.reshape(exp.shape), exp)


def test_high_rank_batch_mismatch_is_a_value_error():
    gk = _gk()
    a = np.ones((1,) * 35 + (2, 3, 4), U8)
    b = np.ones((3, 4, 2), S8)
    with pytest.raises(ValueError, match="batch dimensions"):
        gk.matmul_integer(a, b)


# ----------------------------------------------------------------------------------------
# 5. Deep K: exact across the driver's depth chunks, and bounded in time and memory up to
#    the int32 limit on every path
# ----------------------------------------------------------------------------------------

def _kchunk():
    from gemmkit import _core
    return int(_core._QGEMM_KCHUNK)


@pytest.mark.parametrize("extra", [1, 67])
def test_depth_chunks_exact(isa, extra):
    gk = _gk()
    kc = _kchunk()
    K = kc + extra if extra == 1 else 2 * kc + extra
    rng = np.random.default_rng(extra)
    for (m, n) in ((1, 1), (3, 17), (18, 5)):
        a = rng.integers(0, 256, (m, K)).astype(U8)
        b = rng.integers(-128, 128, (K, n)).astype(S8)
        azp = rng.integers(0, 256, (m,)).astype(U8)
        bzp = rng.integers(-128, 128, (n,)).astype(S8)
        np.testing.assert_array_equal(gk.matmul_integer(a, b, azp, bzp),
                                      o.matmul_integer(a, b, azp, bzp))
        ys = np.float32(2.0 ** -12)
        args = (a, np.ones((m,), np.float32), azp, b, rng.uniform(0.5, 1, (n,)).astype(np.float32),
                bzp, ys, np.int8(-3))
        got = gk.qlinear_matmul(*args)
        exp, _ = o.qlinear_matmul(*args)
        np.testing.assert_array_equal(got, exp)


def test_depth_chunks_wrap_like_int32(isa):
    gk = _gk()
    K = 2 * _kchunk() + 5   # 255 * -128 * K passes 2**31: the int32 sum wraps
    a = np.broadcast_to(np.array([255], U8), (2, K))
    b = np.broadcast_to(np.array([-128], S8), (K, 3))
    np.testing.assert_array_equal(gk.matmul_integer(a, b), o.matmul_integer(a, b))


_DEEP_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, gemmkit as gk
    K = int(sys.argv[1])
    a = np.broadcast_to(np.array([255], np.uint8), (1, K))
    b = np.broadcast_to(np.array([-128], np.int8), (K, 1))
    y = gk.matmul_integer(a, b)
    want = (255 * -128 * K + 2**31) % 2**32 - 2**31
    assert y.shape == (1, 1) and int(y[0, 0]) == want, (y, want)
    print("ok", gk.cpu_info()["isa"])
""")

# The product does 2**31 multiply-adds: seconds on any path, not the minutes (or the
# endless loop of an int32 depth index) of an unbounded one.  QLinearMatMul runs the same
# depth chunks (test_depth_chunks_exact checks its requantization of the total).
_DEEP_TIMEOUT_S = 240


def _run_isolated(script, *args, isa=None, timeout=_DEEP_TIMEOUT_S):
    env = dict(os.environ)
    env.pop("GEMMKIT_TEST_ISA", None)
    if isa is not None:
        env["GEMMKIT_ISA"] = isa
    try:
        return subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"K={args} did not finish within {timeout} s on path {isa}")


def test_deepest_k_finishes_on_every_path(isa):
    r = _run_isolated(_DEEP_SCRIPT, 2**31 - 15, isa=isa)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok", isa]


_DEEP_F8_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, ml_dtypes as md, gemmkit as gk
    K = int(sys.argv[1])
    f8 = md.float8_e4m3fn
    a = np.broadcast_to(np.array([1.0], f8), (1, K))
    b = np.broadcast_to(np.array([-1], np.int8), (K, 1))
    y = gk.qlinear_matmul(a, np.float32(1), np.zeros((), f8), b, np.float32(1),
                          np.int8(0), np.float32(2.0**24), np.zeros((), f8))
    # float32 accumulation of -1s stalls at -2**24; / 2**24 = -1
    assert float(y[0, 0]) == -1.0, y
    print("ok")
""")


def test_deepest_k_float8_path_is_bounded():
    r = _run_isolated(_DEEP_F8_SCRIPT, 2**31 - 15)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok"]


def test_k_beyond_int32_is_a_clear_error():
    gk = _gk()
    K = 2**31
    a = np.broadcast_to(np.array([1], U8), (1, K))
    b = np.broadcast_to(np.array([1], S8), (K, 1))
    with pytest.raises(ValueError, match="K"):
        gk.matmul_integer(a, b)
    with pytest.raises(ValueError, match="K"):
        gk.qlinear_matmul(a, np.float32(1), np.uint8(0), b, np.float32(1), np.int8(0),
                          np.float32(1), np.uint8(0))


# ----------------------------------------------------------------------------------------
# Python numbers and other NumPy scalars as scales and zero points
# ----------------------------------------------------------------------------------------

def _ql(**kw):
    args = dict(a=np.full((2, 3), 10, U8), a_scale=np.float32(1), a_zero_point=np.uint8(0),
                b=np.ones((3, 2), S8), b_scale=np.float32(1), b_zero_point=np.int8(0),
                y_scale=np.float32(1), y_zero_point=np.uint8(0))
    args.update(kw)
    return _gk().qlinear_matmul(**args)


@pytest.mark.parametrize("pos", ["a_scale", "b_scale", "y_scale"])
def test_float64_scale_scalar_rejected_like_its_0d_array(pos):
    # np.float64 subclasses Python float, but it is a float64 value (NEP 50), not a weak
    # Python number: rejected exactly like np.array(0.5)
    for v in (np.float64(0.5), np.array(0.5)):
        with pytest.raises(TypeError, match=pos):
            _ql(**{pos: v})


@pytest.mark.parametrize("pos", ["a_scale", "b_scale", "y_scale"])
def test_python_numbers_are_weak_float32_scales(pos):
    np.testing.assert_array_equal(_ql(**{pos: 2}), _ql(**{pos: np.float32(2)}))
    np.testing.assert_array_equal(_ql(**{pos: 0.1}), _ql(**{pos: np.float32(0.1)}))
    with pytest.raises(TypeError, match=pos):
        _ql(**{pos: True})
    with pytest.raises(ValueError, match=pos) as info:
        _ql(**{pos: 10**400})
    assert len(str(info.value)) < 200
    with pytest.raises(ValueError, match=pos):
        _ql(**{pos: 1e300})       # finite double, inf as float32


def test_python_int_zero_points():
    gk = _gk()
    a, b = np.full((2, 3), 10, U8), np.ones((3, 2), S8)
    np.testing.assert_array_equal(gk.matmul_integer(a, b, 3, -2),
                                  gk.matmul_integer(a, b, np.uint8(3), np.int8(-2)))
    for bad, exc in ((256, ValueError), (-1, ValueError), (10**400, ValueError),
                     (True, TypeError), (2.0, TypeError)):
        with pytest.raises(exc, match="a_zero_point"):
            gk.matmul_integer(a, b, bad)
    f8 = np.ones((2, 3), ml_dtypes.float8_e4m3fn)
    with pytest.raises(TypeError, match="a_zero_point"):
        _ql(a=f8, a_zero_point=0)
    with pytest.raises(TypeError, match="y_zero_point"):
        _ql(y_zero_point=0)       # a Python int cannot fix the output dtype
