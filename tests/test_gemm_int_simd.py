"""The integer Gemm families (int32, uint32, int64, uint64) on every path (the ``isa``
fixture forces each usable ISA level), bit for bit against exact oracles:

* ``wrap_oracle``: NumPy in the unsigned type of the same width -- its integer matmul,
  products and sums wrap modulo 2**bits, which is exactly the contract (signed and
  unsigned share the bits); cross-checked against the Python-int oracle of test_gemm;
* the scalar family (GEMMKIT_ISA=scalar), the project's oracle, for the non-integral
  alpha/beta "float path" (float64 math, then the defined cast).

Shapes come from each path's own block sizes (runtime cache blocks included): K around
KC, M past MC, N past NC, every row and column tail of the register tile, edges 1..17.
"""
import numpy as np
import pytest

import gemmkit as gk
from gemmkit import _core
from test_gemm import block_shapes, int_oracle, problem, relayout

I32, U32, I64, U64 = (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
INTS = [I32, U32, I64, U64]
UNSIGNED = {I32: U32, U32: U32, I64: U64, U64: U64}


def _fam(dt):
    return _core._gemm_family_info(dt)


def wrap_oracle(A, B, C, alpha, beta, ta=0, tb=0):
    """Y = alpha*A'B' + beta*C modulo 2**bits, alpha/beta integers (any size)."""
    dt = A.dtype
    u = UNSIGNED[dt]
    bits = 8 * dt.itemsize
    mask = (1 << bits) - 1
    a = (A.T if ta else A).astype(u)  # astype of a signed array keeps the bits
    b = (B.T if tb else B).astype(u)
    M, N = a.shape[0], b.shape[1]
    with np.errstate(over="ignore"):
        acc = a @ b if a.shape[1] else np.zeros((M, N), u)
        y = acc * u.type(int(alpha) & mask)
        if C is not None and beta != 0:
            y = y + np.broadcast_to(np.asarray(C).astype(u), (M, N)) * u.type(int(beta) & mask)
    return np.ascontiguousarray(y).view(dt).reshape(M, N)


def scalar_ref(*args):
    """The scalar family's result (the oracle path), then back to the current level."""
    cur = gk.cpu_info()["isa"]
    _core._set_isa("scalar")
    try:
        return gk.gemm(*args)
    finally:
        _core._set_isa(cur)


def check(A, B, C=None, alpha=1, beta=1, ta=0, tb=0):
    Y = gk.gemm(A, B, C, alpha, beta, ta, tb)
    M = (A.T if ta else A).shape[0]
    N = (B.T if tb else B).shape[1]
    assert Y.shape == (M, N) and Y.dtype == A.dtype and Y.flags.c_contiguous
    R = wrap_oracle(A, B, C, alpha, beta, ta, tb)
    bad = Y != R
    assert not bad.any(), (f"{bad.sum()} of {bad.size} differ at {np.argwhere(bad)[:3]}: "
                           f"got {Y[bad][:3]} want {R[bad][:3]}")
    return Y


def test_wrap_oracle_is_the_python_int_oracle():
    rng = np.random.default_rng(1)
    for dt in INTS:
        for cshape, alpha, beta in (("MN", 3, -5), ("M1", 2**64 - 1, -(2**63)), ("none", 1, 1),
                                    ("N", -1, 2**32 + 7)):
            A, B, C = problem(7, 9, 11, dt, 0, 1, cshape, rng)
            np.testing.assert_array_equal(wrap_oracle(A, B, C, alpha, beta, 0, 1),
                                          int_oracle(A, B, C, alpha, beta, 0, 1))


def test_family_per_level(isa):
    """The most specific integer family at or below the level runs, one per width serving
    the signed and the unsigned type."""
    levels = _core._levels()
    for dt in INTS:
        f = _fam(dt)
        assert levels.index(f["isa"]) <= levels.index(isa)
        if isa in ("avx2", "avxvnni"):
            assert f["isa"] == "avx2", (isa, f)
        elif isa in ("avx512", "avx512vnni", "amx"):
            assert f["isa"] == "avx512", (isa, f)
        assert f["mc"] % f["mr"] == 0 and f["nc"] % f["nr"] == 0 and f["kc"] >= 1
    assert _fam(I32) == _fam(U32) and _fam(I64) == _fam(U64)


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_edges_1_to_17(isa, dt):
    rng = np.random.default_rng(7)
    for m in range(1, 18):
        for n in (1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33):
            k = (m * 7 + n) % 19 + 1
            A, B, C = problem(m, n, k, dt, 0, 0, "MN", rng)
            check(A, B, C, 3, -7)


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_every_tile_tail(isa, dt):
    """Every row count and every column count of an edge tile (mr_valid 1..mr,
    nr_valid 1..nr), K across a block boundary."""
    rng = np.random.default_rng(8)
    f = _fam(dt)
    mr, nr, kc = f["mr"], f["nr"], f["kc"]
    for t in range(1, mr + 1):
        A, B, C = problem(mr + t, nr + (t * 5) % nr + 1, 3, dt, 0, 0, "MN", rng)
        check(A, B, C, 5, 3)
    for u in range(1, nr + 1):
        A, B, C = problem(mr + u % mr + 1, 2 * nr + u, 2 if u % 2 else kc + 2, dt, 0, 0, "N", rng)
        check(A, B, C, -1, 1)


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_shapes_around_blocks(isa, dt):
    rng = np.random.default_rng(11)
    for i, (M, N, K) in enumerate(block_shapes(_fam(dt))):
        ta, tb = i % 2, (i // 2) % 2
        A, B, C = problem(M, N, K, dt, ta, tb, ["M1", "N", "MN", "scalar"][i % 4], rng)
        check(A, B, C, 7, -3, ta, tb)
        check(A, B, None, 1, 1, ta, tb)  # identity epilogue (skipped)


def _c_views(C, cshape):
    """C as given and, where it has a row, in the epilogue's other C loops: column-strided
    (sliced, transposed), negative strides, unaligned (byte strides)."""
    out = [C]
    if cshape == "MN":
        out += [relayout(C, k) for k in ("f", "slice", "neg", "unaligned")]
    elif cshape in ("N", "1N"):
        out += [relayout(C.reshape(1, -1), k).reshape(C.shape) for k in ("slice", "neg", "unaligned")]
    return out


ALPHA_BETA = [(1, 1), (5, -7), (0, 3), (2, 0), (-1, -1),
              (2**64 - 1, 2**63), (2**32 - 1, 2**31), (-(2**63), 2**64 - 1), (2**40 + 3, 1)]


@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("cshape", ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"])
def test_c_forms_alpha_beta(isa, dt, cshape):
    """Every broadcast form and layout of C, alpha/beta exact integers up to 2**64 - 1
    (reduced modulo 2**bits), beta 0 (C never read), over edge tiles and two K blocks."""
    rng = np.random.default_rng(3)
    f = _fam(dt)
    for (M, N, K) in [(f["mr"] + 3, 2 * f["nr"] + 5, f["kc"] + 2), (37, 45, 29)]:
        A, B, C = problem(M, N, K, dt, 1, 0, cshape, rng)
        for Cv in ([None] if C is None else _c_views(C, cshape)):
            for alpha, beta in ALPHA_BETA:
                check(A, B, Cv, alpha, beta, 1, 0)


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_integral_float_alpha_beta_are_exact(isa, dt):
    """Integral doubles (2.0, -3.0, 2.0**63) take the exact path: their exact value
    modulo 2**bits."""
    rng = np.random.default_rng(4)
    A, B, C = problem(19, 40, 33, dt, 0, 0, "MN", rng)
    for alpha, beta in ((2.0, -3.0), (2.0**63, 1.0), (-(2.0**40), 2.0**33)):
        Y = gk.gemm(A, B, C, alpha, beta)
        np.testing.assert_array_equal(Y, wrap_oracle(A, B, C, int(alpha), int(beta)))


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_extreme_values_wrap(isa, dt):
    """INT_MIN / INT_MAX / UINT_MAX everywhere: every product and partial sum wraps; K
    over several blocks; checked against Python ints too."""
    info = np.iinfo(dt)
    f = _fam(dt)
    rng = np.random.default_rng(24)
    M, N, K = f["mr"] + 2, f["nr"] + 3, 2 * f["kc"] + 5
    for lo, hi in ((info.max, info.max), (info.min, info.min), (info.min, info.max),
                   (-1 if info.min else info.max, 1)):
        A = rng.choice(np.array([lo, hi], dt), size=(M, K))
        B = rng.choice(np.array([hi, lo], dt), size=(K, N))
        C = np.full((M, N), info.max, dt)
        for alpha, beta in ((1, 1), (int(info.max), int(info.min)), (2**64 - 1, -(2**63))):
            Y = check(A, B, C, alpha, beta)
            if alpha != 1:
                continue
            small = (slice(0, 4), slice(0, 5))
            np.testing.assert_array_equal(
                Y[small], int_oracle(A[small[0]], B[:, small[1]], C[small], alpha, beta, 0, 0))


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_float_path_equals_scalar(isa, dt):
    """Non-integral alpha/beta (the onnx reference's float path) keep the generic
    epilogue: the scalar family's result bit for bit, every C form."""
    rng = np.random.default_rng(5)
    f = _fam(dt)
    M, N, K = f["mr"] + 1, f["nr"] + 7, f["kc"] + 1
    for cshape in ("none", "MN", "M1", "N"):
        A, B, C = problem(M, N, K, dt, 0, 1, cshape, rng)
        for alpha, beta in ((0.5, 1.0), (1.0, 0.25), (-2.75, 1e-3), (1e-30, 3.5)):
            Y = gk.gemm(A, B, C, alpha, beta, 0, 1)
            np.testing.assert_array_equal(Y, scalar_ref(A, B, C, alpha, beta, 0, 1))


LAYOUTS = ["c", "f", "neg", "slice", "offset", "readonly", "unaligned"]


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_strided_inputs_and_small_calls(isa, dt):
    """A and B in every layout, transposed or not; small calls (below
    GK_GEMM_SMALL_FLOPS: B' read in place when contiguous) and packed ones."""
    rng = np.random.default_rng(6)
    nr = _fam(dt)["nr"]
    for (M, N, K) in [(13, 3 * nr + 5, 40), (1, nr, 1), (64, 64, 64), (130, 70, 150)]:
        for ta, tb in ((0, 0), (1, 1), (0, 1), (1, 0)):
            A, B, C = problem(M, N, K, dt, ta, tb, "N", rng)
            for la, lb in zip(LAYOUTS, LAYOUTS[2:] + LAYOUTS[:2]):
                check(relayout(A, la), relayout(B, lb), C, 3, 2, ta, tb)
        A, B, _ = problem(M, N, K, dt, 0, 0, "none", rng)
        Bw = np.zeros((K, N + 3), dt)
        Bw[:, :N] = B
        check(A, Bw[:, :N])          # row stride != N
        check(A, B[::-1])            # negative row stride


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_first_block_never_reads_y(isa, dt):
    """Freed memory full of a pattern must not leak into Y on any path."""
    rng = np.random.default_rng(13)
    f = _fam(dt)
    for (M, N, K) in [(64, 64, 64), (f["mr"] * 3 + 1, f["nr"] * 2 + 3, f["kc"] + 5), (5, 7, 0)]:
        junk = [np.full((M, N), 0x5A5A5A5A, dt) for _ in range(4)]
        del junk
        A, B, C = problem(M, N, K, dt, 0, 0, "MN", rng)
        check(A, B, None)
        check(A, B, C, 2, 3)
