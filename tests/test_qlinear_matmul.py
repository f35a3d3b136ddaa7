"""QLinearMatMul (opsets 10 and 21) against the spec oracle, on every int8 kernel path.

Spec (DESIGN.md §2):
* a, b int8/uint8: acc exact int32 (wrapping); m = f32(f32(a_scale) * f32(b_scale)) /
  f32(y_scale) (f16/bf16 widened first; per-row/col -> [M, N] grid; overflow clamped to
  +-FLT_MAX); y = saturate(round_half_even(double(acc) * double(m)) + y_zp), bit-exact.
  A float8 y: x = double(acc) * double(m) + float(y_zp), then the saturating float8 cast.
* a or b float8: float32 dequantize + float32 accumulation (order unspecified), so the
  output is checked to be the correctly rounded encoding of some value within a small
  error of the float64 oracle.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fenv_modes import directed_modes, rounding
import oracles as o
from conftest import examples
from strategies import EDGE_DIMS, batch_shapes, layouts, mnk, rand_extreme, rand_int8, relayout


def _gk():
    import gemmkit
    return gemmkit


U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), o.BF16
E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ = o.FLOAT8_TYPES
INT_TYPES = [U8, S8]
ALL_Q_TYPES = INT_TYPES + list(o.FLOAT8_TYPES)
SCALE_TYPES = [F32, F16, BF16]

A_MODES = ["tensor0d", "tensor1", "row", "row2d", "rowbatch"]
B_MODES = ["tensor0d", "tensor1", "col", "col2d", "colbatch"]
Y_MODES = ["tensor0d", "tensor1", "row", "row2d", "col2d", "rowbatch", "colbatch"]


def _param_shape(mode, m, n, batch):
    return {
        "tensor0d": (),
        "tensor1": (1,),
        "row": (m,),
        "row2d": (m, 1),
        "rowbatch": tuple(batch) + (m, 1),
        "col": (n,),
        "col2d": (1, n),
        "colbatch": tuple(batch) + (1, n),
    }[mode]


def rand_q(rng, shape, dt, extreme=False):
    """Random quantized values of dtype dt (float8: finite codes only)."""
    dt = np.dtype(dt)
    if o.is_float8(dt):
        codes = np.arange(256, dtype=np.uint8)
        vals = codes.view(dt).astype(np.float64)
        finite = codes[np.isfinite(vals)]
        if extreme:
            big = finite[np.abs(finite.view(dt).astype(np.float64)) >= o.f8_max(dt) / 4]
            finite = big
        return rng.choice(finite, size=shape).astype(np.uint8).view(dt)
    return (rand_extreme if extreme else rand_int8)(rng, shape, dt)


def rand_zp(rng, shape, dt):
    dt = np.dtype(dt)
    if o.is_float8(dt):
        # moderate float8 zero points (any finite value is allowed; keep it readable)
        vals = rng.uniform(-4, 4, size=shape)
        return o.f8_from_float(vals, dt).reshape(shape)
    return rand_int8(rng, shape, dt)


def rand_scale(rng, shape, sdt, negative=False):
    v = np.exp(rng.uniform(np.log(1e-3), np.log(1e1), size=shape))
    if negative:
        v = v * rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(v).astype(sdt)


def _qmax(dt):
    dt = np.dtype(dt)
    return o.f8_max(dt) if o.is_float8(dt) else float(np.iinfo(dt).max - np.iinfo(dt).min) / 2


def pick_y_scale(rng, a, a_scale, a_zp, b, b_scale, b_zp, shape, sdt, y_dt, target):
    """A y_scale of ``shape`` that maps the typical |real acc| to ``target`` * range."""
    ones = np.ones((), np.float32)
    zero_y = np.zeros((), y_dt)
    exp, tol = o.qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, ones, zero_y)
    if exp is None:
        real = np.abs(tol[0] + tol[1]) / 2
    else:
        acc, _, _ = o.int_acc(a, b, a_zp, b_zp)
        m, n = acc.shape[-2], acc.shape[-1]
        mult = o.multiplier(a_scale, b_scale, ones, m, n).astype(np.float64)
        real = np.abs(acc * mult)
    real = real[np.isfinite(real)]
    typ = float(np.percentile(real, 75)) if real.size else 0.0
    base = typ / (target * _qmax(y_dt)) if typ > 0 else 1.0
    ys = base * np.exp(rng.uniform(-0.5, 0.5, size=shape))
    fmax = float(np.finfo(np.float16).max if sdt == F16 else np.finfo(np.float32).max)
    ys = np.clip(np.asarray(ys), 0, fmax / 2).astype(np.float32).astype(sdt)
    # keep it valid: finite and non-zero in the scale dtype
    ys = np.where((ys.astype(np.float32) == 0) | ~np.isfinite(ys.astype(np.float32)),
                  np.asarray(1.0, sdt), ys).astype(sdt)
    return np.asarray(ys).reshape(shape)


def run_and_check(args, layouts_=None):
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = args
    la, lb = layouts_ or ("C", "C")
    got = _gk().qlinear_matmul(relayout(a, la), a_scale, a_zp, relayout(b, lb), b_scale,
                               b_zp, y_scale, y_zp)
    o.check_qlinear(got, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
    return got


@st.composite
def qcase(draw, t1s, t2s, t3s, float8_required=False, max_macs=120_000):
    t1 = draw(st.sampled_from(t1s))
    t2 = draw(st.sampled_from(t2s))
    if float8_required and not (o.is_float8(t1) or o.is_float8(t2)):
        t1 = draw(st.sampled_from(o.FLOAT8_TYPES))
    t3 = draw(st.sampled_from(t3s))
    m, n, k = draw(mnk(max_macs=max_macs))
    if draw(st.integers(0, 3)) == 0:
        a_batch, b_batch = draw(batch_shapes())
        m, n, k = min(m, 17), min(n, 17), min(k, 65)
    else:
        a_batch, b_batch = (), ()
    out_batch = tuple(np.broadcast_shapes(a_batch, b_batch))
    am = draw(st.sampled_from(A_MODES))
    bm = draw(st.sampled_from(B_MODES))
    ym = draw(st.sampled_from(Y_MODES))
    sdt = draw(st.sampled_from(SCALE_TYPES))
    negative = draw(st.integers(0, 5)) == 0
    target = draw(st.sampled_from([0.5, 0.5, 0.05, 8.0]))  # normal / near zero / saturating
    extreme = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    la, lb = draw(layouts()), draw(layouts())

    rng = np.random.default_rng(seed)
    a = rand_q(rng, a_batch + (m, k), t1, extreme)
    b = rand_q(rng, b_batch + (k, n), t2, extreme)
    sa_shape = _param_shape(am, m, n, out_batch)
    sb_shape = _param_shape(bm, m, n, out_batch)
    sy_shape = _param_shape(ym, m, n, out_batch)
    a_zp = rand_zp(rng, sa_shape, t1)
    b_zp = rand_zp(rng, sb_shape, t2)
    a_scale = rand_scale(rng, sa_shape, sdt, negative)
    b_scale = rand_scale(rng, sb_shape, sdt)
    y_scale = pick_y_scale(rng, a, a_scale, a_zp, b, b_scale, b_zp, sy_shape, sdt, t3, target)
    y_zp = rand_zp(rng, sy_shape, t3)
    # Scales and zero points in arbitrary memory layouts too (strided, negative, offset).
    lp = draw(st.sampled_from(["C", "C", "neg", "strided", "offset", "readonly"]))
    a_scale, a_zp, b_scale, b_zp, y_scale, y_zp = (
        relayout(p, lp) if np.ndim(p) else p
        for p in (a_scale, a_zp, b_scale, b_zp, y_scale, y_zp))
    note = dict(t1=t1, t2=t2, t3=t3, m=m, n=n, k=k, a_batch=a_batch, b_batch=b_batch,
                modes=(am, bm, ym), sdt=sdt, target=target, layouts=(la, lb, lp))
    return (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp), (la, lb), note


# ----------------------------------------------------------------------------------------
# properties
# ----------------------------------------------------------------------------------------

@settings(max_examples=examples(200))
@given(case=qcase(INT_TYPES, INT_TYPES, INT_TYPES))
def test_int8_inputs_int8_output_bit_exact(isa, case):
    args, lay, note = case
    run_and_check(args, lay)


@settings(max_examples=examples(80))
@given(case=qcase(INT_TYPES, INT_TYPES, list(o.FLOAT8_TYPES)))
def test_int8_inputs_float8_output_bit_exact(isa, case):
    args, lay, note = case
    run_and_check(args, lay)


@settings(max_examples=examples(150))
@given(case=qcase(ALL_Q_TYPES, ALL_Q_TYPES, ALL_Q_TYPES, float8_required=True,
                  max_macs=60_000))
def test_float8_inputs_within_float32_accumulation_error(isa, case):
    args, lay, note = case
    run_and_check(args, lay)


@pytest.mark.parametrize("t1", ALL_Q_TYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("t2", ALL_Q_TYPES, ids=lambda d: d.name)
def test_every_type_combination(isa, t1, t2):
    """All 6 x 6 x 6 T1 x T2 x T3 combinations, each at least once."""
    rng = np.random.default_rng(ALL_Q_TYPES.index(t1) * 10 + ALL_Q_TYPES.index(t2))
    m, n, k = 5, 7, 19
    for t3 in ALL_Q_TYPES:
        a = rand_q(rng, (m, k), t1)
        b = rand_q(rng, (k, n), t2)
        a_zp, b_zp = rand_zp(rng, (m,), t1), rand_zp(rng, (1, n), t2)
        a_scale = rand_scale(rng, (m,), F32)
        b_scale = rand_scale(rng, (1, n), F32)
        y_scale = pick_y_scale(rng, a, a_scale, a_zp, b, b_scale, b_zp, (), F32, t3, 0.5)
        y_zp = rand_zp(rng, (), t3)
        run_and_check((a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp))


# ----------------------------------------------------------------------------------------
# requantization details (integer path, bit-exact)
# ----------------------------------------------------------------------------------------

def _column_case(acc_values, ta=S8):
    """a, b such that acc[i, 0] == acc_values[i] exactly (K = 3, spare columns zero)."""
    acc_values = np.asarray(acc_values, np.int64)
    a = np.zeros((len(acc_values), 3), ta)
    a[:, 1] = acc_values
    b = np.array([[0], [1], [0]], np.int8)
    return a, b


def test_round_half_to_even_ties(isa):
    # m = f32(1 * 0.5) / 1 = 0.5 exactly -> x = acc / 2 has exact .5 ties.
    accs = [-7, -5, -3, -1, 1, 3, 5, 7, 2, -2]
    a, b = _column_case(accs)
    y = _gk().qlinear_matmul(a, np.float32(1), np.int8(0), b, np.float32(0.5), np.int8(0),
                             np.float32(1), np.int8(10))
    # half-to-even: -3.5->-4, -2.5->-2, -1.5->-2, -0.5->0, 0.5->0, 1.5->2, 2.5->2, 3.5->4
    want = np.array([[6], [8], [8], [10], [10], [12], [12], [14], [11], [9]], np.int8)
    np.testing.assert_array_equal(y, want)
    o.check_qlinear(y, a, np.float32(1), np.int8(0), b, np.float32(0.5), np.int8(0),
                    np.float32(1), np.int8(10))


def test_round_half_to_even_ties_quarter_multiplier(isa):
    # m = 0.25 * 1 / 1: acc 2 -> 0.5 -> 0, 6 -> 1.5 -> 2, 10 -> 2.5 -> 2, 14 -> 3.5 -> 4
    a, b = _column_case([2, 6, 10, 14, -2, -6, -10])
    y = _gk().qlinear_matmul(a, np.float32(0.25), np.int8(0), b, np.float32(1.0), np.int8(0),
                             np.float32(1.0), np.uint8(100))
    np.testing.assert_array_equal(y[:, 0], np.array([100, 102, 102, 104, 100, 98, 98], np.uint8))


def test_output_saturates_at_both_ends(isa):
    k = 257
    a = np.zeros((4, k), np.int8)
    a[0] = 127
    a[1] = -128
    a[2] = 1
    b = np.full((k, 3), 127, np.int8)
    for y_zp, lo, hi in [(np.int8(0), -128, 127), (np.uint8(128), 0, 255),
                         (np.int8(-128), -128, 127), (np.uint8(0), 0, 255)]:
        y = _gk().qlinear_matmul(a, np.float32(1), np.int8(0), b, np.float32(1), np.int8(0),
                                 np.float32(1), y_zp)
        assert y.dtype == y_zp.dtype
        np.testing.assert_array_equal(y[0], np.full(3, hi, y_zp.dtype))
        np.testing.assert_array_equal(y[1], np.full(3, lo, y_zp.dtype))
        np.testing.assert_array_equal(
            y[2], np.full(3, np.clip(127 * k + int(y_zp), lo, hi), y_zp.dtype))
        np.testing.assert_array_equal(y[3], np.full(3, y_zp, y_zp.dtype))


def test_saturation_with_zero_point_near_limit(isa):
    # acc * m = +-3 with y_zp at 126 / -127: one side clips, the other does not.
    a, b = _column_case([3, -3, 1, -1])
    for y_zp, want in [(np.int8(126), [127, 123, 127, 125]),
                       (np.int8(-127), [-124, -128, -126, -128]),
                       (np.uint8(254), [255, 251, 255, 253]),
                       (np.uint8(1), [4, 0, 2, 0])]:
        y = _gk().qlinear_matmul(a, np.float32(1), np.int8(0), b, np.float32(1), np.int8(0),
                                 np.float32(1), y_zp)
        np.testing.assert_array_equal(y[:, 0], np.array(want, y_zp.dtype))


def test_multiplier_overflow_is_clamped_to_flt_max(isa):
    a, b = _column_case([0, 1, -1, 100])
    # f32(1e30 * 1e30) = inf -> clamped to FLT_MAX: acc 0 -> y_zp, +-1 -> saturated.
    for y_scale in (np.float32(1), np.float32(1e-30)):
        y = _gk().qlinear_matmul(a, np.float32(1e30), np.int8(0), b, np.float32(1e30),
                                 np.int8(0), y_scale, np.int8(5))
        np.testing.assert_array_equal(y[:, 0], np.array([5, 127, -128, 127], np.int8))
    # overflow in the division only: 1e20 / 1e-20
    y = _gk().qlinear_matmul(a, np.float32(1e10), np.int8(0), b, np.float32(1e10),
                             np.int8(0), np.float32(1e-20), np.uint8(7))
    np.testing.assert_array_equal(y[:, 0], np.array([7, 255, 0, 255], np.uint8))
    # negative overflow -> -FLT_MAX, acc 0 still gives y_zp (no 0 * inf = NaN)
    y = _gk().qlinear_matmul(a, np.float32(-1e30), np.int8(0), b, np.float32(1e30),
                             np.int8(0), np.float32(1), np.int8(-3))
    np.testing.assert_array_equal(y[:, 0], np.array([-3, -128, 127, -128], np.int8))


def test_multiplier_overflow_to_float8_output(isa):
    a, b = _column_case([0, 1, -1])
    for dt in o.FLOAT8_TYPES:
        y = _gk().qlinear_matmul(a, np.float32(1e30), np.int8(0), b, np.float32(1e30),
                                 np.int8(0), np.float32(1), np.zeros((), dt))
        got = y[:, 0].astype(np.float64)
        np.testing.assert_array_equal(got, [0.0, o.f8_max(dt), -o.f8_max(dt)])


def test_negative_scales_follow_the_formula(isa):
    rng = np.random.default_rng(21)
    a = rand_int8(rng, (6, 40), U8)
    b = rand_int8(rng, (40, 5), S8)
    args = (a, np.float32(-0.02), np.uint8(128), b, np.float32(0.03), np.int8(0),
            np.float32(-0.5), np.int8(3))
    y = run_and_check(args)
    # sign flips twice: same as all-positive scales
    y2 = _gk().qlinear_matmul(a, np.float32(0.02), np.uint8(128), b, np.float32(0.03),
                              np.int8(0), np.float32(0.5), np.int8(3))
    np.testing.assert_array_equal(y, y2)


def test_subnormal_scales_are_not_flushed(isa):
    # f32(1e-20 * 1e-20) is subnormal (~1e-40); y_scale the same subnormal -> m == 1.
    # A flush-to-zero / denormals-are-zero build would give 0 or NaN instead.
    sa = np.float32(1e-20)
    prod = np.float32(sa * sa)
    assert 0 < prod < np.finfo(np.float32).tiny
    a, b = _column_case([3, -4, 50])
    y = _gk().qlinear_matmul(a, sa, np.int8(0), b, sa, np.int8(0), prod, np.int8(0))
    np.testing.assert_array_equal(y[:, 0], np.array([3, -4, 50], np.int8))
    o.check_qlinear(y, a, sa, np.int8(0), b, sa, np.int8(0), prod, np.int8(0))


def test_multiplier_is_computed_in_float32_not_float64(isa):
    # f32((1 + 2**-23) * (1 - 2**-23)) == 1.0 (the exact product is 1 - 2**-46), so the
    # spec's float32 m is exactly 0.5 and acc = 3 gives the tie 1.5 -> 2; float64
    # scale math would give 1.5 - 2**-46 -> 1.
    sa = np.float32(1 + 2.0**-23)
    sb = np.float32(1 - 2.0**-23)
    assert np.float32(sa * sb) == 1.0
    a, b = _column_case([3, -3, 7, 1])
    args = (a, sa, np.int8(0), b, sb, np.int8(0), np.float32(2.0), np.int8(0))
    y = _gk().qlinear_matmul(*args)
    np.testing.assert_array_equal(y[:, 0], np.array([2, -2, 4, 0], np.int8))
    o.check_qlinear(y, *args)


@pytest.mark.parametrize("sdt", [F16, BF16], ids=["float16", "bfloat16"])
def test_half_precision_scales_are_widened_exactly(isa, sdt):
    rng = np.random.default_rng(22)
    a = rand_int8(rng, (9, 31), S8)
    b = rand_int8(rng, (31, 10), U8)
    a_scale = np.asarray(rng.uniform(0.001, 0.1, size=(9,))).astype(sdt)
    b_scale = np.asarray(rng.uniform(0.001, 0.1, size=(10,))).astype(sdt)
    a_zp = rand_int8(rng, (9,), S8)
    b_zp = rand_int8(rng, (10,), U8)
    y_scale = np.asarray(0.37).astype(sdt)
    args = (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, np.uint8(128))
    y = run_and_check(args)
    # Same as float32 scales holding the widened values.
    y32 = _gk().qlinear_matmul(a, a_scale.astype(np.float32), a_zp, b,
                               b_scale.astype(np.float32), b_zp,
                               y_scale.astype(np.float32), np.uint8(128))
    np.testing.assert_array_equal(y, y32)


def test_python_float_scales_and_int_zero_points(isa):
    rng = np.random.default_rng(23)
    a = rand_int8(rng, (7, 20), U8)
    b = rand_int8(rng, (20, 6), S8)
    y = _gk().qlinear_matmul(a, 0.1, 120, b, 0.05, -3, 0.3, np.uint8(10))
    # Python float -> float32; Python int zero points take the tensor's dtype.
    want, _ = o.qlinear_matmul(a, np.float32(0.1), np.uint8(120), b, np.float32(0.05),
                               np.int8(-3), np.float32(0.3), np.uint8(10))
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y, want)


# ----------------------------------------------------------------------------------------
# layouts of scales / zero points
# ----------------------------------------------------------------------------------------

def test_per_row_scale_and_zero_point_not_numpy_broadcast(isa):
    # M == K == N, so a 1-D [M] parameter would broadcast along the wrong axis silently.
    a = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]], np.uint8)
    b = np.array([[1, 0, 2], [0, 1, 0], [3, 0, 1]], np.int8)
    a_zp = np.array([10, 0, 5], np.uint8)
    a_scale = np.array([1.0, 0.5, 0.25], np.float32)
    args = (a, a_scale, a_zp, b, np.float32(1), np.int8(0), np.float32(1), np.int8(0))
    y = _gk().qlinear_matmul(*args)
    acc = (a.astype(np.int64) - a_zp[:, None]) @ b.astype(np.int64)
    want = np.clip(np.rint(acc * a_scale[:, None].astype(np.float64)), -128, 127)
    np.testing.assert_array_equal(y, want.astype(np.int8))
    wrong = np.clip(np.rint(((a.astype(np.int64) - a_zp) @ b.astype(np.int64)) * a_scale),
                    -128, 127)
    assert not np.array_equal(wrong, want)


@pytest.mark.parametrize("ymode", ["row", "row2d", "col2d", "rowbatch", "colbatch"])
def test_per_row_and_per_column_output_quantization(isa, ymode):
    rng = np.random.default_rng(24)
    m, n, k = 6, 5, 33
    a = rand_int8(rng, (2, m, k), S8)
    b = rand_int8(rng, (2, k, n), S8)
    shape = _param_shape(ymode, m, n, (2,))
    y_scale = rng.uniform(200, 2000, size=shape).astype(np.float32)
    y_zp = rand_int8(rng, shape, U8)
    args = (a, np.float32(1), np.int8(0), b, np.float32(1), np.int8(0), y_scale, y_zp)
    run_and_check(args)


def test_k_zero_gives_output_zero_point(isa):
    a = np.zeros((3, 0), np.uint8)
    b = np.zeros((0, 4), np.int8)
    y_zp = np.array([[1], [2], [3]], np.int8)
    y = _gk().qlinear_matmul(a, np.float32(0.5), np.uint8(3), b, np.float32(0.5), np.int8(1),
                             np.ones((3, 1), np.float32), y_zp)
    np.testing.assert_array_equal(y, np.broadcast_to(y_zp, (3, 4)))
    for dt in o.FLOAT8_TYPES:
        zp = o.f8_from_float(np.array([1.5, -2.0, 0.25, 3.0]).reshape(1, 4), dt)
        y = _gk().qlinear_matmul(a, np.float32(0.5), np.uint8(3), b, np.float32(0.5),
                                 np.int8(1), np.ones((1, 4), np.float32), zp)
        assert y.dtype == dt and y.shape == (3, 4)
        np.testing.assert_array_equal(y.astype(np.float64),
                                      np.broadcast_to(zp.astype(np.float64), (3, 4)))


@pytest.mark.parametrize("a_shape,b_shape,out_shape", [
    ((0, 4), (4, 3), (0, 3)),
    ((3, 4), (4, 0), (3, 0)),
    ((0, 2, 4), (4, 3), (0, 2, 3)),
    ((4,), (4, 3), (3,)),
    ((3, 4), (4,), (3,)),
    ((4,), (4,), ()),
])
def test_empty_and_1d_shapes(isa, a_shape, b_shape, out_shape):
    rng = np.random.default_rng(25)
    a = rand_int8(rng, a_shape, U8)
    b = rand_int8(rng, b_shape, S8)
    args = (a, np.float32(0.1), np.uint8(100), b, np.float32(0.1), np.int8(-1),
            np.float32(0.7), np.int8(-5))
    y = run_and_check(args)
    assert y.shape == out_shape


@pytest.mark.parametrize("a_shape,b_shape,y_shape", [
    ((6,), (6, 5), (5,)),          # output (5,): per column
    ((6,), (3, 6, 5), (3, 1)),     # output (3, 5): per batch
    ((6,), (3, 6, 5), (3, 5)),
    ((3, 4, 6), (6,), (3, 1)),     # output (3, 4): per batch, not per row
    ((3, 4, 6), (6,), (3, 4)),
    ((3, 4, 6), (6,), (4,)),       # per row
    ((2, 3, 6), (6,), (2, 1)),     # output (2, 3): per batch
], ids=str)
@pytest.mark.parametrize("ytype", [U8, E4M3FN], ids=str)
def test_y_params_broadcast_to_a_1d_products_output(isa, a_shape, b_shape, y_shape, ytype):
    """Where a (b) is 1-D, numpy.matmul returns no M (N) dim, and y_scale / y_zero_point
    broadcast against that output as returned (DESIGN: "broadcastable to the output"):
    y_scale (3, 1) for a (3, 4, 6) @ b (6,), output (3, 4), is per batch.  gemmkit read
    it as per-row [M, 1] of the promoted product before (silently, with M == 3)."""
    rng = np.random.default_rng(26)
    a = rand_int8(rng, a_shape, U8)
    b = rand_int8(rng, b_shape, S8)
    ys = rng.choice(np.float32([0.25, 0.5, 1.0, 2.0, 4.0]), y_shape).astype(np.float32)
    yzp = (rng.integers(0, 4, y_shape).astype(ytype) if ytype == U8
           else np.zeros(y_shape, ytype))
    args = (a, np.float32(0.1), np.uint8(3), b, np.float32(0.1), np.int8(-1), ys, yzp)
    y = run_and_check(args)
    assert y.shape == np.matmul(a.astype(np.int32), b.astype(np.int32)).shape
    # the oracle's own reading, spelled out: NumPy broadcasting on the returned output
    acc = np.matmul(a.astype(np.int64) - 3, b.astype(np.int64) + 1).astype(np.float64)
    x = acc * np.float64(np.float32(np.float32(0.1) * np.float32(0.1)) / ys)
    if ytype == U8:
        want = np.clip(np.rint(x) + yzp, 0, 255).astype(U8)
        np.testing.assert_array_equal(y, want)


def test_y_params_of_a_1d_product_errors():
    gk = _gk()
    a, b = np.ones(6, U8), np.ones((6, 5), S8)
    args = (np.float32(0.1), np.uint8(3), b, np.float32(0.1), np.int8(-1))
    with pytest.raises(ValueError, match=r"y_scale has shape \(4,\); expected per-tensor "
                       r"\(shape \(\) or \(1,\)\) or broadcastable to the output \(5,\)"):
        gk.qlinear_matmul(a, *args, np.ones(4, np.float32), np.zeros(4, U8))
    # dims the output does not have
    for shape in ((2, 5), (1, 5)):
        with pytest.raises(ValueError, match="y_scale has shape"):
            gk.qlinear_matmul(a, *args, np.ones(shape, np.float32), np.zeros(shape, U8))


@pytest.mark.parametrize("kind", ["u8 out", "float8 out", "float8 in"])
def test_results_do_not_follow_the_callers_rounding_mode(isa, kind):
    """QLinearMatMul is defined exactly (one float32 multiplier, x rounded half to even;
    float8 inputs: float32 sums): a rounding mode set by the caller must change no bit.
    Before, under FE_UPWARD 189 of 3072 outputs of this case differed from the
    definition, and the scalar and SIMD paths from each other."""
    modes = directed_modes()
    rng = np.random.default_rng(27)
    if kind == "float8 in":
        a = o.f8_from_float(rng.standard_normal((64, 100)) * 3, E4M3FN)
        azp = np.zeros((), E4M3FN)
    else:
        a, azp = rand_int8(rng, (64, 100), U8), np.uint8(3)
    b = rand_int8(rng, (100, 48), S8)
    yzp = np.zeros((), E5M2) if kind == "float8 out" else np.uint8(128)
    args = (a, np.float32(0.05), azp, b, np.float32(0.05), np.int8(1), np.float32(0.37), yzp)
    want = _gk().qlinear_matmul(*args)
    o.check_qlinear(want, *args)
    for mode in modes:
        with rounding(mode):
            got = _gk().qlinear_matmul(*args)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


# ----------------------------------------------------------------------------------------
# float8 specifics
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ydt", o.FLOAT8_TYPES, ids=lambda d: d.name)
def test_float8_output_ties_to_even(isa, ydt):
    # m = 0.25 * 0.25 / 1 = 1/16 exactly, so x = acc / 16.  e4m3 (3 mantissa bits) near 1:
    # 1, 1.125, 1.25: 1.0625 and 1.1875 are exact ties -> the even mantissa (1.0, 1.25).
    a, b = _column_case([17, 19, -17, -19, 16, 18])
    zp = np.zeros((), ydt)
    y = _gk().qlinear_matmul(a, np.float32(0.25), np.int8(0), b, np.float32(0.25), np.int8(0),
                             np.float32(1), zp)
    o.check_qlinear(y, a, np.float32(0.25), np.int8(0), b, np.float32(0.25), np.int8(0),
                    np.float32(1), zp)
    if ydt in (E4M3FN, E4M3FNUZ):
        np.testing.assert_array_equal(y[:, 0].astype(np.float64),
                                      [1.0, 1.25, -1.0, -1.25, 1.0, 1.125])
    else:  # e5m2 (2 mantissa bits): 1, 1.25: 1.0625 -> 1.0, 1.1875 -> 1.25, tie 1.125 -> 1.0
        np.testing.assert_array_equal(y[:, 0].astype(np.float64),
                                      [1.0, 1.25, -1.0, -1.25, 1.0, 1.0])


@pytest.mark.parametrize("ydt", o.FLOAT8_TYPES, ids=lambda d: d.name)
def test_float8_output_saturates_instead_of_overflowing(isa, ydt):
    a, b = _column_case([100, -100, 1])
    y = _gk().qlinear_matmul(a, np.float32(1000.0), np.int8(0), b, np.float32(1000.0),
                             np.int8(0), np.float32(1.0), np.zeros((), ydt))
    mx = o.f8_max(ydt)
    np.testing.assert_array_equal(y[:, 0].astype(np.float64), [mx, -mx, mx])
    assert not np.any(np.isnan(y.astype(np.float32)))


@pytest.mark.parametrize("adt", o.FLOAT8_TYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("ydt", [S8] + list(o.FLOAT8_TYPES), ids=lambda d: d.name)
def test_float8_input_extremes_saturate(isa, adt, ydt):
    mx = o.f8_max(adt)
    a = o.f8_from_float(np.array([[mx, mx, mx], [-mx, -mx, -mx], [1.0, 0.0, -1.0]]), adt)
    b = o.f8_from_float(np.full((3, 2), mx), adt)
    zp = np.zeros((), adt)
    y_zp = np.zeros((), ydt)
    y = _gk().qlinear_matmul(a, np.float32(1), zp, b, np.float32(1), zp, np.float32(1e-3), y_zp)
    hi = o.f8_max(ydt) if o.is_float8(ydt) else 127
    lo = -o.f8_max(ydt) if o.is_float8(ydt) else -128
    np.testing.assert_array_equal(y[0].astype(np.float64), [hi, hi])
    np.testing.assert_array_equal(y[1].astype(np.float64), [lo, lo])
    np.testing.assert_array_equal(y[2].astype(np.float64), [0, 0])


@pytest.mark.parametrize("ydt", o.FLOAT8_TYPES, ids=lambda d: d.name)
def test_float8_nan_input_gives_nan_in_float8_output(isa, ydt):
    a = np.array([[np.nan, 1.0], [1.0, 2.0]], np.float32).astype(E4M3FN)
    b = np.array([[1.0, 0.5], [2.0, 1.0]], np.float32).astype(E4M3FN)
    zp = np.zeros((), E4M3FN)
    y = _gk().qlinear_matmul(a, np.float32(1), zp, b, np.float32(1), zp, np.float32(1),
                             np.zeros((), ydt))
    yf = y.astype(np.float32)
    assert np.all(np.isnan(yf[0]))
    np.testing.assert_array_equal(yf[1], [5.0, 2.5])


def test_float8_e5m2_infinite_input_saturates(isa):
    a = np.array([[np.inf, 0.0], [-np.inf, 0.0]], np.float32).astype(E5M2)
    b = np.array([[1.0], [1.0]], np.float32).astype(E5M2)
    zp = np.zeros((), E5M2)
    y = _gk().qlinear_matmul(a, np.float32(1), zp, b, np.float32(1), zp, np.float32(1),
                             np.zeros((), E4M3FN))
    np.testing.assert_array_equal(y[:, 0].astype(np.float64), [448.0, -448.0])
    y = _gk().qlinear_matmul(a, np.float32(1), zp, b, np.float32(1), zp, np.float32(1),
                             np.int8(0))
    np.testing.assert_array_equal(y[:, 0], np.array([127, -128], np.int8))


@pytest.mark.parametrize("adt", o.FLOAT8_TYPES, ids=lambda d: d.name)
def test_float8_exact_small_case(isa, adt):
    # Products of small float8 values summed in float32 are exact here, so the
    # result is pinned exactly: ((q - zp) * scale) @ ... / y_scale + y_zp.
    a = o.f8_from_float(np.array([[1.0, 2.0, -1.5], [0.5, -0.25, 3.0]]), adt)
    b = o.f8_from_float(np.array([[1.0, -2.0], [0.5, 1.0], [2.0, 0.25]]), adt)
    a_zp = o.f8_from_float(np.array(0.5), adt)
    b_zp = o.f8_from_float(np.array(-1.0), adt)
    # real_a = (a - 0.5) * 2, real_b = (b + 1) * 0.5
    ra = (np.array([[1.0, 2.0, -1.5], [0.5, -0.25, 3.0]]) - 0.5) * 2
    rb = (np.array([[1.0, -2.0], [0.5, 1.0], [2.0, 0.25]]) + 1.0) * 0.5
    x = ra @ rb / 0.25
    y = _gk().qlinear_matmul(a, np.float32(2), a_zp, b, np.float32(0.5), b_zp,
                             np.float32(0.25), np.int8(3))
    np.testing.assert_array_equal(y, np.clip(np.rint(x) + 3, -128, 127).astype(np.int8))


def test_float8_mixed_with_int8_and_per_row_layouts(isa):
    rng = np.random.default_rng(26)
    m, n, k = 5, 4, 21
    a = rand_int8(rng, (m, k), U8)
    b = rand_q(rng, (k, n), E4M3FN)
    a_zp = rand_int8(rng, (m,), U8)
    b_zp = rand_zp(rng, (n,), E4M3FN)
    a_scale = rand_scale(rng, (m,), F32)
    b_scale = rand_scale(rng, (n,), F32)
    y_scale = pick_y_scale(rng, a, a_scale, a_zp, b, b_scale, b_zp, (m,), F32, E5M2, 0.3)
    y_zp = rand_zp(rng, (m,), E5M2)
    run_and_check((a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp))


# ----------------------------------------------------------------------------------------
# memory layouts
# ----------------------------------------------------------------------------------------

def test_zero_stride_and_negative_stride_inputs(isa):
    rng = np.random.default_rng(27)
    row = rand_int8(rng, (45,), S8)
    a = np.broadcast_to(row, (3, 17, 45))
    base = rand_int8(rng, (90, 40), U8)
    b = base[::-2, ::-1][:, 3:36]  # (45, 33)
    a_scale = np.broadcast_to(np.float32(0.02), (17,))
    a_zp = np.broadcast_to(np.int8(-5), (17,))
    args = (a, a_scale, a_zp, b, np.float32(0.01), np.uint8(130), np.float32(0.05),
            np.int8(1))
    y = _gk().qlinear_matmul(*args)
    o.check_qlinear(y, np.ascontiguousarray(a), np.ascontiguousarray(a_scale),
                    np.ascontiguousarray(a_zp), np.ascontiguousarray(b), np.float32(0.01),
                    np.uint8(130), np.float32(0.05), np.int8(1))


def test_misaligned_and_byteswapped_scales(isa):
    rng = np.random.default_rng(29)
    m, n, k = 7, 6, 30
    a = rand_int8(rng, (m, k), U8)
    b = rand_int8(rng, (k, n), S8)
    a_zp = rand_int8(rng, (m,), U8)
    vals = rng.uniform(0.001, 0.01, size=m).astype(np.float32)
    # float32 data at an odd byte address (NumPy marks it unaligned)
    buf = np.zeros(4 * m + 1, np.uint8)
    a_scale = np.frombuffer(buf.data, dtype=np.float32, count=m, offset=1)
    buf[1:] = np.frombuffer(vals.tobytes(), np.uint8)
    assert not a_scale.flags.aligned
    want, _ = o.qlinear_matmul(a, vals, a_zp, b, np.float32(0.02), np.int8(0),
                               np.float32(0.05), np.uint8(128))
    y = _gk().qlinear_matmul(a, a_scale, a_zp, b, np.float32(0.02), np.int8(0),
                             np.float32(0.05), np.uint8(128))
    np.testing.assert_array_equal(y, want)
    # Non-native byte order: either rejected (TypeError) or read correctly, never misread.
    swapped = vals.astype(vals.dtype.newbyteorder())
    try:
        y = _gk().qlinear_matmul(a, swapped, a_zp, b, np.float32(0.02), np.int8(0),
                                 np.float32(0.05), np.uint8(128))
    except TypeError as exc:
        assert "a_scale" in str(exc)
    else:
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dt", [np.float32, np.float16, "bfloat16"])
def test_size1_scales_byteswapped_or_unaligned_are_read_by_value(isa, dt):
    # Per-tensor scales are read as one value in C: a byte-swapped or odd-address
    # element must be converted, never reinterpreted.
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16 if dt == "bfloat16" else dt)
    rng = np.random.default_rng(31)
    a = rand_int8(rng, (5, 40), U8)
    b = rand_int8(rng, (40, 3), S8)
    val = np.array(0.0078125, dt)                          # exact in every scale dtype
    want, _ = o.qlinear_matmul(a, val, np.uint8(3), b, np.float32(0.02), np.int8(0),
                               np.float32(0.05), np.uint8(128))
    swapped = val.astype(dt.newbyteorder())
    buf = np.zeros(dt.itemsize + 1, np.uint8)
    unaligned = np.frombuffer(buf.data, dtype=dt, count=1, offset=1).reshape(())
    buf[1:] = np.frombuffer(val.tobytes(), np.uint8)
    for s in (swapped, unaligned):
        y = _gk().qlinear_matmul(a, s, np.uint8(3), b, np.float32(0.02), np.int8(0),
                                 np.float32(0.05), np.uint8(128))
        np.testing.assert_array_equal(y, want)


def test_int32_wrap_then_requantize(isa):
    # acc wraps modulo 2**32 before requantization (exact int32 accumulator).
    k = 40000
    a = np.full((2, k), 255, np.uint8)
    b = np.full((k, 2), 127, np.int8)
    args = (a, np.float32(1), np.uint8(0), b, np.float32(1), np.int8(-128),
            np.float32(2.0**24), np.int8(0))
    exact = 255 * 255 * k
    wrapped = (exact + 2**31) % 2**32 - 2**31
    y = _gk().qlinear_matmul(*args)
    np.testing.assert_array_equal(y, np.full((2, 2), np.rint(wrapped / 2**24), np.int8))
    o.check_qlinear(y, *args)


def test_larger_matrices_exercise_blocking(isa):
    rng = np.random.default_rng(28)
    a = rand_int8(rng, (130, 515), S8)
    b = rand_int8(rng, (515, 257), U8)
    a_scale = rand_scale(rng, (130,), F32)
    a_zp = rand_int8(rng, (130,), S8)
    b_scale = rand_scale(rng, (257,), F32)
    b_zp = rand_int8(rng, (257,), U8)
    y_scale = pick_y_scale(rng, a, a_scale, a_zp, b, b_scale, b_zp, (), F32, U8, 0.5)
    run_and_check((a, a_scale, a_zp, b, b_scale, b_zp, y_scale, np.uint8(128)))


@pytest.mark.parametrize("ydt", [E4M3FN, S8], ids=lambda d: d.name)
def test_float8_inputs_around_the_gemm_blocking(ydt):
    """float8 a or b runs on the float32 Gemm family: shapes around its block sizes (K
    around kc, M past mc, N past nc, edge tiles), per-row a / per-column b parameters.
    Within the oracle's bound always; bit for bit the sequential float32 result when the
    scalar family runs it."""
    from gemmkit import _core
    fam = _core._gemm_family_info(np.float32)
    mr, nr, mc, kc, nc = (fam[x] for x in ("mr", "nr", "mc", "kc", "nc"))
    rng = np.random.default_rng(31)
    for M, N, K, adt, bdt in ((mr + 1, nr - 1 or 1, kc - 1, E4M3FN, S8),
                              (mr, nr, kc, E5M2, E4M3FNUZ),
                              (2 * mr + 1, nr + 1, kc + 1, U8, E5M2FNUZ),
                              (mc + 1, 3, 2 * kc + 1, E4M3FN, E4M3FN),
                              (2, nc + nr + 1, kc + 2, E5M2, U8)):
        a, b = rand_q(rng, (M, K), adt), rand_q(rng, (K, N), bdt)
        a_zp, b_zp = rand_zp(rng, (M,), adt), rand_zp(rng, (N,), bdt)
        a_scale, b_scale = rand_scale(rng, (M,), F32), rand_scale(rng, (N,), F32)
        y_zp = rand_zp(rng, (), ydt)
        y_scale = np.float32(np.sqrt(K) * 4)
        args = (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
        got = run_and_check(args)
        if fam["isa"] == "scalar":
            want = o.qlinear_f8_sequential(*args)
            assert np.array_equal(o.canonical_f8_codes(got) if o.is_float8(ydt) else got,
                                  o.canonical_f8_codes(want) if o.is_float8(ydt) else want), \
                (M, N, K, adt, bdt)
