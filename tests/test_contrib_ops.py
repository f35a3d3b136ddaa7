"""gemmkit.contrib (com.microsoft QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul,
DynamicQuantizeLinear) against the exact oracles of contrib_oracles.py, bit for bit, on
every int8 kernel path; their argument errors; their run_node / reference_ops wiring
(onnx_ops)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gemmkit import _core

import contrib_oracles as co
from fenv_modes import directed_modes, rounding
import oracles as o

U8, S8, I32, F32, F16 = np.uint8, np.int8, np.int32, np.float32, np.float16
MIXES = [(U8, U8), (U8, S8), (S8, U8), (S8, S8)]


def _c():
    import gemmkit.contrib
    return gemmkit.contrib


def _rand_q(rng, dt, shape):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def assert_bits(got, want):
    """Same dtype, shape and bits (float: the sign of zero included)."""
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind == "f":
        view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
        bad = got.view(view) != want.view(view)
    else:
        bad = got != want
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{int(bad.sum())} of {bad.size} elements differ; first at "
                             f"{idx}: got {got[idx]!r}, expected {want[idx]!r}")


# ----------------------------------------------------------------------------------------
# MatMulIntegerToFloat
# ----------------------------------------------------------------------------------------

def _scales(rng, layout, m, n, dt=F32):
    """(a_scale, b_scale) for a scale layout; 'swapped' puts B's per-column scale first,
    as onnxruntime's fusion may."""
    s = lambda shape: rng.uniform(1e-4, 0.2, shape).astype(dt)  # noqa: E731
    if layout == "tensor":
        return s(()), s((1,))
    if layout == "column":
        return s(()), s((n,))
    if layout == "swapped":
        return s((n,)), s(())
    if layout == "row":
        return s((m, 1)), s((n,))
    raise AssertionError(layout)


@pytest.mark.parametrize("ta,tb", MIXES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("layout", ["tensor", "column", "swapped", "row"])
def test_matmul_integer_to_float_exact(isa, ta, tb, layout):
    c = _c()
    rng = np.random.default_rng(hash((np.dtype(ta).name, np.dtype(tb).name, layout)) % 2**32)
    for trial in range(4):
        m, k, n = (int(v) for v in rng.integers(1, 40, 3))
        batch = () if trial % 2 == 0 else (2,)
        a = _rand_q(rng, ta, batch + (m, k))
        b = _rand_q(rng, tb, (k, n))
        sa, sb = _scales(rng, layout, m, n)
        azp = [None, _rand_q(rng, ta, ()), _rand_q(rng, ta, (m,))][trial % 3]
        bzp = [_rand_q(rng, tb, (n,)), None, _rand_q(rng, tb, ())][trial % 3]
        bias = None if trial == 1 else rng.standard_normal(n).astype(F32)
        got = c.matmul_integer_to_float(a, b, sa, sb, azp, bzp, bias)
        assert_bits(got, co.matmul_integer_to_float(a, b, sa, sb, azp, bzp, bias))


def test_matmul_integer_to_float_shapes_and_float16(isa):
    c = _c()
    rng = np.random.default_rng(3)
    a1 = _rand_q(rng, U8, (9,))                      # 1-D A: promoted, M removed
    b = _rand_q(rng, S8, (9, 5))
    want = co.matmul_integer_to_float(a1, b, F32(0.5), F32(0.25))
    got = c.matmul_integer_to_float(a1, b, F32(0.5), F32(0.25))
    assert got.shape == (5,)
    assert_bits(got, want)
    b1 = _rand_q(rng, S8, (9,))                      # 1-D B: N removed
    a = _rand_q(rng, U8, (3, 4, 9))
    assert_bits(c.matmul_integer_to_float(a, b1, F32(0.5), F32(0.25), U8(7), S8(-3)),
                co.matmul_integer_to_float(a, b1, F32(0.5), F32(0.25), U8(7), S8(-3)))
    # 1-D @ 1-D: a 0-d result, as numpy.matmul and matmul_integer give
    got = c.matmul_integer_to_float(a1, b1, F32(0.5), F32(0.25), None, None, F32(1.5))
    assert got.shape == () and got.dtype == F32
    assert_bits(got, co.matmul_integer_to_float(a1, b1, F32(0.5), F32(0.25), None, None,
                                                F32(1.5)))
    assert c.dynamic_quantize_matmul(rng.standard_normal(9).astype(F32), b1,
                                     F32(0.25)).shape == ()
    # scales in non-native byte order are read by value
    sw = np.array(0.25, F32).astype(">f4")
    assert_bits(c.matmul_integer_to_float(a, b1, F32(0.5), sw),
                co.matmul_integer_to_float(a, b1, F32(0.5), F32(0.25)))
    # batch broadcasting and a batched B
    a = _rand_q(rng, S8, (3, 1, 4, 9))
    bb = _rand_q(rng, S8, (2, 9, 5))
    sb = rng.uniform(0.01, 1, 5).astype(F32)
    assert_bits(c.matmul_integer_to_float(a, bb, F32(0.1), sb),
                co.matmul_integer_to_float(a, bb, F32(0.1), sb))
    # float16 scales and bias: float16 output, rounded once from the float32 steps
    sa16, sb16 = np.float16(0.0123), rng.uniform(0.01, 1, 5).astype(F16)
    bias16 = rng.standard_normal(5).astype(F16)
    got = c.matmul_integer_to_float(_rand_q(rng, U8, (6, 9)), b, sa16, sb16, None, None,
                                    bias16)
    assert got.dtype == F16
    a = _rand_q(rng, U8, (6, 9))
    assert_bits(c.matmul_integer_to_float(a, b, sa16, sb16, None, None, bias16),
                co.matmul_integer_to_float(a, b, sa16, sb16, None, None, bias16))
    # empty dims
    for shape_a, shape_b in (((0, 9), (9, 5)), ((4, 0), (0, 5)), ((4, 9), (9, 0))):
        a, bq = np.zeros(shape_a, U8), np.zeros(shape_b, S8)
        bias = np.ones(shape_b[1], F32)
        assert_bits(c.matmul_integer_to_float(a, bq, F32(2), F32(3), None, None, bias),
                    co.matmul_integer_to_float(a, bq, F32(2), F32(3), None, None, bias))


def test_matmul_integer_to_float_rounds_large_accumulators_and_wraps(isa):
    """|acc| > 2**24: f32(acc) rounds (nearest even); K = 33100 of 255 * 255 wraps int32."""
    c = _c()
    rng = np.random.default_rng(4)
    k = 700
    a = rng.integers(200, 256, (3, k)).astype(U8)
    b = rng.integers(-128, -100, (k, 4)).astype(S8)
    s = F32(1.0)          # y = f32(acc) exactly: the rounding of int32 -> float32 shows
    got = c.matmul_integer_to_float(a, b, s, s)
    want = co.matmul_integer_to_float(a, b, s, s)
    assert_bits(got, want)
    acc = o.matmul_integer(a, b)
    assert np.any(got.astype(np.int64) != acc), "some |acc| > 2**24 should round"
    # with scales != 1: f32(f32(acc) * s) is not f32(acc * s) everywhere
    for _ in range(3):
        sa, sb = (np.asarray(rng.uniform(1e-3, 1), F32) for _ in range(2))
        sbv = rng.uniform(1e-3, 1, 4).astype(F32)
        bias = rng.standard_normal(4).astype(F32)
        for bs in (sb, sbv):
            assert_bits(c.matmul_integer_to_float(a, b, sa, bs, None, None, bias),
                        co.matmul_integer_to_float(a, b, sa, bs, None, None, bias))
    k = 33100
    a, bu = np.full((1, k), 255, U8), np.full((k, 2), 255, U8)
    got = c.matmul_integer_to_float(a, bu, F32(1), F32(1))
    assert_bits(got, co.matmul_integer_to_float(a, bu, F32(1), F32(1)))
    assert got[0, 0] < 0   # 255 * 255 * 33100 > 2**31: wrapped


def test_matmul_integer_to_float_packed_b_equals_unpacked(isa):
    import gemmkit as gk
    c = _c()
    rng = np.random.default_rng(5)
    for m in (1, 5, 17):
        a = _rand_q(rng, U8, (m, 64))
        w = _rand_q(rng, S8, (64, 24))
        wzp = _rand_q(rng, S8, (24,))
        sb = rng.uniform(0.001, 0.01, 24).astype(F32)
        bias = rng.standard_normal(24).astype(F32)
        pb = gk.pack_b(w, "matmul_integer", b_zero_point=wzp)
        want = co.matmul_integer_to_float(a, w, F32(0.02), sb, U8(3), wzp, bias)
        assert_bits(c.matmul_integer_to_float(a, pb, F32(0.02), sb, U8(3), None, bias), want)
        assert_bits(c.matmul_integer_to_float(a, w, F32(0.02), sb, U8(3), wzp, bias), want)
        x = rng.standard_normal((m, 64)).astype(F32)
        assert_bits(c.dynamic_quantize_matmul(x, pb, sb, None, bias),
                    co.dynamic_quantize_matmul(x, w, sb, wzp, bias))


# ----------------------------------------------------------------------------------------
# DynamicQuantizeLinear / DynamicQuantizeMatMul
# ----------------------------------------------------------------------------------------

def _dql_inputs():
    rng = np.random.default_rng(6)
    ties = np.arange(-127.5, 128.0, 0.5, dtype=F32)   # scale 1: every x.5 and the zero
    return {                                           # point 127.5 are ties
        "normal": rng.standard_normal((7, 13)).astype(F32),
        "ties": ties,
        "ties_shifted": (ties * F32(0.25)),            # scale 0.25 exactly: ties again
        # range [-126.5, 128.5]: scale 1, zero point 126.5 -> 126 (half to even, not up)
        "ties_odd_zero_point": np.arange(-126.5, 128.75, 0.5, dtype=F32),
        "positive": rng.uniform(0.5, 3, (4, 5)).astype(F32),
        "negative": -rng.uniform(0.5, 3, (4, 5)).astype(F32),
        "zeros": np.zeros((3, 4), F32),
        "negzero": np.full((2, 2), -0.0, F32),
        "single": np.array([[2.5]], F32),
        "0-d": np.array(-1.25, F32),   # keeps its shape () (ascontiguousarray made it (1,))
        "tiny": (rng.standard_normal((3, 3)) * 1e-38).astype(F32),
        "wide": np.array([-2e38, 0.0, 1.3e38, 7.0], F32),
        "empty": np.zeros((0, 4), F32),
    }


@pytest.mark.parametrize("name", list(_dql_inputs()))
def test_dynamic_quantize_linear_exact(name):
    c = _c()
    x = _dql_inputs()[name]
    q, s, z = c.dynamic_quantize_linear(x)
    wq, ws, wz = co.dynamic_quantize_linear(x)
    assert_bits(q, wq)
    assert_bits(s, ws)
    assert_bits(z, wz)
    assert q.shape == x.shape
    assert s.shape == () and z.shape == ()
    if name == "ties_odd_zero_point":
        assert s == 1 and z == 126
    if name == "ties":
        assert s == 1 and z == 128           # 127.5 rounds to the even 128
        assert q[0] == 0 and q[1] == 1       # -127.5 + 128 -> 0.5 -> 0 (even) ...
        assert q[-1] == 255
    # onnx's reference DynamicQuantizeLinear is a second reading of the same definition
    # (it differs only in the scale it reports for an all-zero x: 1/255, unused then)
    try:
        from onnx import helper
        from onnx.reference.ops.op_dynamic_quantize_linear import DynamicQuantizeLinear
    except ImportError:
        return
    if x.size and np.any(x != 0):
        node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
        run_params = {"log": lambda *a: None, "opsets": {"": 11}, "new_ops": None}
        rq, rs, rz = DynamicQuantizeLinear(node, run_params).run(x)
        assert_bits(q, rq)
        assert_bits(s, np.asarray(rs, F32))
        assert_bits(z, np.asarray(rz, U8))


@pytest.mark.parametrize("tb", [U8, S8], ids=lambda t: np.dtype(t).name)
def test_dynamic_quantize_matmul_exact(isa, tb):
    c = _c()
    rng = np.random.default_rng(7 + (tb == S8))
    for trial in range(6):
        m, k, n = (int(v) for v in rng.integers(1, 33, 3))
        batch = () if trial % 2 == 0 else (3,)
        a = (rng.standard_normal(batch + (m, k)) * rng.uniform(0.1, 10)).astype(F32)
        if trial == 4:
            a = np.abs(a)
        b = _rand_q(rng, tb, (k, n))
        per_col = trial % 3 != 0
        sb = rng.uniform(1e-3, 0.1, (n,) if per_col else ()).astype(F32)
        bzp = None if trial == 2 else _rand_q(rng, tb, sb.shape)
        bias = None if trial == 3 else rng.standard_normal(n).astype(F32)
        assert_bits(c.dynamic_quantize_matmul(a, b, sb, bzp, bias),
                    co.dynamic_quantize_matmul(a, b, sb, bzp, bias))
    # ties in A's quantization (scale 1) and an all-zero A
    a = np.append(np.arange(-127.5, 128.0, 0.5, dtype=F32), F32(0)).reshape(16, 32)
    b = _rand_q(rng, tb, (32, 7))
    assert_bits(c.dynamic_quantize_matmul(a, b, F32(0.5)),
                co.dynamic_quantize_matmul(a, b, F32(0.5)))
    z = np.zeros((4, 32), F32)
    bias = rng.standard_normal(7).astype(F32)
    got = c.dynamic_quantize_matmul(z, b, F32(0.5), None, bias)
    assert_bits(got, co.dynamic_quantize_matmul(z, b, F32(0.5), None, bias))
    assert_bits(got, np.broadcast_to(bias, (4, 7)).copy())


# ----------------------------------------------------------------------------------------
# QGemm
# ----------------------------------------------------------------------------------------

C_SHAPES = [None, (), (1,), "N", (1, "N"), ("M", 1), ("M", "N")]


def _c_shape(spec, m, n):
    if spec is None:
        return None
    if spec == "N":
        return (n,)
    return tuple(m if d == "M" else n if d == "N" else d for d in spec)


@pytest.mark.parametrize("ta,tb", MIXES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("out", ["float", "u8", "s8"])
def test_qgemm_exact(isa, ta, tb, out):
    c = _c()
    rng = np.random.default_rng(hash((np.dtype(ta).name, np.dtype(tb).name, out)) % 2**32)
    for trial in range(8):
        m, k, n = (int(v) for v in rng.integers(1, 36, 3))
        trans_a, trans_b = trial % 2, (trial // 2) % 2
        alpha = [1.0, 0.5, -1.75, 3.0, 1.0, 0.1, 2.0, -0.3][trial]
        a = _rand_q(rng, ta, (k, m) if trans_a else (m, k))
        b = _rand_q(rng, tb, (n, k) if trans_b else (k, n))
        sa = np.asarray(rng.uniform(1e-3, 0.05), F32)
        azp = _rand_q(rng, ta, [(), (1,)][trial % 2])
        per_col = trial % 3 == 1
        sb = rng.uniform(1e-3, 0.05, (n,) if per_col else [(), (1,)][trial % 2]).astype(F32)
        bzp = None if trial == 5 else _rand_q(rng, tb, sb.shape)
        cs = _c_shape(C_SHAPES[trial % len(C_SHAPES)], m, n)
        cc = None if cs is None else rng.integers(-20000, 20000, cs).astype(I32)
        if out == "float":
            ys = yzp = None
        else:
            dt = U8 if out == "u8" else S8
            ys = np.asarray(float(sa) * float(sb.max()) * abs(alpha) * np.sqrt(k) * 40, F32)
            yzp = _rand_q(rng, dt, ())
        got = c.qgemm(a, sa, azp, b, sb, bzp, cc, ys, yzp, alpha=alpha, transA=trans_a,
                      transB=trans_b)
        want = co.qgemm(a, sa, azp, b, sb, bzp, cc, ys, yzp, alpha, trans_a, trans_b)
        assert_bits(got, want)
        assert got.shape == (m, n)


def test_qgemm_is_qlinear_matmul_for_alpha_1_without_c(isa):
    import gemmkit as gk
    c = _c()
    rng = np.random.default_rng(11)
    a = _rand_q(rng, U8, (13, 40))
    b = _rand_q(rng, S8, (40, 9))
    sb = rng.uniform(0.001, 0.01, 9).astype(F32)
    bzp = _rand_q(rng, S8, (9,))
    args = (a, F32(0.03), U8(5), b, sb, bzp)
    got = c.qgemm(*args, None, F32(0.2), U8(100))
    assert_bits(got, gk.qlinear_matmul(*args, F32(0.2), U8(100)))
    assert_bits(got, co.qgemm(*args, None, F32(0.2), U8(100)))


def test_qgemm_ties_round_half_to_even_on_every_route(isa):
    """m = 0.5 exactly: every odd acc is a tie; the QLinearMatMul route (no C), the
    integer route (C = 0 given) and a packed B must all round half to even."""
    import gemmkit as gk
    c = _c()
    rng = np.random.default_rng(12)
    a = rng.integers(0, 8, (9, 5)).astype(U8)
    b = rng.integers(-8, 8, (5, 6)).astype(S8)
    acc = o.matmul_integer(a, b)
    assert np.any(acc % 2 == 1)
    want = np.clip(np.rint(acc * 0.5) + 10, -128, 127).astype(S8)
    args = (a, F32(1.0), U8(0), b, F32(0.5), S8(0))
    assert_bits(c.qgemm(*args, None, F32(1.0), S8(10)), want)
    assert_bits(c.qgemm(*args, np.zeros((), I32), F32(1.0), S8(10)), want)
    pb = gk.pack_b(b, "matmul_integer", b_zero_point=S8(0))
    assert_bits(c.qgemm(a, F32(1.0), U8(0), pb, F32(0.5), None, None, F32(1.0), S8(10)),
                want)
    # alpha = 0.5 with scales 1: the same multiplier, formed as f32(alpha * a_scale)
    assert_bits(c.qgemm(a, F32(1.0), U8(0), b, F32(1.0), S8(0), None, F32(1.0), S8(10),
                        alpha=0.5), want)


def test_qgemm_packed_b_and_extremes(isa):
    import gemmkit as gk
    c = _c()
    rng = np.random.default_rng(13)
    a = np.full((7, 300), 255, U8)
    b = np.full((300, 10), -128, S8)
    cc = np.full((10,), 2**31 - 1, I32)                # acc + C wraps mod 2**32
    for ys, yzp in ((None, None), (F32(1e-3), U8(0)), (F32(1e5), S8(-3))):
        want = co.qgemm(a, F32(0.01), U8(0), b, F32(0.02), S8(0), cc, ys, yzp, 0.25)
        assert_bits(c.qgemm(a, F32(0.01), U8(0), b, F32(0.02), S8(0), cc, ys, yzp,
                            alpha=0.25), want)
        pb = gk.pack_b(b, "matmul_integer", b_zero_point=S8(0))
        assert_bits(c.qgemm(a, F32(0.01), U8(0), pb, F32(0.02), None, cc, ys, yzp,
                            alpha=0.25), want)
    # random |acc| > 2**24 (float32 rounds acc itself) with random scales and alpha
    a = rng.integers(200, 256, (6, 700)).astype(U8)
    b = rng.integers(-128, -100, (700, 5)).astype(S8)
    for trial in range(4):
        sa = np.asarray(rng.uniform(1e-3, 1), F32)
        sb = rng.uniform(1e-3, 1, [(), (5,)][trial % 2]).astype(F32)
        alpha = float(rng.uniform(0.1, 3))
        cc = rng.integers(-2**30, 2**30, (5,)).astype(I32)
        ys, yzp = (None, None) if trial < 2 else (np.asarray(float(sa) * 2e5, F32), S8(1))
        want = co.qgemm(a, sa, U8(7), b, sb, None, cc, ys, yzp, alpha)
        assert_bits(c.qgemm(a, sa, U8(7), b, sb, None, cc, ys, yzp, alpha=alpha), want)
        if ys is None:
            assert np.any(np.abs(o.matmul_integer(a, b, U8(7)).astype(np.int64) + cc)
                          > 2**24)
    # K = 0: acc = 0 (+ C)
    for ys, yzp in ((None, None), (F32(0.5), U8(3))):
        a0, b0 = np.zeros((4, 0), U8), np.zeros((0, 3), U8)
        cc = rng.integers(-5, 5, (4, 1)).astype(I32)
        assert_bits(c.qgemm(a0, F32(1), U8(0), b0, F32(1), U8(0), cc, ys, yzp),
                    co.qgemm(a0, F32(1), U8(0), b0, F32(1), U8(0), cc, ys, yzp))


_F = np.float32
# orders an implementation might use instead of the defined f32(f32(f32(al*sa)*sb)/sy)
_OTHER_ORDERS = {
    "al*(sa*sb)": lambda al, sa, sb, sy: _F(_F(al * _F(sa * sb)) / sy),
    "sa*(sb*al)": lambda al, sa, sb, sy: _F(_F(sa * _F(sb * al)) / sy),
    "(al*sa)*(sb/sy)": lambda al, sa, sb, sy: _F(_F(al * sa) * _F(sb / sy)),
    "al*((sa*sb)/sy)": lambda al, sa, sb, sy: _F(al * _F(_F(sa * sb) / sy)),
    "float64": lambda al, sa, sb, sy: _F(float(al) * float(sa) * float(sb) / float(sy)),
}


@pytest.mark.parametrize("order", list(_OTHER_ORDERS))
def test_qgemm_multiplier_is_formed_in_the_defined_order(isa, order):
    """m = f32(f32(f32(alpha) * a_scale) * b_scale) / y_scale.  For scales where ``order``
    gives another float32, an accumulator whose rounding tells the two apart is driven
    through both routes (C given: the integer route; no C: the QLinearMatMul route)."""
    c = _c()
    rng = np.random.default_rng(14)
    a_vals, b_vals = np.meshgrid(np.arange(1, 256), np.arange(1, 128), indexing="ij")
    accs = (a_vals * b_vals).reshape(-1).astype(np.float64)
    for _ in range(2000):
        al = _F(rng.choice([0.7, 1.3, 3.1]))
        sa, sb = (_F(rng.uniform(0.01, 1)) for _ in range(2))
        # y_scale such that every acc (<= 255 * 127) lands in the uint8 range
        sy = _F(float(al) * float(sa) * float(sb) / rng.uniform(0.002, 0.0075))
        m = _F(_F(_F(al * sa) * sb) / sy)
        w = _OTHER_ORDERS[order](al, sa, sb, sy)
        if w == m:
            continue
        x = accs * float(m)
        hit = np.flatnonzero(np.rint(x) != np.rint(accs * float(w)))
        if hit.size:
            break
    else:
        pytest.fail(f"no distinguishing case found for {order}")
    k = int(hit[0])
    a = np.full((1, 1), a_vals.reshape(-1)[k], U8)
    b = np.full((1, 1), b_vals.reshape(-1)[k], S8)
    want = co.qgemm(a, sa, U8(0), b, sb, S8(0), None, sy, U8(0), float(al))
    assert int(want[0, 0]) == int(np.rint(accs[k] * float(m)))
    assert_bits(c.qgemm(a, sa, U8(0), b, sb, S8(0), None, sy, U8(0), alpha=float(al)),
                want)                                               # QLinearMatMul route
    acc = np.full((1, 1), int(accs[k]), I32)                        # integer route
    assert_bits(c.qgemm(np.zeros((1, 3), U8), sa, U8(0), np.ones((3, 1), S8), sb, S8(0),
                        acc, sy, U8(0), alpha=float(al)), want)


# ----------------------------------------------------------------------------------------
# errors: before any work, naming the op and the argument
# ----------------------------------------------------------------------------------------

def _err_cases():
    a, b = np.ones((3, 4), U8), np.ones((4, 5), S8)
    f = F32(0.5)
    x = np.ones((3, 4), F32)
    return [
        # MatMulIntegerToFloat
        ("mitf A float", lambda c: c.matmul_integer_to_float(x, b, f, f), TypeError, r"A\b"),
        ("mitf B list", lambda c: c.matmul_integer_to_float(a, [[1]], f, f), TypeError,
         r"\bB\b"),
        ("mitf a_scale f64", lambda c: c.matmul_integer_to_float(a, b, np.float64(1), f),
         TypeError, r"a_scale.*float64"),
        ("mitf scales mixed", lambda c: c.matmul_integer_to_float(a, b, F16(1), f),
         TypeError, r"a_scale and b_scale"),
        ("mitf bias dtype", lambda c: c.matmul_integer_to_float(
            a, b, f, f, None, None, np.ones(5, np.float64)), TypeError, r"bias"),
        ("mitf bias shape", lambda c: c.matmul_integer_to_float(
            a, b, f, f, None, None, np.ones(4, F32)), ValueError, r"bias.*\[4\].*\[3, 5\]"),
        ("mitf b_scale shape", lambda c: c.matmul_integer_to_float(
            a, b, f, np.ones(4, F32)), ValueError, r"b_scale.*\[4\]"),
        ("mitf scale enlarges", lambda c: c.matmul_integer_to_float(
            a, b, np.ones((2, 3, 1), F32), f), ValueError, r"a_scale.*\[2, 3, 1\]"),
        ("mitf a_zp dtype", lambda c: c.matmul_integer_to_float(a, b, f, f, S8(1)),
         TypeError, r"MatMulIntegerToFloat: .*a_zero_point"),
        ("mitf b_zp shape", lambda c: c.matmul_integer_to_float(
            a, b, f, f, None, np.zeros(4, S8)), ValueError, r"b_zero_point"),
        ("mitf inner", lambda c: c.matmul_integer_to_float(a, np.ones((5, 5), S8), f, f),
         ValueError, r"MatMulIntegerToFloat: .*K=4.*K=5"),
        ("mitf wrong pack", lambda c: c.matmul_integer_to_float(
            a, __import__("gemmkit").pack_b(b, "qlinear_matmul", b_scale=f,
                                            b_zero_point=S8(0)), f, f),
         ValueError, r"\bB\b.*qlinear_matmul"),
        # DynamicQuantizeLinear / DynamicQuantizeMatMul
        ("dql int", lambda c: c.dynamic_quantize_linear(np.ones(3, U8)), TypeError, r"x\b"),
        ("dql nan", lambda c: c.dynamic_quantize_linear(np.array([1, np.nan], F32)),
         ValueError, r"x\b.*NaN"),
        ("dql range", lambda c: c.dynamic_quantize_linear(np.array([-3e38, 1e38], F32)),
         ValueError, r"range of x.*overflows"),
        ("dql tiny range", lambda c: c.dynamic_quantize_linear(np.array([1e-44, -1e-44], F32)),
         ValueError, r"range of x.*underflows to 0"),
        ("dqmm A tiny range", lambda c: c.dynamic_quantize_matmul(
            np.array([[1e-44, 0, 0, 0]], F32), b, f), ValueError, r"range of A.*underflows"),
        ("dqmm A f64", lambda c: c.dynamic_quantize_matmul(x.astype(np.float64), b, f),
         TypeError, r"A\b.*float64"),
        ("dqmm A inf", lambda c: c.dynamic_quantize_matmul(
            np.array([[np.inf, 0, 0, 0]], F32), b, f), ValueError, r"A\b.*infinity"),
        ("dqmm b_scale f16", lambda c: c.dynamic_quantize_matmul(x, b, F16(1)), TypeError,
         r"b_scale.*float16"),
        ("dqmm b_scale shape", lambda c: c.dynamic_quantize_matmul(x, b, np.ones(3, F32)),
         ValueError, r"b_scale.*\[3\]"),
        ("dqmm bias shape", lambda c: c.dynamic_quantize_matmul(
            x, b, f, None, np.ones(3, F32)), ValueError, r"bias"),
        ("dqmm inner", lambda c: c.dynamic_quantize_matmul(np.ones((3, 5), F32), b, f),
         ValueError, r"DynamicQuantizeMatMul: .*K=5.*K=4"),
        ("dqmm b_zp dtype", lambda c: c.dynamic_quantize_matmul(x, b, f, U8(0)),
         TypeError, r"b_zero_point"),
        # QGemm
        ("qg A 3-D", lambda c: c.qgemm(np.ones((2, 3, 4), U8), f, U8(0), b, f),
         ValueError, r"QGemm: A must be 2-D.*\[2, 3, 4\]"),
        ("qg A f32", lambda c: c.qgemm(x, f, U8(0), b, f), TypeError, r"A\b.*float32"),
        ("qg inner", lambda c: c.qgemm(a, f, U8(0), b, f, transB=1), ValueError,
         r"transB=1"),
        ("qg transA 2", lambda c: c.qgemm(a, f, U8(0), b, f, transA=2), ValueError,
         r"transA"),
        ("qg transA float", lambda c: c.qgemm(a, f, U8(0), b, f, transA=1.0), TypeError,
         r"transA"),
        ("qg alpha str", lambda c: c.qgemm(a, f, U8(0), b, f, alpha="1"), TypeError,
         r"alpha"),
        ("qg alpha nan", lambda c: c.qgemm(a, f, U8(0), b, f, alpha=float("nan")),
         ValueError, r"alpha"),
        ("qg alpha overflow", lambda c: c.qgemm(a, F32(1e30), U8(0), b, f, alpha=1e10),
         ValueError, r"alpha \* a_scale"),
        ("qg a_scale vec", lambda c: c.qgemm(a, np.ones(3, F32), U8(0), b, f), ValueError,
         r"a_scale.*\[3\]"),
        ("qg a_scale f16", lambda c: c.qgemm(a, F16(1), U8(0), b, f), TypeError,
         r"a_scale.*float16"),
        ("qg a_scale inf", lambda c: c.qgemm(a, F32(np.inf), U8(0), b, f), ValueError,
         r"a_scale"),
        ("qg a_zp missing", lambda c: c.qgemm(a, f, None, b, f), ValueError,
         r"a_zero_point"),
        ("qg a_zp dtype", lambda c: c.qgemm(a, f, S8(0), b, f), TypeError,
         r"a_zero_point.*uint8.*int8"),
        ("qg a_zp range", lambda c: c.qgemm(a, f, 256, b, f), ValueError, r"a_zero_point"),
        ("qg a_zp vec", lambda c: c.qgemm(a, f, np.zeros(3, U8), b, f), ValueError,
         r"a_zero_point.*\[3\]"),
        ("qg b_scale M", lambda c: c.qgemm(a, f, U8(0), b, np.ones(3, F32)), ValueError,
         r"b_scale.*\[5\].*\[3\]"),
        ("qg b_zp shape", lambda c: c.qgemm(a, f, U8(0), b, np.ones(5, F32), S8(0)),
         ValueError, r"b_scale and b_zero_point.*\[5\].*\[\]"),
        ("qg b_zp dtype", lambda c: c.qgemm(a, f, U8(0), b, f, U8(0)), TypeError,
         r"b_zero_point"),
        ("qg C dtype", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), np.ones(5, np.int64)),
         TypeError, r"\bC\b.*int64"),
        ("qg C shape", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), np.ones(3, I32)),
         ValueError, r"\bC\b.*\[3\].*\[3, 5\]"),
        ("qg C 3-D", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), np.ones((1, 3, 5), I32)),
         ValueError, r"\bC\b"),
        ("qg y half", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), None, f), ValueError,
         r"y_scale and y_zero_point"),
        ("qg y_zp int", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), None, f, 3), TypeError,
         r"y_zero_point"),
        ("qg y_zp f32", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), None, f, F32(0)),
         TypeError, r"y_zero_point.*float32"),
        ("qg y_scale 0", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), None, F32(0), U8(0)),
         ValueError, r"y_scale"),
        ("qg y_scale vec", lambda c: c.qgemm(a, f, U8(0), b, f, S8(0), None,
                                             np.ones(3, F32), U8(0)), ValueError,
         r"y_scale.*\[3\]"),
        ("qg packed transB", lambda c: c.qgemm(
            a, f, U8(0), __import__("gemmkit").pack_b(b, "matmul_integer"), f, transB=1),
         ValueError, r"transB"),
    ]


ERR_CASES = _err_cases()


@pytest.mark.parametrize("case", ERR_CASES, ids=[e[0] for e in ERR_CASES])
def test_errors_name_the_argument(case):
    _, fn, exc, pattern = case
    op = {"mitf": "MatMulIntegerToFloat", "dql": "DynamicQuantizeLinear",
          "dqmm": "DynamicQuantizeMatMul", "qg": "QGemm"}[case[0].split()[0]]
    with pytest.raises(exc) as info:
        fn(_c())
    msg = str(info.value)
    assert msg.startswith(f"{op}: "), msg
    assert re.search(pattern, msg), (pattern, msg)


# ----------------------------------------------------------------------------------------
# run_node and reference_ops wiring
# ----------------------------------------------------------------------------------------

def test_run_node_contrib_ops(isa):
    pytest.importorskip("onnx")
    from onnx import helper

    from gemmkit.onnx_ops import run_node
    c = _c()
    rng = np.random.default_rng(21)
    a = _rand_q(rng, U8, (4, 6))
    b = _rand_q(rng, S8, (6, 3))
    sb = rng.uniform(0.01, 0.1, 3).astype(F32)
    bias = rng.standard_normal(3).astype(F32)
    ms = "com.microsoft"
    # MatMulIntegerToFloat with a_zero_point left out by an empty name
    node = helper.make_node("MatMulIntegerToFloat", ["A", "B", "sa", "sb", "", "bz", "bias"],
                            ["Y"], domain=ms)
    bz = _rand_q(rng, S8, ())
    (y,) = run_node(node, [a, b, F32(0.1), sb, bz, bias])          # present inputs
    assert_bits(y, co.matmul_integer_to_float(a, b, F32(0.1), sb, None, bz, bias))
    (y2,) = run_node(node, [a, b, F32(0.1), sb, None, bz, bias])   # positional
    assert_bits(y2, y)
    # DynamicQuantizeMatMul, trailing optional inputs left out
    x = rng.standard_normal((4, 6)).astype(F32)
    node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "sb"], ["Y"], domain=ms)
    (y,) = run_node(node, [x, b, sb])
    assert_bits(y, c.dynamic_quantize_matmul(x, b, sb))
    # QGemm with attributes, C omitted, quantized output
    node = helper.make_node("QGemm", ["A", "sa", "za", "B", "sb", "zb", "", "sy", "zy"],
                            ["Y"], domain=ms, alpha=0.5, transB=1)
    bt = np.ascontiguousarray(b.T)
    zb = np.zeros(3, S8)
    (y,) = run_node(node, [a, F32(0.1), U8(3), bt, sb, zb, None, F32(0.05), U8(128)])
    assert_bits(y, co.qgemm(a, F32(0.1), U8(3), bt, sb, zb, None, F32(0.05), U8(128),
                            alpha=0.5, trans_b=1))
    # float output: no y inputs at all
    node = helper.make_node("QGemm", ["A", "sa", "za", "B", "sb", "zb", "C"], ["Y"],
                            domain=ms)
    cc = np.arange(3, dtype=I32)
    (y,) = run_node(node, [a, F32(0.1), U8(3), b, sb, zb, cc])
    assert_bits(y, co.qgemm(a, F32(0.1), U8(3), b, sb, zb, cc))
    # mapping errors
    with pytest.raises(ValueError, match="unexpected attributes"):
        run_node(helper.make_node("QGemm", list("abcdef"), ["Y"], domain=ms, beta=1.0),
                 [a, F32(0.1), U8(3), b, sb, zb])
    with pytest.raises(ValueError, match="b_scale"):
        run_node(helper.make_node("QGemm", ["a", "b", "c", "d", ""], ["Y"], domain=ms),
                 [a, F32(0.1), U8(3), b, None])
    with pytest.raises(NotImplementedError, match="QLinearConv"):
        run_node(helper.make_node("QLinearConv", ["a"], ["Y"], domain=ms), [a])
    with pytest.raises(NotImplementedError, match="domain"):
        run_node(helper.make_node("QGemm", ["a"], ["Y"], domain="custom"), [a])
    with pytest.raises(NotImplementedError):   # contrib ops live in com.microsoft only
        run_node(helper.make_node("QGemm", ["a"], ["Y"]), [a])


def test_reference_ops_run_every_opset_form(isa):
    """One model per form: the evaluator runs each node on gemmkit (its class comes from
    reference_ops) and gets what run_node / the oracles give."""
    pytest.importorskip("onnx")
    from onnx import TensorProto as TP
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    import gemmkit.onnx_ops as go
    ops = go.reference_ops()
    assert {(k.op_domain, k.__name__) for k in ops} == {
        ("", "MatMulInteger"), ("", "QLinearMatMul"), ("", "Gemm"),
        ("com.microsoft", "QGemm"), ("com.microsoft", "MatMulIntegerToFloat"),
        ("com.microsoft", "DynamicQuantizeMatMul")}
    rng = np.random.default_rng(22)

    def run(nodes, feeds, opset, outs=("Y",)):
        inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                v.shape) for k, v in feeds.items()]
        g = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info(o_, TP.UNDEFINED, None)
                               for o_ in outs])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("com.microsoft", 1)])
        ev = ReferenceEvaluator(model, new_ops=ops)
        assert all(type(n) in ops for n in ev.rt_nodes_), [type(n) for n in ev.rt_nodes_]
        return ev.run(None, feeds)

    f32 = lambda *s: rng.standard_normal(s).astype(F32)  # noqa: E731
    a, b = f32(3, 4), f32(4, 5)
    # Gemm opset 6: broadcast attribute; default off (C must be (M, N))
    (y,) = run([helper.make_node("Gemm", ["A", "B", "C"], ["Y"], broadcast=1, alpha=0.5)],
               {"A": a, "B": b, "C": f32(5)}, 6)
    assert y.shape == (3, 5)
    with pytest.raises(ValueError):
        run([helper.make_node("Gemm", ["A", "B", "C"], ["Y"])],
            {"A": a, "B": b, "C": f32(5)}, 6)
    # Gemm opset 13: C omitted, transA
    (y,) = run([helper.make_node("Gemm", ["A", "B"], ["Y"], transA=1, beta=0.0)],
               {"A": a.T.copy(), "B": b}, 13)
    np.testing.assert_allclose(y, a @ b, rtol=1e-5, atol=1e-6)
    # QLinearMatMul opset 21 with a float8 input and float16 scales
    f8 = o.FLOAT8_TYPES[0]
    qa = o.f8_from_float(rng.uniform(-4, 4, (3, 8)), f8)
    qb = _rand_q(rng, S8, (8, 2))
    feeds = {"a": qa, "sa": np.float16(0.5), "za": np.zeros((), f8), "b": qb,
             "sb": np.float16(0.25), "zb": S8(0), "sy": np.float16(0.125), "zy": U8(100)}
    feeds = {k: np.asarray(v) for k, v in feeds.items()}
    (y,) = run([helper.make_node("QLinearMatMul", list(feeds), ["Y"])], feeds, 21)
    o.check_qlinear(y, *feeds.values())
    # MatMulInteger + the three contrib ops in one graph
    qa, qw = _rand_q(rng, U8, (2, 3, 8)), _rand_q(rng, S8, (8, 4))
    nodes = [
        helper.make_node("MatMulInteger", ["qa", "qw", "za"], ["mi"]),
        helper.make_node("MatMulIntegerToFloat", ["qa", "qw", "sa", "sw", "za"], ["mf"],
                         domain="com.microsoft"),
        helper.make_node("DynamicQuantizeMatMul", ["x", "qw", "sw", "", "bias"], ["dq"],
                         domain="com.microsoft"),
        helper.make_node("QGemm", ["q2", "sa", "za", "qw", "sw", "zw", "", "sy", "zy"],
                         ["qg"], domain="com.microsoft", alpha=2.0),
    ]
    feeds = {"qa": qa, "qw": qw, "za": U8(4), "sa": F32(0.02), "sw": F32(0.01),
             "x": f32(5, 8), "bias": f32(4), "q2": _rand_q(rng, U8, (6, 8)),
             "zw": S8(0), "sy": F32(0.03), "zy": S8(-5)}
    feeds = {k: np.asarray(v) for k, v in feeds.items()}
    mi, mf, dq, qg = run(nodes, feeds, 13, outs=("mi", "mf", "dq", "qg"))
    assert_bits(mi, o.matmul_integer(qa, qw, U8(4)))
    assert_bits(mf, co.matmul_integer_to_float(qa, qw, F32(0.02), F32(0.01), U8(4)))
    assert_bits(dq, co.dynamic_quantize_matmul(feeds["x"], qw, F32(0.01), None,
                                               feeds["bias"]))
    assert_bits(qg, co.qgemm(feeds["q2"], F32(0.02), U8(4), qw, F32(0.01), S8(0), None,
                             F32(0.03), S8(-5), alpha=2.0))


def test_reference_ops_linked_attributes_in_a_function():
    """A function whose Gemm takes alpha/transB from the function's attributes
    (ref_attr_name), evaluated with the attributes given at run time: the evaluator
    resolves them and gemmkit applies them.  (onnx's evaluator does not hand new_ops to
    the evaluators of a *model's* local functions, so those bodies run on onnx's own ops.)"""
    pytest.importorskip("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    import gemmkit.onnx_ops as go
    gemm = helper.make_node("Gemm", ["A", "B"], ["Y"])
    for name, typ in (("alpha", 1), ("transB", 2)):
        gemm.attribute.append(helper.make_attribute_ref(name, typ))
    fn = helper.make_function("local", "ScaledMM", ["A", "B"], ["Y"], [gemm],
                              [helper.make_opsetid("", 13)], attributes=["alpha", "transB"])
    a = np.arange(6, dtype=F32).reshape(2, 3)
    b = np.arange(12, dtype=F32).reshape(4, 3)
    calls = []
    ops = go.reference_ops()
    gemm_cls = next(k for k in ops if k.__name__ == "Gemm")
    orig = gemm_cls._run

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return orig(self, *args, **kwargs)

    gemm_cls._run = spy
    try:
        ev = ReferenceEvaluator(fn, new_ops=ops)
        (y,) = ev.run(None, {"A": a, "B": b}, attributes={"alpha": -2.0, "transB": 1})
        (y1,) = ev.run(None, {"A": a, "B": b.T.copy()}, attributes={"alpha": 1.0,
                                                                   "transB": 0})
    finally:
        gemm_cls._run = orig
    assert len(calls) == 2, "the function's Gemm did not run on gemmkit"
    np.testing.assert_array_equal(y, -2.0 * (a @ b.T))
    np.testing.assert_array_equal(y1, a @ b.T)


def test_public_signatures_are_annotated():
    """gemmkit ships py.typed: its Python-level public functions carry complete
    annotations (mypy --strict users would otherwise get untyped-call errors)."""
    import inspect

    import gemmkit.onnx_ops as go
    c = _c()
    for fn in (c.qgemm, c.matmul_integer_to_float, c.dynamic_quantize_matmul,
               c.dynamic_quantize_linear, go.reference_ops):
        sig = inspect.signature(fn)
        missing = [p.name for p in sig.parameters.values()
                   if p.annotation is inspect.Parameter.empty]
        assert not missing, f"{fn.__name__}: unannotated {missing}"
        assert sig.return_annotation is not inspect.Signature.empty, fn.__name__
        assert fn.__doc__ and "com.microsoft" in (fn.__doc__ + (c.__doc__ or "")), fn


# ---- the C loops behind DynamicQuantizeLinear and MatMulIntegerToFloat ---------------------

def _dql_numpy(x):
    """The NumPy definition (the module docstring's steps), for bit comparisons."""
    lo = np.minimum(F32(0), x.min()) if x.size else F32(0)
    hi = np.maximum(F32(0), x.max()) if x.size else F32(0)
    scale = F32(1) if hi == lo else F32(F32(hi - lo) / F32(255))
    zp = np.uint8(np.rint(np.clip(F32(F32(0) - F32(lo / scale)), F32(0), F32(255))))
    q = np.clip(np.rint(np.divide(x, scale, dtype=F32)) + F32(zp), 0, 255).astype(np.uint8)
    return q, scale, zp


def test_dynamic_quantize_linear_loops_bit_exact(isa):
    """Every codecs path (min/max and quantize in C) against the NumPy definition: every
    length 1..70 (vector tails), exact ties x / scale = k + 1/2 (half to even), negative
    and positive ranges, a denormal scale, strided input, and the finiteness check in
    every tail position."""
    c = _c()
    rng = np.random.default_rng(31)
    cases = [rng.standard_normal(n).astype(F32) * F32(rng.uniform(0.01, 100))
             for n in range(1, 71)]
    cases.append(np.arange(-127.5, 128.0, 0.5, dtype=F32))        # scale 1: every tie
    cases.append(np.abs(rng.standard_normal(1000)).astype(F32))    # lo = 0
    cases.append(-np.abs(rng.standard_normal(999)).astype(F32))    # hi = 0
    cases.append(np.array([3e-43, 0, 1e-44], F32))                 # denormal scale
    cases.append(rng.standard_normal((40, 50)).astype(F32)[:, ::3])  # strided
    for pos in (5, 20, 40, 60, 150):   # the extremes in each chain of the unrolled loop
        x = rng.uniform(-1, 1, 200).astype(F32)
        x[pos], x[199 - pos] = F32(7.5), F32(-9.25)
        cases.append(x)
    for x in cases:
        q, s, z = c.dynamic_quantize_linear(x)
        q0, s0, z0 = _dql_numpy(x)
        assert s.dtype == F32 and s.view(np.uint32) == s0.view(np.uint32)
        assert z == z0 and q.shape == x.shape and np.array_equal(q, q0)
    for n in (1, 7, 8, 9, 16, 17, 33, 64, 100, 257):
        for bad in (np.nan, np.inf, -np.inf):
            # every lane group of the 64-element unrolled loop and the tails
            for pos in {p for p in (0, 17, 35, 50, 63, 64, n // 2, n - 1) if p < n}:
                x = np.ones(n, F32)
                x[pos] = bad
                with pytest.raises(ValueError, match="NaN or infinity"):
                    c.dynamic_quantize_linear(x)


@pytest.mark.parametrize("ncols", [1, 7, 8, 15, 16, 17, 36, 100])
def test_integer_to_float_loop_bit_exact(isa, ncols):
    """The C pass f32(f32(acc) * scale) (+ bias) on every codecs path, per-tensor and
    per-column scales, with and without bias, against the NumPy steps: int32 values
    beyond 2**24 (the conversion rounds), extreme scales, batched accumulators."""
    c = _c()
    rng = np.random.default_rng(ncols)
    A = rng.integers(-128, 128, (2, 5, 9)).astype(np.int8)
    B = rng.integers(-128, 128, (9, ncols)).astype(np.int8)
    acc = np.matmul(A.astype(np.int64), B.astype(np.int64)).astype(np.int32)
    for sa, sb in [(F32(0.0123), F32(3.5)), (F32(1e-30), rng.uniform(0.5, 2, ncols).astype(F32)),
                   (rng.uniform(0.5, 2, ncols).astype(F32), F32(7e30))]:
        for bias in (None, rng.standard_normal(ncols).astype(F32)):
            got = c.matmul_integer_to_float(A, B, sa, sb, None, None, bias)
            with np.errstate(all="ignore"):
                want = np.multiply(acc.astype(F32), np.multiply(sa, sb, dtype=F32), dtype=F32)
                if bias is not None:
                    want = np.add(want, bias, dtype=F32)
            assert_bits(got, want)
    big = rng.integers(-2**31, 2**31, (3, ncols), dtype=np.int64).astype(np.int32)
    s = np.array([F32(0.7)])
    assert_bits(_core._i32_scale(big, s, np.array([F32(1)]), None),
                np.multiply(big.astype(F32), s[0], dtype=F32))


def test_read_only_inputs(isa):
    """Read-only arrays (model initializers, np.frombuffer) are inputs like any other: the
    C loops take them without a copy or a 'read-only buffer' error."""
    c = _c()
    rng = np.random.default_rng(41)

    def ro(a):
        a = np.array(a)
        a.setflags(write=False)
        return a
    x = ro(rng.standard_normal((5, 70)).astype(F32))
    q, s, z = c.dynamic_quantize_linear(x)
    q0, s0, z0 = _dql_numpy(x)
    assert np.array_equal(q, q0) and s == s0 and z == z0
    A = ro(rng.integers(0, 256, (4, 9)).astype(U8))
    B = ro(rng.integers(-128, 128, (9, 20)).astype(S8))
    sa, sb = ro(F32(0.02)), ro(rng.uniform(0.5, 2, 20).astype(F32))
    bias = ro(rng.standard_normal(20).astype(F32))
    assert_bits(c.matmul_integer_to_float(A, B, sa, sb, None, None, bias),
                co.matmul_integer_to_float(A, B, sa, sb, None, None, bias))
    Af = ro(rng.standard_normal((3, 9)).astype(F32))
    assert_bits(c.dynamic_quantize_matmul(Af, B, sb, None, bias),
                co.dynamic_quantize_matmul(Af, B, sb, None, bias))
    assert_bits(c.qgemm(A, F32(0.5), U8(3), B, sb, None),
                co.qgemm(A, F32(0.5), U8(3), B, sb, None))


def test_dynamic_quantize_linear_ignores_the_rounding_mode():
    """DynamicQuantizeLinear rounds to nearest, ties to even, by definition: a rounding
    mode set by the caller changes no bit (before, FE_DOWNWARD / FE_TOWARDZERO changed
    the scale, the zero point and 999 of 1000 codes of this input)."""
    modes = directed_modes()
    c = _c()
    x = (np.random.default_rng(8).standard_normal((20, 50)) * 3).astype(F32)
    want = c.dynamic_quantize_linear(x)
    for w, e in zip(want, co.dynamic_quantize_linear(x)):
        assert_bits(w, e)
    for mode in modes:
        with rounding(mode):
            got = c.dynamic_quantize_linear(x)
        for g, w in zip(got, want):
            assert_bits(g, w)
