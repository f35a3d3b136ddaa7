"""Tests of gemmkit.gemm (ONNX Gemm) against oracles written from the spec in NumPy.

Float types: float64 oracle, tolerance from the accumulation type's error bound.
Integer types: exact oracles with Python ints (object arrays), wrap-around modulo 2**bits.
Non-integral alpha/beta on integer types: the onnx reference implementation.
"""
import threading

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gemmkit as gk
import ort_report
from gemmkit import _core

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32, U32, I64, U64 = (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
FLOATS = [F16, BF16, F32, F64]
INTS = [I32, U32, I64, U64]
ALL = FLOATS + INTS
RNG = np.random.default_rng(1234)

# The block sizes of the kernel family that runs each dtype, read from the module (never
# copied here): mr x nr register tiles, K beyond kc runs in K blocks (the micro-kernel's
# first-K-block flag), M beyond mc in row blocks, N beyond nc in column stripes.
FAMILY = {dt: _core._gemm_family_info(dt) for dt in ALL}


# ----------------------------------------------------------------------------- helpers

def rand(shape, dt, rng=RNG, lo=None, hi=None):
    dt = np.dtype(dt)
    if dt in INTS:
        info = np.iinfo(dt)
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi
        return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
    return rng.uniform(-1 if lo is None else lo, 1 if hi is None else hi, size=shape).astype(dt)


def prime(x, ta):
    return x.T if ta else x


def c_term(C, M, N):
    return np.broadcast_to(np.asarray(C), (M, N))


def float_oracle(A, B, C, alpha, beta, ta, tb):
    """Returns (reference in float64, error bound) for float dtypes."""
    dt = A.dtype
    acc32 = dt != F64
    u = 2.0**-24 if acc32 else 2.0**-53
    out_u = {F16: 2.0**-11, BF16: 2.0**-8, F32: 0.0, F64: 0.0}[dt]
    tiny = {F16: 2.0**-24, BF16: 2.0**-133, F32: 2.0**-149, F64: 2.0**-1074}[dt]
    al = float(np.float32(alpha)) if acc32 else alpha
    be = float(np.float32(beta)) if acc32 else beta
    Ad, Bd = prime(A, ta).astype(F64), prime(B, tb).astype(F64)
    M, K = Ad.shape
    N = Bd.shape[1]
    with np.errstate(all="ignore"):
        prod = Ad @ Bd
        absprod = np.abs(Ad) @ np.abs(Bd)
        ref = al * prod
        cb = np.zeros((M, N))
        if C is not None and be != 0:
            cb = be * c_term(C, M, N).astype(F64)
            ref = ref + cb
        # accumulation: gamma_K; epilogue: 3 roundings; oracle's own float64 error;
        # final rounding to 16 bits; subnormal slack
        bound = ((K + 2) * u + (K + 2) * 2.0**-53) * abs(al) * absprod \
            + 2 * u * (np.abs(al * prod) + np.abs(cb)) \
            + out_u * np.abs(ref) + 4 * tiny + (2.0**-126 * u if acc32 else 0)
    return ref, bound


def assert_float_close(got, ref, bound):
    g = got.astype(F64)
    fin = np.isfinite(ref)
    err = np.abs(g - ref)
    bad = fin & ~(err <= bound)
    assert not bad.any(), (
        f"{bad.sum()} elements off; worst err {np.max(np.where(fin, err - bound, -np.inf))} "
        f"beyond bound, e.g. got {g[bad][:4]} ref {ref[bad][:4]} bound {bound[bad][:4]}")
    # non-finite references: same NaN-ness and same infinity
    nf = ~fin
    assert np.array_equal(np.isnan(g[nf]), np.isnan(ref[nf]))
    assert np.array_equal(g[nf & ~np.isnan(ref)], ref[nf & ~np.isnan(ref)])


def int_oracle(A, B, C, alpha, beta, ta, tb):
    """Exact modular reference with Python ints; alpha, beta integral."""
    dt = A.dtype
    bits = dt.itemsize * 8
    mask = (1 << bits) - 1
    Ao, Bo = prime(A, ta).astype(object), prime(B, tb).astype(object)
    M, N = Ao.shape[0], Bo.shape[1]
    r = (Ao @ Bo if Ao.shape[1] else np.zeros((M, N), dtype=object)) * (int(alpha) & mask)
    if C is not None and beta != 0:
        r = r + c_term(C, M, N).astype(object) * (int(beta) & mask)
    r = np.asarray(r, dtype=object) & mask
    if dt.kind == "i":
        r = ((r + (1 << (bits - 1))) & mask) - (1 << (bits - 1))
    return r.astype(dt).reshape(M, N)


def check(A, B, C=None, alpha=1.0, beta=1.0, ta=0, tb=0, **kw):
    Y = gk.gemm(A, B, C, alpha, beta, ta, tb, **kw)
    M = prime(A, ta).shape[0]
    N = prime(B, tb).shape[1]
    assert Y.shape == (M, N) and Y.dtype == A.dtype and Y.flags.c_contiguous
    if A.dtype in INTS:
        np.testing.assert_array_equal(Y, int_oracle(A, B, C, alpha, beta, ta, tb))
    else:
        assert_float_close(Y, *float_oracle(A, B, C, alpha, beta, ta, tb))
    return Y


def problem(M, N, K, dt, ta=0, tb=0, cshape="MN", rng=RNG):
    A = rand((K, M) if ta else (M, K), dt, rng)
    B = rand((N, K) if tb else (K, N), dt, rng)
    shapes = {"none": None, "scalar": (), "1": (1,), "N": (N,), "1N": (1, N), "M1": (M, 1),
              "11": (1, 1), "MN": (M, N)}
    cs = shapes[cshape]
    C = None if cs is None else rand(cs, dt, rng)
    return A, B, C


def relayout(x, kind):
    """The same values as x in another memory layout (never C-contiguous except 'c')."""
    if kind == "c":
        return x
    if kind == "f":
        return np.asfortranarray(x)
    if kind == "neg":
        y = np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
        assert all(st <= 0 for st, n in zip(y.strides, y.shape) if n > 1)
        return y
    if kind == "slice":
        z = np.zeros((2 * x.shape[0], 3 * x.shape[1]), x.dtype)
        z[::2, ::3] = x
        return z[::2, ::3]
    if kind == "offset":
        z = np.zeros((x.shape[0] + 1, x.shape[1] + 2), x.dtype)
        z[1:, 2:] = x
        return z[1:, 2:]
    if kind == "readonly":
        y = x.copy()
        y.flags.writeable = False
        return y
    if kind == "unaligned":
        # a field of a packed struct: byte strides not a multiple of the itemsize
        z = np.zeros(x.shape, dtype=[("pad", "u1"), ("v", x.dtype)])
        z["v"] = x
        y = z["v"]
        assert y.strides[-1] % x.dtype.itemsize != 0 or x.dtype.itemsize == 1
        return y
    raise AssertionError(kind)


LAYOUTS = ["c", "f", "neg", "slice", "offset", "readonly", "unaligned"]


# ----------------------------------------------------------------------------- floats

@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_float_basic(dt, ta, tb):
    A, B, C = problem(13, 9, 21, dt, ta, tb)
    check(A, B, C, 0.75, -1.5, ta, tb)
    check(A, B, None, 1.0, 1.0, ta, tb)


@pytest.mark.parametrize("dt", ALL, ids=str)
@pytest.mark.parametrize("cshape", ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"])
def test_c_broadcast_shapes(dt, cshape):
    A, B, C = problem(6, 5, 7, dt, cshape=cshape)
    alpha, beta = (2.0, -3.0) if dt in INTS else (0.5, 2.0)
    Y = check(A, B, C, alpha, beta)
    if C is not None and dt in FLOATS:
        # the C term really is broadcast as NumPy would (not a misread stride)
        Y0 = gk.gemm(A, B, None, alpha)
        d = Y.astype(F64) - Y0.astype(F64)
        expect = np.broadcast_to(C.astype(F64) * beta, Y.shape)
        assert np.allclose(d, expect, rtol=0.05, atol=0.05)


EDGE = list(range(1, 18)) + [31, 32, 33, 63, 64, 65, 127, 128, 129]


@pytest.mark.parametrize("dt", [F32, F64, BF16, I32, U64], ids=str)
def test_edge_shapes(dt):
    rng = np.random.default_rng(7)
    for i, s in enumerate(EDGE):
        # every edge size appears as M, N and K, each with differing partners
        t = EDGE[(i * 7 + 3) % len(EDGE)] if s < 60 else 5
        for M, N, K in ((s, t, 9), (t, s, 3), (4, 3, s)):
            A, B, C = problem(M, N, K, dt, i % 2, (i // 2) % 2, "N", rng)
            check(A, B, C, 1.0, 1.0, i % 2, (i // 2) % 2)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_deep_k_and_wide_n(dt):
    """K beyond KC (partial sums merged across K blocks) and N beyond NC (several column
    stripes; for 16-bit types the float workspace is indexed per stripe)."""
    rng = np.random.default_rng(11)
    KC, NC = FAMILY[dt]["kc"], FAMILY[dt]["nc"]
    for M, N, K in ((5, 7, 2 * KC + 3), (3, NC + 9, KC + 1), (9, 17, KC)):
        for ta, tb in ((0, 0), (1, 1)):
            A, B, C = problem(M, N, K, dt, ta, tb, "M1", rng)
            check(A, B, C, 2.0 if dt in INTS else 0.5, -1.0, ta, tb)


# ----------------------------------------------------------------------------- blocking
#
# Shapes derived from each family's block sizes, and the scalar families' exact result:
# each output's sum in the accumulation type from +0, one rounded product at a time in
# increasing k across every K block, then alpha*acc (+ beta*C) and one rounding.

def seq_oracle(A, B, C, alpha, beta, ta=0, tb=0):
    """The scalar families' float result bit for bit (float32 accumulation for 16-bit and
    float32 types, float64 for float64; NumPy's float ops round each step like C's)."""
    dt = A.dtype
    acc_t = F64 if dt == F64 else F32
    a, b = prime(A, ta).astype(acc_t), prime(B, tb).astype(acc_t)
    M, K = a.shape
    N = b.shape[1]
    acc = np.zeros((M, N), acc_t)
    with np.errstate(all="ignore"):
        for k in range(K):
            acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
        al, be = acc_t.type(alpha), acc_t.type(beta)
        y = al * acc
        if C is not None and be != 0:
            y = y + be * c_term(C, M, N).astype(acc_t)
        return y.astype(dt)


def assert_same_bits(Y, R):
    """Bit-identical, except that any NaN matches any NaN."""
    u = np.dtype(f"u{Y.dtype.itemsize}")
    nan = np.isnan(Y.astype(F64)) & np.isnan(R.astype(F64))
    yb, rb = np.where(nan, 0, Y.view(u)), np.where(nan, 0, R.view(u))
    bad = yb != rb
    assert not bad.any(), f"{bad.sum()} of {bad.size} differ, e.g. got {Y[bad][:4]} want {R[bad][:4]}"


def check_exact(A, B, C=None, alpha=1.0, beta=1.0, ta=0, tb=0):
    """Integers: the exact modular oracle.  Floats: the scalar families' sequential result
    bit for bit when the scalar family runs this dtype, else the error bound."""
    Y = gk.gemm(A, B, C, alpha, beta, ta, tb)
    assert_exact(Y, FAMILY[A.dtype]["isa"] == "scalar", A, B, C, alpha, beta, ta, tb)
    return Y


def assert_exact(Y, scalar, A, B, C, alpha, beta, ta, tb):
    dt = A.dtype
    assert Y.dtype == dt
    if dt in INTS:
        np.testing.assert_array_equal(Y, int_oracle(A, B, C, alpha, beta, ta, tb))
    elif scalar:
        assert_same_bits(Y, seq_oracle(A, B, C, alpha, beta, ta, tb))
    else:
        assert_float_close(Y, *float_oracle(A, B, C, alpha, beta, ta, tb))


def blocking_shapes(dt):
    f = FAMILY[dt]
    mr, nr, mc, kc, nc = f["mr"], f["nr"], f["mc"], f["kc"], f["nc"]
    return [
        (max(mr - 1, 1), nr + 1, kc - 1),   # edge tiles, one K block
        (mr, nr, kc),                       # exactly one tile, one full K block
        (mr + 1, max(nr - 1, 1), kc + 1),   # second K block of depth 1
        (2 * mr + 1, 2 * nr + 1, 2 * kc + 1),
        (mc + mr + 1, nr + 1, 3),           # past MC, with an edge tile in the last block
        (mc + 1, 2, kc + 1),                # past MC, K split
        (mr + 1, nc + nr - 1, kc + 1),      # past NC (the 16-bit sums are kept per stripe)
        (1, 2 * nc + 1, 2),
    ]


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_shapes_around_the_blocking(dt):
    rng = np.random.default_rng(21)
    for i, (M, N, K) in enumerate(blocking_shapes(dt)):
        ta, tb = i % 2, (i // 2) % 2
        A, B, C = problem(M, N, K, dt, ta, tb, "M1", rng)
        alpha, beta = (3, -5) if dt in INTS else (0.75, -1.25)
        check_exact(A, B, C, alpha, beta, ta, tb)
        check_exact(A, B, None, 1, 1, ta, tb)  # the epilogue is the identity: skipped


def _dirty_heap(M, N, dt):
    """Leaves freed memory of Y's size full of NaN / a bit pattern, so that a kernel that
    read Y before its first K block wrote it would show it."""
    junk = [np.full((M, N), 0x5A if dt in INTS else np.nan, dt) for _ in range(4)]
    del junk


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_first_k_block_overwrites(dt):
    """K = 0 (the first-block flag alone zeroes the sums), one K block, one more element,
    several blocks: the result never depends on what Y's memory held."""
    rng = np.random.default_rng(22)
    f = FAMILY[dt]
    kc, mr, nr = f["kc"], f["mr"], f["nr"]
    M, N = 2 * mr + 1, 3 * nr - 1
    for K in (0, 1, kc - 1, kc, kc + 1, 2 * kc, 2 * kc + 1):
        for cshape in ("none", "MN"):
            A, B, C = problem(M, N, K, dt, 0, 0, cshape, rng)
            for alpha, beta in ((1, 1), (2, 3)):
                _dirty_heap(M, N, dt)
                check_exact(A, B, C, alpha, beta)
    _dirty_heap(M, N, dt)
    assert not gk.gemm(np.zeros((M, 0), dt), np.zeros((0, N), dt)).any()


def _c_layouts(C, cshape):
    """C in its plain layout and, for a full (M, N) C, column-strided, transposed and
    unaligned views (the epilogue's contiguous, strided and byte-strided C loops)."""
    out = [C]
    if cshape == "MN":
        out += [relayout(C, "f"), relayout(C, "slice"), relayout(C, "unaligned")]
    elif cshape in ("N", "1N"):
        out += [relayout(C.reshape(1, -1), "slice").reshape(C.shape)]
    return out


@pytest.mark.parametrize("dt", ALL, ids=str)
@pytest.mark.parametrize("cshape", ["scalar", "1", "N", "1N", "M1", "11", "MN"])
@pytest.mark.parametrize("beta", [0, 1, "other"])
def test_every_c_form_and_beta(dt, cshape, beta):
    """Every broadcast form of C (strides 0 on broadcast axes) with beta 0 (C never read:
    float C is NaN), 1 and another value, over edge tiles and two K blocks."""
    rng = np.random.default_rng(23)
    f = FAMILY[dt]
    M, N, K = f["mr"] + 1, 2 * f["nr"] + 1, f["kc"] + 1
    A, B, C = problem(M, N, K, dt, 0, 0, cshape, rng)
    if beta == "other":
        beta = -7 if dt in INTS else -0.375
    if beta == 0 and dt in FLOATS:
        C = np.full(C.shape, np.nan, dt)
    for Cl in _c_layouts(C, cshape):
        for alpha in (1, 5):
            Y = check_exact(A, B, Cl, alpha, beta)
            if beta == 0:
                np.testing.assert_array_equal(Y, gk.gemm(A, B, None, alpha))


WIDE = list(enumerate(_core._gemm_wide_tile_dtypes()))


@pytest.mark.parametrize("family,dt", WIDE, ids=[f"{i}-{d}" for i, d in WIDE])
def test_wide_tiles_have_no_cap(family, dt):
    """The driver with scalar families at AVX-512 / AMX tile shapes (14x32, 6x64, 16x64,
    32x32; never dispatched): full and edge tiles, K blocks, C forms -- bit for bit the
    4x4 oracle's result."""
    rng = np.random.default_rng(25)
    f = _core._gemm_with_wide_tile(family, np.zeros((1, 1), dt), np.zeros((1, 1), dt))[1]
    mr, nr, mc, kc = f["mr"], f["nr"], f["mc"], f["kc"]
    for i, (M, N, K) in enumerate(((mr, nr, kc), (mr - 1, nr + 1, kc + 1),
                                   (2 * mr + 3, 3 * nr - 5, 5), (mc + mr + 1, nr - 1, 2 * kc + 1),
                                   (1, 1, 0), (mr + 1, 1, 2))):
        ta, tb = i % 2, (i // 2) % 2
        for cshape, alpha, beta in (("none", 1, 1), ("M1", 3, -2), ("MN", 1, 1)):
            A, B, C = problem(M, N, K, dt, ta, tb, cshape, rng)
            Y, _ = _core._gemm_with_wide_tile(family, A, B, C, alpha, beta, ta, tb)
            assert_exact(Y, True, A, B, C, alpha, beta, ta, tb)
            if dt in INTS or FAMILY[dt]["isa"] == "scalar":  # the same oracle kernel
                assert_same_bits(Y, gk.gemm(A, B, C, alpha, beta, ta, tb))


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_int_exact_across_k_blocks_at_the_extremes(dt):
    """Every product and partial sum wraps: extreme values, K over several blocks, alpha
    and beta the largest exact integers of the type (reduced modulo 2**bits)."""
    info = np.iinfo(dt)
    f = FAMILY[dt]
    M, N, K = f["mr"] + 1, f["nr"] + 1, 2 * f["kc"] + 1
    rng = np.random.default_rng(24)
    for lo, hi in ((info.max, info.max), (info.min, info.min), (info.min, info.max)):
        A = rng.choice(np.array([lo, hi], dt), size=(M, K))
        B = rng.choice(np.array([hi, lo], dt), size=(K, N))
        C = np.full((M, N), info.max, dt)
        for alpha, beta in ((1, 1), (int(info.max), int(info.min)), (2**64 - 1, -(2**63))):
            check_exact(A, B, C, alpha, beta)


@pytest.mark.parametrize("dt", [F16, BF16], ids=str)
def test_16bit_rounded_once(dt):
    """Small integers: float32 accumulation is exact, so Y must be the single RNE rounding
    of the exact value (a double rounding or 16-bit accumulation would differ)."""
    rng = np.random.default_rng(3)
    kc = FAMILY[dt]["kc"]
    for K in (5, kc + 44, 2 * kc + 88):
        A = rng.integers(-8, 9, size=(7, K)).astype(dt)
        B = rng.integers(-8, 9, size=(K, 6)).astype(dt)
        C = rng.integers(-100, 100, size=(7, 6)).astype(dt)
        exact = A.astype(F64) @ B.astype(F64) * 3 + C.astype(F64) * 0.5
        assert np.abs(exact).max() < 2**24
        Y = gk.gemm(A, B, C, 3.0, 0.5)
        np.testing.assert_array_equal(Y.view(np.uint16), exact.astype(dt).view(np.uint16))


def test_float32_alpha_is_float32():
    # float32 types compute with float32(alpha): alpha = 1 + 2**-30 rounds to exactly 1
    A = np.array([[1.0 + 2**-23]], np.float32)
    B = np.array([[1.0]], np.float32)
    assert gk.gemm(A, B, alpha=1 + 2**-30)[0, 0] == np.float32(1.0 + 2**-23)
    A64 = A.astype(F64)
    assert gk.gemm(A64, B.astype(F64), alpha=1 + 2**-30)[0, 0] == (1.0 + 2**-23) * (1 + 2**-30)


# ----------------------------------------------------------------------------- NaN / special

@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_beta_zero_does_not_read_c(dt):
    A, B, _ = problem(5, 4, 3, dt)
    C = np.full((5, 4), np.nan, dt)
    Y = gk.gemm(A, B, C, 1.0, 0.0)
    assert not np.isnan(Y.astype(F64)).any()
    check(A, B, None, 1.0, 0.0)
    # and with beta != 0 the NaN does propagate
    assert np.isnan(gk.gemm(A, B, C, 1.0, 1.0).astype(F64)).all()


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_alpha_zero_inf_gives_nan(dt):
    """gemmkit computes alpha * (A @ B) literally (no BLAS shortcut for alpha == 0):
    0 * inf = NaN per IEEE."""
    A, B, C = problem(3, 4, 5, dt)
    A[1, 2] = np.inf
    Y = gk.gemm(A, B, C, 0.0, 1.0).astype(F64)
    assert np.isnan(Y[1]).all()
    np.testing.assert_array_equal(Y[[0, 2]], C[[0, 2]].astype(F64))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_nan_inf_propagate(dt):
    A, B, C = problem(4, 5, 6, dt)
    B[2, 3] = np.nan
    A[0, 1] = np.inf
    B[1] = np.abs(B[1]) + 0.5  # row 0 of Y gets +inf (except the NaN column)
    Y = gk.gemm(A, B, C).astype(F64)
    assert np.isnan(Y[:, 3]).all()
    assert np.isposinf(np.delete(Y[0], 3)).all()
    assert np.isfinite(np.delete(Y[1:], 3, axis=1)).all()


# ----------------------------------------------------------------------------- empty / K = 0

@pytest.mark.parametrize("dt", ALL, ids=str)
def test_k_zero(dt):
    A = np.zeros((3, 0), dt)
    B = np.zeros((0, 4), dt)
    C = rand((3, 1), dt)
    beta = 2.0 if dt in INTS else 0.5
    Y = gk.gemm(A, B, C, 3.0, beta)
    assert Y.shape == (3, 4) and Y.dtype == dt
    np.testing.assert_array_equal(Y, int_oracle(A, B, C, 3, 2, 0, 0) if dt in INTS else
                                  np.broadcast_to((C.astype(F64) * beta).astype(dt), (3, 4)))
    np.testing.assert_array_equal(gk.gemm(A, B), np.zeros((3, 4), dt))


@pytest.mark.parametrize("dt", ALL, ids=str)
@pytest.mark.parametrize("M,N,K", [(0, 4, 3), (3, 0, 3), (0, 0, 0), (0, 5, 0)])
def test_empty(dt, M, N, K):
    A, B, C = problem(M, N, K, dt, cshape="N")
    Y = gk.gemm(A, B, C)
    assert Y.shape == (M, N) and Y.dtype == dt


# ----------------------------------------------------------------------------- integers

@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 1), (0, 1)])
def test_int_wraps_exactly(dt, ta, tb):
    A, B, C = problem(11, 10, 37, dt, ta, tb)  # full-range values: every sum wraps
    check(A, B, C, 1.0, 1.0, ta, tb)
    check(A, B, C, 3.0, -7.0, ta, tb)
    check(A, B, C, -1.0, 0.0, ta, tb)


@pytest.mark.parametrize("dt", [I64, U64], ids=str)
def test_int64_beyond_2_53(dt):
    """Values and products far beyond 2**53 (a detour through double would lose them)."""
    v = (1 << 62) + 12345 if dt == U64 else (1 << 61) + 12345
    A = np.array([[v, 3, 1], [-(v // 3) if dt == I64 else v // 3, 5, 7]], dtype=dt)
    B = np.array([[5, 1], [v + 1, 2], [9, (1 << 53) + 1]], dtype=dt)
    C = np.array([[v, 1]], dtype=dt)
    Y = check(A, B, C, 3.0, 2.0)
    # independent spot check of one element with Python ints
    mask = (1 << 64) - 1
    y00 = (3 * (int(A[0, 0]) * 5 + 3 * (v + 1) + 1 * 9) + 2 * v) & mask
    assert int(Y[0, 0]) & mask == y00
    # integral alpha beyond 2**53 is reduced exactly: 2**60 + 2**9 is a double
    alpha = float((1 << 60) + (1 << 9))
    check(A, B, C, alpha, -float(1 << 62))


def test_int32_integral_alpha_reduced_mod_2_32():
    A = rand((4, 6), I32)
    B = rand((6, 3), I32)
    C = rand((4, 3), I32)
    # 2**40 == 0 (mod 2**32): only beta*C remains
    np.testing.assert_array_equal(gk.gemm(A, B, C, float(2**40), 1.0), C)
    check(A, B, C, float(2**33 + 5), -float(2**31))


@pytest.mark.parametrize("dt", [U32, U64], ids=str)
def test_unsigned_negative_integral_alpha(dt):
    A, B, C = problem(3, 4, 5, dt)
    Y = gk.gemm(A, B, C, -1.0, -2.0)
    np.testing.assert_array_equal(Y, int_oracle(A, B, C, -1, -2, 0, 0))


def onnx_gemm(A, B, C, alpha, beta, ta, tb):
    pytest.importorskip("onnx")  # the test-core extra has no onnx: skip, do not fail
    from onnx import TensorProto, helper  # noqa: F401
    from onnx.reference import ReferenceEvaluator
    elem = helper.np_dtype_to_tensor_dtype(A.dtype)
    names = ["A", "B"] + (["C"] if C is not None else [])
    node = helper.make_node("Gemm", names, ["Y"], alpha=alpha, beta=beta, transA=ta, transB=tb)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, elem, None) for n in names],
        [helper.make_tensor_value_info("Y", elem, None)])
    # opset 13's IR version, not onnx's newest (an older onnxruntime refuses that)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    feeds = {"A": A, "B": B}
    if C is not None:
        feeds["C"] = C
    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("alpha,beta", [(0.5, 1.0), (1.0, -0.25), (-1.75, 2.5), (0.3, 0.0),
                                        (3.0, 0.1)])
def test_int_nonintegral_alpha_beta_matches_onnx_reference(dt, alpha, beta):
    # ONNX attributes are float32: pass gemmkit the same float32 values
    alpha, beta = float(np.float32(alpha)), float(np.float32(beta))
    rng = np.random.default_rng(5)
    for ta, tb in ((0, 0), (1, 1)):
        for cshape in ("MN", "N", "none"):
            bits = dt.itemsize * 8
            # keep alpha*dot + beta*C inside the type (the reference's cast is only
            # defined there); the dot itself may wrap for 32-bit types
            if dt.kind == "u":
                A, B, C = (rand(s, dt, rng, 0, 2**(bits // 2 - 4)) for s in
                           ((9, 6) if ta else (6, 9), (5, 9) if tb else (9, 5), (6, 5)))
                if alpha < 0 or beta < 0:
                    continue
            else:
                A, B, C = (rand(s, dt, rng, -2**(bits // 2 - 4), 2**(bits // 2 - 4)) for s in
                           ((9, 6) if ta else (6, 9), (5, 9) if tb else (9, 5), (6, 5)))
            C = {"MN": C, "N": C[0], "none": None}[cshape]
            Y = gk.gemm(A, B, C, alpha, beta, ta, tb)
            if alpha == int(alpha) and (C is None or beta == int(beta)):
                # integral alpha and no non-integral beta in play: gemmkit stays exact
                # (the reference would go through float64 and round beyond 2**53)
                np.testing.assert_array_equal(Y, int_oracle(A, B, C, alpha, beta, ta, tb))
                continue
            R = onnx_gemm(A, B, C, alpha, beta, ta, tb)
            assert R.dtype == dt
            np.testing.assert_array_equal(Y, R)


def test_int32_nonintegral_after_wrap_matches_onnx_reference():
    # the int32 dot wraps first (np.dot in int32), then float64 * alpha: in range again
    A = np.array([[2**30, 2**30], [2**30 + 7, -(2**29)]], np.int32)
    B = np.array([[3, 1], [2, 5]], np.int32)
    Y = gk.gemm(A, B, None, 0.5)
    np.testing.assert_array_equal(Y, onnx_gemm(A, B, None, 0.5, 1.0, 0, 0))
    assert Y[0, 0] == ((5 * 2**30 + 2**31) % 2**32 - 2**31) // 2


def test_int64_nonintegral_beyond_2_53_matches_onnx_reference():
    v = (1 << 60) + 3
    A = np.array([[v, 1], [3, -v]], np.int64)
    B = np.array([[1, 2], [1, 1]], np.int64)
    C = np.array([[v + 1, 5], [7, -v]], np.int64)
    Y = gk.gemm(A, B, C, 0.5, 0.25)
    np.testing.assert_array_equal(Y, onnx_gemm(A, B, C, 0.5, 0.25, 0, 0))


def test_int_float_path_cast_out_of_range_documented():
    """Out-of-range results of the float path: trunc toward zero, then wrap modulo
    2**bits; NaN/inf give 0 (NumPy's own cast is platform- and loop-dependent there)."""
    def cast(x, dt):
        bits = dt.itemsize * 8
        r = int(x) % (1 << bits)
        return r - (1 << bits) if dt.kind == "i" and r >= 1 << (bits - 1) else r
    one = lambda dt, v: np.array([[v]], dt)  # noqa: E731
    cases = [
        (I32, 2**30, 2.5), (I32, 2**30, -2.75), (U32, 3, -0.5), (U32, 2**31, 3.5),
        (I64, 2**62, 2.5), (U64, 5, -1.5), (U64, 2**63 + 2**40, 2.5), (I64, 2**62, -4.5),
    ]
    for dt, a, alpha in cases:
        Y = gk.gemm(one(dt, a), one(dt, 1), None, alpha)
        assert int(Y[0, 0]) == cast(float(a) * alpha, dt), (dt, a, alpha)
    for dt in INTS:
        for alpha in (np.nan, np.inf, -np.inf):
            assert gk.gemm(one(dt, 3), one(dt, 1), None, alpha)[0, 0] == 0
        # inf * 0 = NaN -> 0 as well
        assert gk.gemm(one(dt, 0), one(dt, 1), None, np.inf)[0, 0] == 0


# ----------------------------------------------------------------------------- layouts

@pytest.mark.parametrize("dt", [F32, BF16, F64, I64, U32], ids=str)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_strided_inputs(dt, kind):
    A, B, C = problem(10, 7, 12, dt)
    Y0 = gk.gemm(A, B, C, 2.0, 3.0)
    for ta, tb in ((0, 0), (1, 0), (0, 1)):
        A2, B2 = prime(A, ta).copy(), prime(B, tb).copy()  # A2' == A
        Y = gk.gemm(relayout(A2, kind), relayout(B2, kind), relayout(C, kind), 2.0, 3.0, ta, tb)
        if dt in INTS:
            np.testing.assert_array_equal(Y, Y0)
        else:
            check(relayout(A2, kind), relayout(B2, kind), relayout(C, kind), 2.0, 3.0, ta, tb)
            np.testing.assert_allclose(Y.astype(F64), Y0.astype(F64), rtol=0.02, atol=0.02)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_byte_swapped_operands_are_read_by_value(dt):
    """A, B, C (and a pack_b B) in the other byte order give the native operands' bits,
    as numpy.matmul reads them; the result is native."""
    A, B, C = problem(9, 13, 11, dt)
    Y0 = gk.gemm(A, B, C, 2.0, 3.0)
    sw = lambda x: x.astype(x.dtype.newbyteorder())  # noqa: E731
    assert not sw(A).dtype.isnative or dt.itemsize == 1
    for args in ((sw(A), B, C), (A, sw(B), C), (A, B, sw(C)), (sw(A), sw(B), sw(C)),
                 (sw(A).T.copy().T, sw(B)[::-1][::-1], C)):
        Y = gk.gemm(*args, 2.0, 3.0)
        assert Y.dtype == dt and Y.dtype.isnative
        np.testing.assert_array_equal(Y.view(np.uint8), Y0.view(np.uint8))
    Yt = gk.gemm(sw(A), np.ascontiguousarray(sw(B).T), C, 2.0, 3.0, transB=1)
    np.testing.assert_array_equal(Yt.view(np.uint8), gk.gemm(A, B.T.copy(), C, 2.0, 3.0,
                                                              transB=1).view(np.uint8))
    pk = gk.pack_b(sw(B), "gemm")
    np.testing.assert_array_equal(gk.gemm(A, pk, C, 2.0, 3.0).view(np.uint8),
                                  Y0.view(np.uint8))


@pytest.mark.parametrize("dt", [F32, I32, F16], ids=str)
def test_zero_stride_broadcast_inputs(dt):
    row = rand((1, 9), dt)
    A = np.broadcast_to(row, (6, 9))
    B = np.broadcast_to(rand((9, 1), dt), (9, 5))
    C = np.broadcast_to(rand((1, 5), dt), (6, 5))
    assert A.strides[0] == 0 and B.strides[1] == 0 and C.strides[0] == 0
    check(A, B, C, 2.0, 1.0)
    check(A.T, B.T, C, 2.0, 1.0, 1, 1)


def test_views_with_negative_strides_and_offsets():
    base = rand((20, 30), F32)
    A = base[15:2:-2, 25:5:-3]  # negative strides, offset into base
    B = base[::3, 1:8][:A.shape[1]]
    check(A, B, base[0, :B.shape[1]], 1.0, -1.0)


def test_list_inputs_and_scalar_c():
    Y = gk.gemm([[1.0, 2.0]], [[3.0], [4.0]], 0.5)
    assert Y.dtype == F64 and Y.tolist() == [[11.5]]
    Y = gk.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), np.float32(1.0))
    assert Y.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_integer_dtype_aliases():
    # long and long long are both 64-bit here: one element type, A's dtype is kept
    A = np.arange(6, dtype=np.longlong).reshape(2, 3)
    B = np.arange(6, dtype=np.int64).reshape(3, 2)
    if np.dtype(np.longlong).itemsize == 8:
        Y = gk.gemm(A, B)
        assert Y.dtype == A.dtype
        np.testing.assert_array_equal(Y, A.astype(np.int64) @ B)


def test_output_is_new_and_inputs_untouched():
    A, B, C = problem(4, 4, 4, F32)
    A0, B0, C0 = A.copy(), B.copy(), C.copy()
    Y = gk.gemm(A, B, C)
    assert not np.shares_memory(Y, A) and not np.shares_memory(Y, C)
    assert (A == A0).all() and (B == B0).all() and (C == C0).all()


# ----------------------------------------------------------------------------- broadcast=0

@pytest.mark.parametrize("dt", [F32, I64], ids=str)
def test_broadcast0(dt):
    A, B, C = problem(4, 3, 5, dt)
    check(A, B, C, 2.0, 3.0, broadcast=0)
    check(A, B, None, 2.0, 3.0, broadcast=0)
    for bad in ((3,), (1, 3), (4, 1), (), (1, 1), (1,), (3, 4)):
        with pytest.raises(ValueError, match=r"broadcast=0.*C.*\(4, 3\)"):
            gk.gemm(A, B, rand(bad, dt), broadcast=0)


# ----------------------------------------------------------------------------- bad input

def test_bad_dtypes():
    f = np.ones((2, 2), np.float32)
    for bad in (np.int8, np.uint8, np.int16, np.bool_, np.complex64, np.float128
                if hasattr(np, "float128") else np.complex128, ml_dtypes.float8_e4m3fn, object):
        x = np.ones((2, 2), bad)
        with pytest.raises(TypeError, match=r"A .*dtype"):
            gk.gemm(x, x)
    with pytest.raises(TypeError, match=r"B has dtype float64.*A has dtype float32"):
        gk.gemm(f, f.astype(F64))
    with pytest.raises(TypeError, match=r"C has dtype int32.*A has dtype float32"):
        gk.gemm(f, f, f.astype(I32))
    with pytest.raises(TypeError, match=r"B has dtype uint32.*A has dtype int32"):
        gk.gemm(f.astype(I32), f.astype(U32))
    # an unsupported dtype stays one in the other byte order
    with pytest.raises(TypeError, match=r"A has unsupported dtype >i2"):
        gk.gemm(f.astype(">i2"), f.astype(">i2"))
    with pytest.raises(TypeError, match=r"B has dtype float64.*A has dtype float32"):
        gk.gemm(f.astype(">f4"), f.astype(">f8"))
    with pytest.raises(TypeError, match="alpha"):
        gk.gemm(f, f, alpha="x")
    with pytest.raises(TypeError, match="beta"):
        gk.gemm(f, f, beta=None)


def test_bad_shapes():
    f = lambda *s: np.ones(s, np.float32)  # noqa: E731
    with pytest.raises(ValueError, match=r"A must be 2-D.*\(3,\)"):
        gk.gemm(f(3), f(3, 2))
    with pytest.raises(ValueError, match=r"A must be 2-D.*\(1, 3, 2\)"):
        gk.gemm(f(1, 3, 2), f(2, 2))
    with pytest.raises(ValueError, match=r"B must be 2-D.*\(3,\)"):
        gk.gemm(f(2, 3), f(3))
    with pytest.raises(ValueError, match=r"inner dimensions differ: A has shape \(2, 3\), so "
                       r"A has K=3; B has shape \(4, 5\), so B has K=4 \(transA=0, transB=0\)"):
        gk.gemm(f(2, 3), f(4, 5))
    with pytest.raises(ValueError, match=r"A has shape \(2, 3\), so A\.T has K=2; B has shape "
                       r"\(2, 5\), so B\.T has K=5 \(transA=1, transB=1\)"):
        gk.gemm(f(2, 3), f(2, 5), transA=1, transB=1)
    gk.gemm(f(2, 3), f(5, 2), transA=1, transB=1)  # consistent once transposed
    for bad in ((3,), (2,), (2, 4), (5, 5), (5, 1), (1, 1, 5), (1, 5, 1), (5, 3)):
        with pytest.raises(ValueError, match=r"C of shape .* \(M, N\) = \(3, 5\)"):
            gk.gemm(f(3, 4), f(4, 5), f(*bad))


def test_bad_flags():
    # an integer other than 0/1 is a ValueError; a non-integer (even 1.0) a TypeError
    # (tests/test_gemm_scalars.py has the full table)
    f = np.ones((2, 2), np.float32)
    for name in ("transA", "transB", "broadcast"):
        for v in (2, -1):
            with pytest.raises(ValueError, match=name):
                gk.gemm(f, f, **{name: v})
        for v in ("1", None, 0.5):
            with pytest.raises(TypeError, match=name):
                gk.gemm(f, f, **{name: v})
    np.testing.assert_array_equal(gk.gemm(f, f, transA=True, transB=np.int64(1)), f @ f)


# ----------------------------------------------------------------------------- property

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dt=st.sampled_from(ALL),
    M=st.integers(0, 20), N=st.integers(0, 20), K=st.integers(0, 20),
    ta=st.integers(0, 1), tb=st.integers(0, 1),
    cshape=st.sampled_from(["none", "scalar", "1", "N", "1N", "M1", "11", "MN"]),
    alpha=st.sampled_from([1.0, -2.0, 0.0, 3.0, 0.5]),
    beta=st.sampled_from([1.0, 0.0, -1.0, 2.0, 0.25]),
    la=st.sampled_from(LAYOUTS), lb=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**32 - 1),
)
def test_property(dt, M, N, K, ta, tb, cshape, alpha, beta, la, lb, seed):
    rng = np.random.default_rng(seed)
    A, B, C = problem(M, N, K, dt, ta, tb, cshape, rng)
    if dt in INTS and (alpha != int(alpha) or beta != int(beta)):
        alpha, beta = 2.0, -1.0
    if la != "unaligned" or A.size:
        A = relayout(A, la)
    if lb != "unaligned" or B.size:
        B = relayout(B, lb)
    check(A, B, C, alpha, beta, ta, tb)


# ----------------------------------------------------------------------------- ORT / threads

@pytest.mark.parametrize("dt", [F32, F64], ids=str)
def test_within_bound_and_onnxruntime_where_it_is(dt):
    """gemmkit within the error bound of the float64 oracle; onnxruntime on the same node
    checked against the same bound (never taken as the truth): where it is within it, the
    two are within twice the bound of each other; where not, that is reported (see
    ort_report.py), not failed."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(9)
    for (M, N, K, ta, tb, cs) in ((7, 5, 300, 0, 0, (5,)), (33, 17, 65, 1, 0, (33, 1)),
                                  (64, 64, 64, 0, 1, (64, 64)), (1, 129, 3, 1, 1, ())):
        A, B = rand((K, M) if ta else (M, K), dt, rng), rand((N, K) if tb else (K, N), dt, rng)
        C = rand(cs, dt, rng)
        Y = gk.gemm(A, B, C, 0.5, -2.0, ta, tb)
        ref, bound = float_oracle(A, B, C, 0.5, -2.0, ta, tb)
        assert_float_close(Y, ref, bound)
        try:
            R = ort_report.ort_run("Gemm", [A, B, C], dt, 13, alpha=0.5, beta=-2.0,
                                   transA=ta, transB=tb)
        except Exception as e:  # e.g. no double Gemm kernel in this build
            pytest.skip(f"onnxruntime cannot run Gemm({dt}): {e}")
        if R is None:
            pytest.skip(f"onnxruntime has no Gemm({dt}) kernel")
        ort_report.check_within(f"Gemm {dt} M={M} N={N} K={K} transA={ta} transB={tb}",
                                R, ref, bound, Y)


def test_threads_share_nothing():
    A, B, C = problem(70, 60, 300, F64)
    I, J, L = problem(40, 30, 50, I64)
    ref1, ref2 = gk.gemm(A, B, C), gk.gemm(I, J, L, 3.0)
    errors = []

    def work():
        try:
            for _ in range(5):
                assert np.array_equal(gk.gemm(A, B, C), ref1)
                assert np.array_equal(gk.gemm(I, J, L, 3.0), ref2)
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def block_shapes(f):
    """(M, N, K) problems around a Gemm family's tile and cache blocks (f: its
    _core._gemm_family_info): full and edge tiles, K blocks of depth 1, past MC and NC."""
    mr, nr, mc, kc, nc = f["mr"], f["nr"], f["mc"], f["kc"], f["nc"]
    return [
        (mr, nr, kc),                       # one full tile, one full K block
        (mr - 1, nr + 1, kc - 1),           # edge tiles on both sides
        (mr + 1, nr - 1, kc + 1),           # second K block of depth 1
        (2 * mr + 3, 2 * nr + 5, 2 * kc + 7),
        (mc + mr + 1, nr + 3, 5),           # past MC
        (mc + 1, 2 * nr + 1, kc + 3),       # past MC, K split
        (mr + 1, nc + nr - 1, 9),           # past NC
        (3, nc + 1, kc + 1),                # past NC, K split
    ]


def check_float_gemm(A, B, C=None, alpha=1.0, beta=1.0, ta=0, tb=0):
    """gemm(...) has the right shape, dtype and layout and is within the float bound of
    the float64 oracle (assert_float_close); returns Y."""
    import gemmkit as gk
    Y = gk.gemm(A, B, C, alpha, beta, ta, tb)
    M = (A.T if ta else A).shape[0]
    N = (B.T if tb else B).shape[1]
    assert Y.shape == (M, N) and Y.dtype == A.dtype and Y.flags.c_contiguous
    assert_float_close(Y, *float_oracle(A, B, C, alpha, beta, ta, tb))
    return Y
