"""gemm's scalar arguments: alpha, beta, transA, transB, broadcast, and C given as a scalar.

The accept/reject table (README "Semantics in brief"):
- alpha/beta: Python int/float/bool (and subclasses), NumPy integer/bool/floating scalars,
  the ml_dtypes bfloat16/float8 scalars gemmkit supports, 0-d arrays of those dtypes.
  Anything else is a TypeError naming the argument and showing what was given; a value out
  of range is a ValueError.  Integer values on integer dtypes are applied exactly, modulo
  2**bits, for every value in [-2**63, 2**64 - 1].
- transA/transB/broadcast: integers (Python, NumPy scalar, 0-d integer/bool array) 0 or 1;
  another integer is a ValueError, anything else (floats included) a TypeError.
- C: an array or NumPy scalar of A's dtype, or a Python int/float/bool converted to A's
  dtype like a NEP 50 "weak" scalar.

Integer oracles use Python ints: the exact result, then wrapped modulo 2**bits.
"""
import decimal
import enum
import fractions
import math
import re
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gemmkit as gk
from conftest import examples

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32, U32, I64, U64 = (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
FLOATS = [F16, BF16, F32, F64]
INTS = [I32, U32, I64, U64]
ALL = FLOATS + INTS
ML_FLOATS = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
             ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz]

# the integral alpha/beta values that a detour through a double gets wrong (and neighbours)
BIG_INTS = [2**53 - 1, 2**53, 2**53 + 1, 2**62 + 1, 2**63 - 1, -2**63, 2**64 - 1, -1, -7]
CSHAPES = ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"]


# ----------------------------------------------------------------------------- helpers

def rand(shape, dt, rng):
    dt = np.dtype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    return rng.uniform(-4, 4, size=shape).astype(dt)


def make(M, N, K, dt, cshape, rng, ta=0, tb=0):
    A = rand((K, M) if ta else (M, K), dt, rng)
    B = rand((N, K) if tb else (K, N), dt, rng)
    shape = {"none": None, "scalar": (), "1": (1,), "N": (N,), "1N": (1, N), "M1": (M, 1),
             "11": (1, 1), "MN": (M, N)}[cshape]
    return A, B, (None if shape is None else rand(shape, dt, rng))


def wrap(x, dt):
    bits = dt.itemsize * 8
    x %= 1 << bits
    return x - (1 << bits) if dt.kind == "i" and x >= 1 << (bits - 1) else x


def _oracle_operands(A, B, C, beta, ta, tb):
    """A', B' as Python-int object arrays, C broadcast to (M, N) (None when it is not
    read: absent or beta == 0), and an empty (M, N) object output."""
    Ao = (A.T if ta else A).astype(object)
    Bo = (B.T if tb else B).astype(object)
    M, N = Ao.shape[0], Bo.shape[1]
    Cb = None if C is None or beta == 0 else np.broadcast_to(C, (M, N))
    return Ao, Bo, Cb, np.empty((M, N), dtype=object)


def exact_oracle(A, B, C, alpha, beta, ta=0, tb=0):
    """alpha, beta: Python ints.  Exact big-int arithmetic, then wrap."""
    dt = A.dtype
    Ao, Bo, Cb, out = _oracle_operands(A, B, C, beta, ta, tb)
    M, K = Ao.shape
    N = Bo.shape[1]
    for i in range(M):
        for j in range(N):
            v = alpha * sum(Ao[i, k] * Bo[k, j] for k in range(K))
            if Cb is not None:
                v += beta * int(Cb[i, j])
            out[i, j] = wrap(v, dt)
    return out.astype(dt)


def float_path_oracle(A, B, C, alpha, beta, ta=0, tb=0):
    """The onnx reference's float path: Y = cast(double(dot wrapped) * double(alpha)
    + double(C) * double(beta)), cast = trunc then wrap, NaN/inf -> 0."""
    dt = A.dtype
    Ao, Bo, Cb, out = _oracle_operands(A, B, C, beta, ta, tb)
    M, K = Ao.shape
    N = Bo.shape[1]
    fa, fb = float(alpha), float(beta)
    for i in range(M):
        for j in range(N):
            v = float(wrap(sum(Ao[i, k] * Bo[k, j] for k in range(K)), dt)) * fa
            if Cb is not None:
                v = v + float(int(Cb[i, j])) * fb
            out[i, j] = wrap(math.trunc(v), dt) if math.isfinite(v) else 0
    return out.astype(dt)


def same(x, y):
    """Identical results: equal values, NaN where the other has NaN, same sign of zeros."""
    assert x.dtype == y.dtype and x.shape == y.shape
    if x.dtype.kind in "iu":
        np.testing.assert_array_equal(x, y)
        return
    xd, yd = x.astype(F64), y.astype(F64)
    np.testing.assert_array_equal(xd, yd)  # NaN == NaN here
    np.testing.assert_array_equal(np.signbit(xd) | np.isnan(xd), np.signbit(yd) | np.isnan(yd))


class IntE(enum.IntEnum):
    ONE = 1
    THREE = 3


class MyFloat(float):
    def __float__(self):  # never consulted: gemmkit reads a float's own value
        return 99.0


class MyInt(int):
    def __index__(self):
        return 99

    def __float__(self):
        return 99.0


# ----------------------------------------------------------------------------- alpha / beta: rejected

class HasFloat:
    def __float__(self):
        return 2.0

    def __repr__(self):
        return "HasFloat()"


BAD_REALS = [
    "2", "x", b"2", np.str_("2"), np.bytes_(b"2"), bytearray(b"2"),
    complex(1, 2), 1 + 0j, np.complex64(1), np.complex128(1 + 2j), np.array(1 + 2j),
    None, [1.0], (1.0,), [], {"a": 1}, np.array([1.0]), np.array([2]), np.array([[2.0]]),
    np.ones(3), np.array(1.0, dtype=object), np.array(3, dtype=object),
    fractions.Fraction(1, 2), fractions.Fraction(2), decimal.Decimal("0.5"),
    np.datetime64("2020-01-01"), np.timedelta64(3, "s"), np.array(np.timedelta64(3, "s")),
    np.array("2"), np.array(b"2"), ml_dtypes.int4(1), ml_dtypes.float4_e2m1fn(1.0),
    ml_dtypes.float8_e8m0fnu(2.0), np.array(ml_dtypes.int4(1)), np.zeros((), "u1,f4"),
    HasFloat(), object(),
]


def _stable_repr(v):
    """repr without an address, so that test ids agree between processes (pytest-xdist)"""
    return "object()" if type(v) is object else repr(v)


@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("dt", [F32, I64, BF16, U32], ids=str)
@pytest.mark.parametrize("v", BAD_REALS, ids=lambda v: f"{type(v).__name__}:{_stable_repr(v)}"[:40])
def test_bad_real_type(name, dt, v):
    A = np.ones((2, 2), dt)
    C = np.ones((2, 2), dt)
    # the message names the argument and shows the type of what was given
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. no ComplexWarning on the way
        with pytest.raises(TypeError, match=rf"{name}.*{re.escape(type(v).__name__)}"):
            gk.gemm(A, B=A, C=C, **{name: v})


def test_bad_real_message_shows_value():
    A = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match=r"alpha must be a real number.*got str '2'"):
        gk.gemm(A, A, alpha="2")
    with pytest.raises(TypeError, match=r"beta .*ndarray of shape \(1,\) and dtype float64"):
        gk.gemm(A, A, A, beta=np.array([0.5]))
    with pytest.raises(TypeError, match=r"alpha .*complex128"):
        gk.gemm(A, A, alpha=np.complex128(1 + 2j))


@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_real_out_of_range(name):
    f = np.ones((2, 2), np.float32)
    for dt in FLOATS:
        A = f.astype(dt)
        for v in (10**400, -(10**400), 2**1024, np.array(2**1024, dtype=object)):
            err = ValueError if type(v) is int else TypeError
            with pytest.raises(err, match=name):
                gk.gemm(A, A, A, **{name: v})
        if np.dtype(np.longdouble).itemsize > 8:
            with np.errstate(all="ignore"):
                huge = np.longdouble(2.0) ** 1100
            for v in (huge, -huge, np.asarray(huge)):
                with pytest.raises(ValueError, match=name):
                    gk.gemm(A, A, A, **{name: v})
    for dt in INTS:
        A = f.astype(dt)
        if np.dtype(np.longdouble).itemsize > 8:
            with np.errstate(all="ignore"):
                huge = np.longdouble(2.0) ** 1100
            with pytest.raises(ValueError, match=name):
                gk.gemm(A, A, A, **{name: huge})
        for v in (2**64, -2**63 - 1, 10**400, -(10**400), 2**100):
            with pytest.raises(ValueError, match=rf"{name}.*out of range"):
                gk.gemm(A, A, A, **{name: v})
        # the edges are fine
        gk.gemm(A, A, A, **{name: 2**64 - 1})
        gk.gemm(A, A, A, **{name: -2**63})


def test_huge_repr_in_message():
    # ints too long for repr (sys.set_int_max_str_digits) still give the ValueError
    A = np.ones((1, 1), np.int64)
    with pytest.raises(ValueError, match="alpha"):
        gk.gemm(A, A, alpha=10**5000)


# ----------------------------------------------------------------------------- alpha / beta: accepted

def int_forms(v):
    """Every accepted spelling of the integer v."""
    forms = [v, IntE.ONE if v == 1 else MyInt(v)]
    if v in (0, 1):
        forms += [bool(v), np.bool_(v), np.array(bool(v))]
    for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
              np.uint64, np.intc, np.longlong, np.ulonglong, np.intp):
        info = np.iinfo(t)
        if info.min <= v <= info.max:
            forms += [t(v), np.array(v, dtype=t)]
    return forms


def float_forms(x):
    """Every accepted spelling of the float x (only types that hold x exactly)."""
    forms = [x, np.float64(x), np.array(x), MyFloat(x), np.longdouble(x),
             np.array(x, dtype=np.longdouble)]
    for t in (np.float16, np.float32) + tuple(ML_FLOATS):
        with np.errstate(all="ignore"):
            y = np.array(x, dtype=np.float64).astype(t)
        if float(y) == x or (math.isnan(x) and math.isnan(float(y))):
            forms += [y[()], y]
    return forms


ALPHAS_INT = [0, 1, 3, -7, 2**53 + 1]
ALPHAS_FLOAT = [0.5, -1.75, 3.0, 1e20, 2.0**-30, 240.0, float("nan"), float("inf")]


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_every_accepted_form_matches_python_value(dt):
    rng = np.random.default_rng(17)
    A, B, C = make(3, 4, 5, dt, "MN", rng)
    if dt in FLOATS:
        # integers read exactly, then rounded: equal to the Python float of the int
        for v in ALPHAS_INT:
            ref_a = gk.gemm(A, B, C, float(v), 2.0)
            ref_b = gk.gemm(A, B, C, 2.0, float(v))
            for form in int_forms(v):
                same(gk.gemm(A, B, C, form, 2.0), ref_a)
                same(gk.gemm(A, B, C, 2.0, form), ref_b)
    else:
        for v in ALPHAS_INT:
            ref_a = gk.gemm(A, B, C, v, 2)
            ref_b = gk.gemm(A, B, C, 2, v)
            np.testing.assert_array_equal(ref_a, exact_oracle(A, B, C, v, 2))
            np.testing.assert_array_equal(ref_b, exact_oracle(A, B, C, 2, v))
            for form in int_forms(v):
                same(gk.gemm(A, B, C, form, 2), ref_a)
                same(gk.gemm(A, B, C, 2, form), ref_b)
    for x in ALPHAS_FLOAT:
        ref_a = gk.gemm(A, B, C, x, 0.25)
        ref_b = gk.gemm(A, B, C, 0.25, x)
        for form in float_forms(x):
            same(gk.gemm(A, B, C, form, 0.25), ref_a)
            same(gk.gemm(A, B, C, 0.25, form), ref_b)


@pytest.mark.parametrize("t", ML_FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("dt", [F64, F32, I64, U32], ids=str)
def test_ml_dtypes_scalar_read_exactly(t, dt):
    """An ml_dtypes scalar alpha/beta is its exact value: the same as the 0-d array and as
    float(scalar) (NumPy's own scalar helpers would misread it)."""
    rng = np.random.default_rng(3)
    A, B, C = make(3, 2, 4, dt, "N", rng)
    if dt in INTS:
        A, B, C = A % 64, B % 64, C % 64  # keep the float path's values in range
    # every finite bit pattern of the 8-bit types; a spread of bfloat16 values
    bits = np.arange(256, dtype=np.uint8) if np.dtype(t).itemsize == 1 else \
        np.array([0x3F80, 0xC0A0, 0x4049, 0x3E4D, 0x7F7F, 0x0001, 0x8000, 0x4B80, 0x5F00],
                 dtype=np.uint16)
    vals = bits.view(t)
    # every pattern on one dtype (each one is a few cheap calls), a sample on the others
    for s in vals if dt == F64 else vals[::7]:
        x = float(s)
        if not math.isfinite(x):
            continue
        ref = gk.gemm(A, B, C, x, -x)
        same(gk.gemm(A, B, C, s, -x), ref)
        same(gk.gemm(A, B, C, np.asarray(s), -x), ref)
        same(gk.gemm(A, B, C, x, -s), ref)
        same(gk.gemm(A, B, C, x, np.asarray(-s)), ref)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_nan_inf_alpha_beta_float(dt):
    A, B, C = make(2, 3, 4, dt, "MN", np.random.default_rng(1))
    for v in (np.nan, np.inf, -np.inf, np.float32("nan"), ml_dtypes.bfloat16("inf"),
              np.array(np.nan)):
        y = gk.gemm(A, B, C, v, 1.0).astype(F64)
        ref = A.astype(F64) @ B.astype(F64) * float(v) + C.astype(F64)
        np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
        y = gk.gemm(A, B, C, 1.0, v).astype(F64)
        assert not np.isfinite(y).any()


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_nan_inf_alpha_beta_int_give_zero(dt):
    """Non-finite alpha/beta on integer types take the float path, whose cast maps
    NaN/inf to 0."""
    A, B, C = make(2, 3, 4, dt, "MN", np.random.default_rng(1))
    for v in (np.nan, np.inf, -np.inf, np.float32("nan"), ml_dtypes.bfloat16("inf"),
              np.array(-np.inf), np.float16("nan")):
        np.testing.assert_array_equal(gk.gemm(A, B, C, v, 1), np.zeros((2, 3), dt))
        np.testing.assert_array_equal(gk.gemm(A, B, C, 1, v), np.zeros((2, 3), dt))
        # beta unused (no C): alpha alone decides
        np.testing.assert_array_equal(gk.gemm(A, B, None, 3, v), exact_oracle(A, B, None, 3, 0))


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_beta_zero_in_any_form_does_not_read_c(dt):
    A, B, _ = make(3, 2, 4, dt, "none", np.random.default_rng(2))
    if dt in FLOATS:
        C = np.full((3, 2), np.nan, dt)
    else:
        C = rand((3, 2), dt, np.random.default_rng(5))
    ref = gk.gemm(A, B, None, 2, 1)
    for z in (0, 0.0, -0.0, False, np.int64(0), np.uint8(0), np.bool_(False), np.array(0),
              np.float32(0), ml_dtypes.bfloat16(0), np.array(-0.0), IntE.ONE - 1):
        same(gk.gemm(A, B, C, 2, z), ref)


# ----------------------------------------------------------------------------- exact integers

@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("v", BIG_INTS)
def test_integer_alpha_exact(dt, v):
    rng = np.random.default_rng(abs(v) % 1000)
    for cshape in CSHAPES:
        A, B, C = make(3, 4, 5, dt, cshape, rng)
        for ta, tb in ((0, 0), (1, 1)):
            if ta or tb:
                A, B = np.ascontiguousarray(A.T), np.ascontiguousarray(B.T)
            np.testing.assert_array_equal(gk.gemm(A, B, C, v, 1, ta, tb),
                                          exact_oracle(A, B, C, v, 1, ta, tb))
            np.testing.assert_array_equal(gk.gemm(A, B, C, 3, v, ta, tb),
                                          exact_oracle(A, B, C, 3, v, ta, tb))
            np.testing.assert_array_equal(gk.gemm(A, B, C, v, v, ta, tb),
                                          exact_oracle(A, B, C, v, v, ta, tb))


def test_integer_alpha_exact_reported_cases():
    one = lambda dt, x: np.array([[x]], dt)  # noqa: E731
    assert gk.gemm(one(I64, 1), one(I64, 1), alpha=2**53 + 1)[0, 0] == 2**53 + 1
    assert int(gk.gemm(one(U64, 1), one(U64, 1), alpha=2**64 - 1)[0, 0]) == 2**64 - 1
    assert int(gk.gemm(one(U64, 1), one(U64, 1), alpha=np.uint64(2**64 - 1))[0, 0]) == 2**64 - 1
    assert gk.gemm(one(I64, 0), one(I64, 0), one(I64, 1), beta=2**62 + 1)[0, 0] == 2**62 + 1
    # negative integers on uint64 wrap: -1 * x == 2**64 - x
    assert int(gk.gemm(one(U64, 5), one(U64, 1), alpha=-1)[0, 0]) == 2**64 - 5
    assert int(gk.gemm(one(U32, 5), one(U32, 1), alpha=-1)[0, 0]) == 2**32 - 5
    # 32-bit types use the value modulo 2**32: 2**32 + 3 acts as 3
    assert gk.gemm(one(I32, 5), one(I32, 1), alpha=2**32 + 3)[0, 0] == 15
    assert gk.gemm(one(I32, 5), one(I32, 1), alpha=2**63 - 1)[0, 0] == -5


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_integral_float_alpha_keeps_exact_double_value(dt):
    """An integral float is its exact double value modulo 2**bits (1e20 is an integer)."""
    rng = np.random.default_rng(8)
    A, B, C = make(3, 3, 4, dt, "N", rng)
    for x in (3.0, 1e20, -1e20, float(2**64), float(2**63), -float(2**63), 2.0**80,
              float(2**53 + 2)):
        np.testing.assert_array_equal(gk.gemm(A, B, C, x, 1), exact_oracle(A, B, C, int(x), 1))
        np.testing.assert_array_equal(gk.gemm(A, B, C, 1, x), exact_oracle(A, B, C, 1, int(x)))
        np.testing.assert_array_equal(gk.gemm(A, B, C, np.float32(x), 1),
                                      exact_oracle(A, B, C, int(np.float32(x)), 1))


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_integer_with_nonintegral_partner_takes_float_path(dt):
    """The integer-vs-float path decision is unchanged: a non-integral alpha, or C used with
    a non-integral beta, sends both through float64 (an integer alpha/beta rounded)."""
    rng = np.random.default_rng(21)
    bits = dt.itemsize * 8
    lo, hi = (0, 2**(bits // 2 - 4)) if dt.kind == "u" else (-2**(bits // 2 - 4), 2**(bits // 2 - 4))
    A = rng.integers(lo, hi, (3, 4), dtype=dt)
    B = rng.integers(lo, hi, (4, 2), dtype=dt)
    C = rng.integers(lo, hi, (3, 1), dtype=dt)
    for v in BIG_INTS:
        for beta in (0.5, -0.25):
            np.testing.assert_array_equal(gk.gemm(A, B, C, v, beta),
                                          float_path_oracle(A, B, C, v, beta))
        np.testing.assert_array_equal(gk.gemm(A, B, C, 0.5, v),
                                      float_path_oracle(A, B, C, 0.5, v))
        # a non-integral beta with no C (or beta unused) keeps the exact path
        np.testing.assert_array_equal(gk.gemm(A, B, None, v, 0.5),
                                      exact_oracle(A, B, None, v, 0))


SPECIAL = st.sampled_from(BIG_INTS + [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32 + 1, -2**31])


def _int_form(v, how):
    if how == "np" and -2**63 <= v < 2**63:
        return np.int64(v)
    if how == "np" and 0 <= v < 2**64:
        return np.uint64(v)
    if how == "0d" and -2**63 <= v < 2**63:
        return np.array(v)
    if how == "0d" and 0 <= v < 2**64:
        return np.array(v, dtype=np.uint64)
    return v


@settings(max_examples=examples(80))
@given(
    dt=st.sampled_from(INTS),
    alpha=st.integers(-2**63, 2**64 - 1) | SPECIAL,
    beta=st.integers(-2**63, 2**64 - 1) | SPECIAL,
    cshape=st.sampled_from(CSHAPES),
    M=st.integers(1, 5), N=st.integers(1, 5), K=st.integers(0, 6),
    ta=st.integers(0, 1), tb=st.integers(0, 1),
    how_a=st.sampled_from(["int", "np", "0d"]), how_b=st.sampled_from(["int", "np", "0d"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_integer_alpha_beta_exact(dt, alpha, beta, cshape, M, N, K, ta, tb,
                                           how_a, how_b, seed):
    A, B, C = make(M, N, K, dt, cshape, np.random.default_rng(seed), ta, tb)
    Y = gk.gemm(A, B, C, _int_form(alpha, how_a), _int_form(beta, how_b), ta, tb)
    np.testing.assert_array_equal(Y, exact_oracle(A, B, C, alpha, beta, ta, tb))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_integer_alpha_on_float_dtype_is_rounded(dt):
    A, B, C = make(2, 2, 3, dt, "MN", np.random.default_rng(4))
    for v in BIG_INTS + [10**300, -(10**300), 2**1023]:
        same(gk.gemm(A, B, C, v, 1.0), gk.gemm(A, B, C, float(v), 1.0))
        same(gk.gemm(A, B, C, 1.0, v), gk.gemm(A, B, C, 1.0, float(v)))


# ----------------------------------------------------------------------------- flags

GOOD_FLAGS = {
    0: [0, False, np.bool_(False), np.int8(0), np.uint64(0), np.int64(0), np.intc(0),
        np.array(0), np.array(False), np.array(0, dtype=np.uint8), IntE.ONE - 1],
    1: [1, True, np.bool_(True), np.int8(1), np.uint64(1), np.int64(1), np.uint16(1),
        np.array(1), np.array(True), np.array(1, dtype=np.int32), IntE.ONE],
}
FLAG_TYPE_ERRORS = [1.0, 0.0, np.float64(1), np.float32(0), np.float16(1),
                    ml_dtypes.bfloat16(1), np.array(1.0), "1", "0", b"1", None, [1], (0,),
                    np.array([1]), np.array([[0]]), 1 + 0j, np.complex64(1),
                    fractions.Fraction(1), decimal.Decimal(1), np.array(1, dtype=object),
                    MyFloat(1.0)]
FLAG_VALUE_ERRORS = [2, -1, 2**70, -(2**70), np.int64(2), np.uint64(2**64 - 1), np.int8(-1),
                     np.array(2), np.array(-1, dtype=np.int16), IntE.THREE]


@pytest.mark.parametrize("name", ["transA", "transB", "broadcast"])
def test_flags_accepted(name):
    rng = np.random.default_rng(6)
    A = rand((3, 3), F64, rng)
    B = rand((3, 3), F64, rng)
    C = rand((3, 3), F64, rng)
    for val, forms in GOOD_FLAGS.items():
        ref = gk.gemm(A, B, C, **{name: val})
        for form in forms:
            same(gk.gemm(A, B, C, **{name: form}), ref)
    # they really act: transposes / broadcast=0 rules
    if name != "broadcast":
        assert not np.array_equal(gk.gemm(A, B, **{name: np.True_}), gk.gemm(A, B))
    else:
        with pytest.raises(ValueError, match="broadcast=0"):
            gk.gemm(A, B, C[0], broadcast=np.array(False))


@pytest.mark.parametrize("name", ["transA", "transB", "broadcast"])
@pytest.mark.parametrize("v", FLAG_TYPE_ERRORS, ids=lambda v: f"{type(v).__name__}:{v!r}"[:40])
def test_flags_type_error(name, v):
    A = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match=rf"{name}.*0 or 1.*{re.escape(type(v).__name__)}"):
        gk.gemm(A, A, A, **{name: v})


@pytest.mark.parametrize("name", ["transA", "transB", "broadcast"])
@pytest.mark.parametrize("v", FLAG_VALUE_ERRORS, ids=lambda v: f"{type(v).__name__}:{v!r}"[:40])
def test_flags_value_error(name, v):
    A = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=rf"{name} must be 0 or 1, got"):
        gk.gemm(A, A, A, **{name: v})


# ----------------------------------------------------------------------------- C as a scalar

@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_c_python_float_is_weak(dt):
    A, B, _ = make(3, 2, 4, dt, "none", np.random.default_rng(9))
    for v in (0.5, -1.25, 0.1, 1e-30, 3.3e38, 1e300, -1e300, float("inf"), float("nan"),
              -0.0, 7, -3, True, False, 2**53 + 1, 10**300):
        with np.errstate(all="ignore"):
            c0 = np.array(float(v), dtype=F64).astype(dt)  # RNE from the double
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning either
            Y = gk.gemm(A, B, v, 1.5, 2.0)
        same(Y, gk.gemm(A, B, c0, 1.5, 2.0))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_c_python_int_too_large_for_float64(dt):
    A = np.ones((2, 2), dt)
    for v in (10**400, -(10**400), 2**1024):
        with pytest.raises(ValueError, match=r"C .*out of range"):
            gk.gemm(A, A, v)


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_c_python_int_is_weak(dt):
    A, B, _ = make(3, 2, 4, dt, "none", np.random.default_rng(10))
    info = np.iinfo(dt)
    for v in (0, 1, -1, 7, True, False, int(info.min), int(info.max), 2**31 - 1, -2**31,
              2**32 - 1, 2**63 - 1, 2**64 - 1):
        if not info.min <= v <= info.max:
            with pytest.raises(ValueError, match=rf"C = .*out of range for A's dtype {dt}"):
                gk.gemm(A, B, v)
            continue
        Y = gk.gemm(A, B, v, 3, -2)
        c0 = np.array(int(v), dtype=dt)
        same(Y, gk.gemm(A, B, c0, 3, -2))
        np.testing.assert_array_equal(Y, exact_oracle(A, B, c0, 3, -2))
    for v in (int(info.min) - 1, int(info.max) + 1, 10**400):
        with pytest.raises(ValueError, match=r"C = .*out of range"):
            gk.gemm(A, B, v)
    # a Python float is not an integer, even 1.0
    for v in (1.0, 0.5, float("nan"), -0.0):
        with pytest.raises(TypeError, match=r"C is the Python float .* integer dtype"):
            gk.gemm(A, B, v)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_c_numpy_scalar_of_a_dtype(dt):
    rng = np.random.default_rng(12)
    A, B, _ = make(3, 2, 4, dt, "none", rng)
    c_arr = np.asarray(rand((), dt, rng))
    c_scalar = c_arr[()]
    assert type(c_scalar) is dt.type
    ref = gk.gemm(A, B, c_arr, 2, 3)
    same(gk.gemm(A, B, c_scalar, 2, 3), ref)
    same(gk.gemm(A, B, c_arr.reshape(1, 1), 2, 3), ref)
    same(gk.gemm(A, B, c_arr.reshape(1), 2, 3), ref)
    if dt in INTS:
        np.testing.assert_array_equal(ref, exact_oracle(A, B, c_arr, 2, 3))


def test_c_bfloat16_scalar_exact():
    A = np.ones((1, 1), BF16) * 0
    for bits in (0x3F80, 0x3F81, 0xC2F7, 0x7F7F, 0x0001, 0xFF80, 0x7FC0):
        s = np.array(bits, np.uint16).view(BF16)[()]
        same(gk.gemm(A, A, s), np.array([[s]], BF16))
        same(gk.gemm(A, A, s), gk.gemm(A, A, np.asarray(s)))


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_c_scalar_of_other_dtype_is_type_error(dt):
    A = np.ones((2, 2), dt)
    others = [np.float64(1.0), np.float32(1.0), np.int64(1), np.uint32(1), np.int32(1),
              ml_dtypes.bfloat16(1), np.float16(1), np.bool_(True), np.complex64(1), 1 + 0j,
              "1", np.int8(1)]
    for v in others:
        if np.asarray(v).dtype == dt:
            continue
        with pytest.raises(TypeError, match=r"C has dtype"):
            gk.gemm(A, A, v)


def test_c_scalar_with_broadcast0_is_shape_error():
    A = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=r"broadcast=0.*C.*\(2, 2\)"):
        gk.gemm(A, A, 1.0, broadcast=0)
    with pytest.raises(ValueError, match=r"broadcast=0.*C.*\(2, 2\)"):
        gk.gemm(A, A, np.float32(1.0), broadcast=0)


# ----------------------------------------------------------------------------- ONNX attributes

@pytest.mark.parametrize("dt", INTS, ids=str)
def test_float32_attribute_values_still_work(dt):
    """ONNX alpha/beta attributes arrive as Python floats holding float32 values."""
    A, B, C = make(3, 3, 3, dt, "N", np.random.default_rng(13))
    a32 = float(np.float32(2.0**40 + 2.0**20))
    np.testing.assert_array_equal(gk.gemm(A, B, C, a32, -1.0),
                                  exact_oracle(A, B, C, int(a32), -1))


@given(v=st.integers(-2**1023, 2**1023), dt=st.sampled_from(FLOATS))
def test_property_integer_alpha_float_dtype_matches_float(v, dt):
    """On float dtypes an int alpha/beta is its correctly rounded float64."""
    A = np.array([[1.0, -2.0], [0.5, 3.0]]).astype(dt)
    with np.errstate(all="ignore"):
        same(gk.gemm(A, A, A, v, v), gk.gemm(A, A, A, float(v), float(v)))
