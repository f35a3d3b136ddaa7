"""Property: in every scalar argument position of every entry point, a NumPy scalar or a
0-d array of any supported dtype gives exactly the result of the same value as a
1-element array (and is rejected exactly when that is)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import oracles as o
from conftest import examples

U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
F8 = [np.dtype(d) for d in o.FLOAT8_TYPES]
BF16 = np.dtype(ml_dtypes.bfloat16)
Q_DTYPES = [U8, S8] + F8
SCALE_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
FORMS = ("numpy_scalar", "array_0d")


def _gk():
    import gemmkit
    return gemmkit


def as_form(value, dtype, form):
    """`value` of `dtype` as a NumPy scalar, a 0-d array or a (1,) array."""
    arr = np.array(value, dtype=dtype)
    if form == "numpy_scalar":
        return arr[()]
    if form == "array_0d":
        return arr
    return arr.reshape(1)


def _codes(dtype):
    """Every finite value of an 8-bit dtype, as float64 (integers for uint8/int8)."""
    if dtype in (U8, S8):
        info = np.iinfo(dtype)
        return np.arange(info.min, info.max + 1, dtype=np.float64)
    vals = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    return np.unique(vals[np.isfinite(vals)])


@st.composite
def q_value(draw, dtype):
    return float(draw(st.sampled_from(list(_codes(dtype)))))


@st.composite
def scale_value(draw, dtype):
    """A scale value exactly representable in `dtype`, sometimes non-finite or zero (the
    rejected cases must be rejected in every form alike)."""
    special = draw(st.sampled_from([None] * 6 + [0.0, float("nan"), float("inf")]))
    if special is not None:
        return special
    v = draw(st.floats(min_value=2.0**-10, max_value=4.0))
    v *= draw(st.sampled_from([1, -1]))
    return float(np.array(v, dtype=dtype).astype(np.float64))


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs), None
    except (TypeError, ValueError) as exc:
        return None, type(exc)


def _same(got, want):
    g, ge = got
    w, we = want
    assert ge == we, (ge, we)
    if we is None:
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def _tensor(rng, shape, dtype):
    vals = _codes(dtype)
    if dtype not in (U8, S8):
        vals = vals[np.abs(vals) <= 16]  # keep float8 products well inside float32
    return rng.choice(vals, size=shape).astype(dtype)


@settings(max_examples=examples(60))
@given(ta=st.sampled_from([U8, S8]), tb=st.sampled_from([U8, S8]),
       pos=st.sampled_from([0, 1]), form=st.sampled_from(FORMS), data=st.data())
def test_matmul_integer_zero_point_forms(ta, tb, pos, form, data):
    gk = _gk()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = _tensor(rng, (3, 7), ta), _tensor(rng, (7, 4), tb)
    dt = (ta, tb)[pos]
    v = data.draw(q_value(dt))
    zps = [None, None]
    ref = [None, None]
    zps[pos] = as_form(v, dt, form)
    ref[pos] = as_form(v, dt, "array_1")
    _same(_call(gk.matmul_integer, a, b, *zps), _call(gk.matmul_integer, a, b, *ref))
    np.testing.assert_array_equal(gk.matmul_integer(a, b, *zps), o.matmul_integer(a, b, *ref))


@settings(max_examples=examples(150))
@given(ta=st.sampled_from(Q_DTYPES), tb=st.sampled_from(Q_DTYPES),
       ty=st.sampled_from(Q_DTYPES), side=st.sampled_from("aby"),
       sdt=st.sampled_from(SCALE_DTYPES), form=st.sampled_from(FORMS), data=st.data())
def test_qlinear_scale_and_zero_point_forms(ta, tb, ty, side, sdt, form, data):
    """One operand's scale and zero point (a pair must share a shape) in the tested form;
    the reference gives that pair as (1,) arrays.  The other pairs stay 0-d float32 /
    0-d zero points."""
    gk = _gk()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = _tensor(rng, (2, 5), ta), _tensor(rng, (5, 3), tb)
    zdt = {"a": ta, "b": tb, "y": ty}[side]
    s = data.draw(scale_value(sdt))
    z = data.draw(q_value(zdt))
    # scales small enough that integer outputs are not all saturated
    args = {"a": [np.array(0.05, np.float32), np.zeros((), ta)],
            "b": [np.array(0.04, np.float32), np.zeros((), tb)],
            "y": [np.array(0.125, np.float32), np.zeros((), ty)]}
    test_args = {k: list(v) for k, v in args.items()}
    ref_args = {k: list(v) for k, v in args.items()}
    test_args[side] = [as_form(s, sdt, form), as_form(z, zdt, form)]
    ref_args[side] = [as_form(s, sdt, "array_1"), as_form(z, zdt, "array_1")]

    def run(d):
        return _call(gk.qlinear_matmul, a, d["a"][0], d["a"][1], b, d["b"][0], d["b"][1],
                     d["y"][0], d["y"][1])

    got, want = run(test_args), run(ref_args)
    _same(got, want)
    bad = not np.isfinite(s) or (side == "y" and s == 0)
    assert (want[1] is ValueError) == bad, (s, want)


@settings(max_examples=examples(60))
@given(sdt=st.sampled_from(SCALE_DTYPES), pos=st.sampled_from(["a", "b", "y"]),
       form=st.sampled_from(FORMS), data=st.data())
def test_qlinear_scale_alone_in_a_scalar_form(sdt, pos, form, data):
    """A scale given as a scalar/0-d array next to a 0-d zero point equals the scale as
    a 0-d float32 array holding the same (exactly widened) value."""
    gk = _gk()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = _tensor(rng, (4, 6), U8), _tensor(rng, (6, 2), S8)
    s = data.draw(scale_value(sdt))
    scales = {"a": np.array(0.05, np.float32), "b": np.array(0.04, np.float32),
              "y": np.array(0.5, np.float32)}
    ref = dict(scales)
    scales[pos] = as_form(s, sdt, form)
    ref[pos] = np.array(s, np.float32)
    zps = (np.zeros((), U8), np.zeros((), S8), np.array(7, U8))

    def run(sc):
        return _call(gk.qlinear_matmul, a, sc["a"], zps[0], b, sc["b"], zps[1], sc["y"],
                     zps[2])

    _same(run(scales), run(ref))


GEMM_DTYPES = [np.dtype(d) for d in (np.float16, np.float32, np.float64, np.int32,
                                     np.int64, np.uint32, np.uint64)] + [BF16]
REAL_DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int16, np.uint16,
                                     np.int32, np.uint32, np.int64, np.uint64, np.float16,
                                     np.float32, np.float64)] + [BF16] + F8


@st.composite
def real_value(draw, dtype):
    """A value exactly representable in `dtype` (NaN/inf sometimes, for float types)."""
    if dtype == np.dtype(np.bool_):
        return draw(st.booleans())
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return draw(st.one_of(st.integers(-3, 3).filter(lambda v: info.min <= v),
                              st.integers(int(info.min), int(info.max))))
    if dtype in F8:
        return float(draw(st.sampled_from(list(_codes(dtype)))))
    if dtype == BF16:
        return float(np.array(draw(st.floats(-1e3, 1e3)), dtype))
    return float(np.array(draw(st.floats(allow_nan=True, allow_infinity=True, width=16
                                         if dtype.itemsize == 2 else 32)), dtype))


def _python(value, dtype):
    return bool(value) if dtype.kind == "b" else int(value) if dtype.kind in "iu" else \
        float(value)


def _gemm_tensor(rng, shape, dt):
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -50, 50, shape).astype(dt)
    return rng.integers(-8, 9, shape).astype(np.float32).astype(dt)


@settings(max_examples=examples(200))
@given(dt=st.sampled_from(GEMM_DTYPES), pos=st.sampled_from(["alpha", "beta"]),
       vdt=st.sampled_from(REAL_DTYPES), form=st.sampled_from(FORMS), data=st.data())
def test_gemm_alpha_beta_forms(dt, pos, vdt, form, data):
    """alpha/beta as a NumPy scalar or 0-d array of any real dtype equals the Python number
    of the same value (a (1,) array is not a real number: TypeError in every case)."""
    gk = _gk()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b, c = _gemm_tensor(rng, (3, 4), dt), _gemm_tensor(rng, (4, 2), dt), \
        _gemm_tensor(rng, (3, 2), dt)
    v = data.draw(real_value(vdt))
    kw = {"alpha": 1.5 if dt.kind == "f" or dt == BF16 else 3, "beta": -2}

    def run(x):
        return _call(gk.gemm, a, b, c, **{**kw, pos: x})

    with np.errstate(all="ignore"):
        _same(run(as_form(v, vdt, form)), run(_python(v, vdt)))
        assert run(as_form(v, vdt, "array_1"))[1] is TypeError


@settings(max_examples=examples(120))
@given(dt=st.sampled_from(GEMM_DTYPES), form=st.sampled_from(FORMS), data=st.data())
def test_gemm_c_forms(dt, form, data):
    """C as a NumPy scalar or 0-d array of A's dtype equals C as a (1,) array."""
    gk = _gk()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = _gemm_tensor(rng, (2, 5), dt), _gemm_tensor(rng, (5, 3), dt)
    v = data.draw(real_value(dt))
    beta = data.draw(st.sampled_from([0, 1, 2]))
    with np.errstate(all="ignore"):
        _same(_call(gk.gemm, a, b, as_form(v, dt, form), 1, beta),
              _call(gk.gemm, a, b, as_form(v, dt, "array_1"), 1, beta))
