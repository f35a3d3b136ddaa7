"""Batched MatMulInteger / QLinearMatMul against the oracles, on every int8 kernel path.

The batch loop is the C driver's (gk_qgemm_driver.c).  It coalesces the batch dims, then
takes one of three routes, and each test below says which one its cases reach:

* fold: B, its zero point and scale shared (batch stride 0) and the output's rows
  continuing from matrix to matrix -> ONE product of batch * M rows, whose row-side
  zero points / scales (a's, y's rows) are read per matrix.  Where A's rows do not
  continue, its matrices are packed one by one into the folded panels (M a multiple of
  the kernel's mr) or gathered into one block first (small);
* cache: any other batch whose innermost dim shares B -> matrix by matrix, B packed once
  into a cache that is repacked whenever B moves;
* plain: matrix by matrix, each packing its own B (B varies along the innermost dim,
  deep K, or small-M matrices that never pack).

QLinearMatMul with float8 anywhere loops over the batch in gk_qlinear_run.
"""
from __future__ import annotations

import numpy as np
import pytest

import oracles as o
from strategies import rand_extreme

U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
SIGNS = [(U8, S8), (S8, U8), (U8, U8), (S8, S8)]
SIGN_IDS = ["u8s8", "s8u8", "u8u8", "s8s8"]


def _gk():
    import gemmkit
    return gemmkit


def _rand(rng, shape, dt):
    """Half uniform, half the range's ends (A=255 / B=-128 everywhere included)."""
    dt = np.dtype(dt)
    if rng.integers(2):
        return rand_extreme(rng, shape, dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dt)


def _assert_same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        idx = tuple(bad[0])
        raise AssertionError(f"{len(bad)} of {want.size} elements differ; first at {idx}: "
                             f"got {got[idx]}, expected {want[idx]}")


def _check_mi(a, b, azp=None, bzp=None):
    _assert_same(_gk().matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp))


def _check_ql(a, sa, azp, b, sb, bzp, sy, yzp):
    got = _gk().qlinear_matmul(a, sa, azp, b, sb, bzp, sy, yzp)
    o.check_qlinear(got, a, sa, azp, b, sb, bzp, sy, yzp)


def _scales(rng, shape):
    return rng.uniform(0.5, 2.0, size=shape).astype(np.float32)


# (batch, M, K, N).  Folded row counts batch * M fall on both sides of every path's
# small-M limit (4 scalar, 16 x86) and, at K = 64, past the A block of 4096 rows, so
# packed A blocks start in the middle of a matrix.
FOLD_SHAPES = [(2, 1, 5, 3), (3, 5, 17, 33), (7, 8, 64, 128), (40, 130, 64, 17),
               (64, 1, 129, 65), (5, 3, 300, 1)]


def _a_zp(mode, rng, dt, nb, m):
    return {"none": None, "tensor": _rand(rng, (), dt), "row": _rand(rng, (m,), dt),
            "batchrow": _rand(rng, (nb, m, 1), dt), "batch": _rand(rng, (nb, 1, 1), dt)}[mode]


def _b_zp(mode, rng, dt, n):
    return {"none": None, "tensor": _rand(rng, (1,), dt), "col": _rand(rng, (n,), dt),
            "col2d": _rand(rng, (1, n), dt)}[mode]


@pytest.mark.parametrize("shape", FOLD_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("signs", SIGNS, ids=SIGN_IDS)
def test_fold_matmul_integer(isa, shape, signs):
    """fold: contiguous A (batch, M, K) @ shared B (K, N) / (1, K, N), every a zero point
    layout (per-tensor, per-row shared, per-row per matrix, per matrix) with every b one."""
    nb, m, k, n = shape
    ta, tb = signs
    rng = np.random.default_rng(nb * 1000 + m * 10 + k)
    a = _rand(rng, (nb, m, k), ta)
    b = _rand(rng, (k, n), tb)
    for amode in ("none", "tensor", "row", "batchrow", "batch"):
        for bmode in ("none", "tensor", "col", "col2d"):
            azp, bzp = _a_zp(amode, rng, ta, nb, m), _b_zp(bmode, rng, tb, n)
            _check_mi(a, b, azp, bzp)
    _check_mi(a, b[None], _a_zp("batchrow", rng, ta, nb, m), _b_zp("col", rng, tb, n))


@pytest.mark.parametrize("shape", FOLD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fold_qlinear_matmul(isa, shape):
    """fold with requantization: a scale/zero point per tensor, per row or per row per
    matrix; b per column; y per tensor, per row, per row per matrix, per column, or a
    full [batch, M, N] grid (the multiplier grid then varies by row and column)."""
    nb, m, k, n = shape
    rng = np.random.default_rng(7 * nb + m + k)
    a = _rand(rng, (nb, m, k), U8)
    b = _rand(rng, (k, n), S8)
    bzp = _rand(rng, (n,), S8)
    sb = _scales(rng, (n,)) / 64
    a_layouts = [(), (m,), (nb, m, 1), (nb, 1, 1)]
    y_layouts = [(), (m,), (nb, m, 1), (1, n), (nb, m, n), (nb, 1, n)]
    for i, ash in enumerate(a_layouts):
        azp = _rand(rng, ash, U8)
        sa = _scales(rng, ash) / 64
        for ysh in (y_layouts[i], y_layouts[i + 2]):
            sy = _scales(rng, ysh) * np.float32(k / 256)
            for ydt in (U8, S8):
                yzp = _rand(rng, ysh, ydt)
                _check_ql(a, sa, azp, b, sb, bzp, sy, yzp)


@pytest.mark.parametrize("signs", SIGNS[:2], ids=SIGN_IDS[:2])
def test_fold_layouts(isa, signs):
    """Foldable layouts that are not plain C order: rows padded (A cut from a wider
    array), one row per matrix at any batch stride (including 0: A broadcast over the
    batch), N = 1 (1-D B), and several batch dims that coalesce into one."""
    ta, tb = signs
    rng = np.random.default_rng(3)
    k, n = 37, 19
    wide = _rand(rng, (6, 9, k + 11), ta)
    b = _rand(rng, (k, n), tb)
    bzp = _rand(rng, (n,), tb)
    _check_mi(wide[:, :, :k], b, _rand(rng, (6, 9, 1), ta), bzp)          # a_rs = k + 11
    _check_mi(wide[:, :1, :k], b, _rand(rng, (6, 1, 1), ta), bzp)         # M = 1, padded
    _check_mi(wide[:, 2, None, 5:5 + k], b, None, bzp)
    _check_mi(np.broadcast_to(wide[0, :1, :k], (6, 1, k)), b, None, bzp)   # batch stride 0
    _check_mi(wide[:, :, :k], b[:, 3])                                     # 1-D B, N = 1
    a4 = _rand(rng, (2, 3, 4, 5, k), ta)
    _check_mi(a4, b, _rand(rng, (2, 3, 4, 5, 1), ta), bzp)                 # coalesces to 24
    _check_mi(a4, b[None, None], _rand(rng, (5,), ta), bzp)


def _transposed(x):
    """Each matrix of x laid out column-major (same values)."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)


@pytest.mark.parametrize("signs", SIGNS, ids=SIGN_IDS)
def test_shared_b_not_foldable(isa, signs):
    """cache: B shared, but A's rows do not continue from matrix to matrix (column-major
    matrices, reversed batch, reversed rows, every other matrix) or b's zero point / scale
    moves with the batch.  M above every small-M limit, so B is packed and reused."""
    ta, tb = signs
    rng = np.random.default_rng(11)
    nb, m, k, n = 5, 21, 70, 45
    a = _rand(rng, (2 * nb, m, k), ta)
    b = _rand(rng, (k, n), tb)
    azp = _rand(rng, (2 * nb, m, 1), ta)
    bzp = _rand(rng, (n,), tb)
    for view, zp in ((_transposed(a), azp), (a[::-1], azp[::-1]), (a[:, ::-1], azp),
                     (a[::2], azp[::2])):
        _check_mi(view, b, zp, bzp)
    _check_mi(a[:, :, ::-1], b, None, bzp)   # reversed columns: rows still continue (fold)
    _check_mi(a, b, azp, _rand(rng, (2 * nb, 1, n), tb))                   # b zp per matrix
    # B shared along the inner dim, moving along the outer one: the cache is repacked
    a4 = _rand(rng, (3, 4, m, k), ta)
    _check_mi(_transposed(a4), _rand(rng, (3, 1, k, n), tb), None, bzp)
    sa, sb = _scales(rng, (2 * nb, 1, 1)) / 64, _scales(rng, (2 * nb, 1, n)) / 64
    yzp = np.array(7, dtype=ta)
    _check_ql(a, sa, azp[:, :1], b, sb, _rand(rng, (2 * nb, 1, n), tb), np.float32(k / 64),
              yzp)


@pytest.mark.parametrize("m", [4, 8, 16, 24, 21])
def test_fold_rows_apart(isa, m):
    """fold of A whose rows do not continue: packed matrix by matrix where M is a
    multiple of mr (4 on most paths, 8 on avx512vnni), else gathered (contiguous rows,
    strided rows, column-major); row counts past the packed A block at K = 64."""
    rng = np.random.default_rng(m)
    k, n = 64, 40
    for nb in (5, 4200 // m):
        big = _rand(rng, (2 * nb, m, 2 * k), U8)
        b = _rand(rng, (k, n), S8)
        azp = _rand(rng, (2 * nb, m, 1), U8)
        bzp = _rand(rng, (n,), S8)
        a = big[::2, :, :k]
        for view, zp in ((_transposed(a), azp[::2]), (a[::-1], azp[::2][::-1]),
                         (a[:, ::-1], azp[1::2]), (big[::2, :, ::2], azp[::2])):
            _check_mi(view, b, zp, bzp)
        sa = _scales(rng, (nb, m, 1)) / 64
        _check_ql(_transposed(a), sa, azp[::2], b, _scales(rng, (n,)) / 64, bzp,
                  _scales(rng, (nb, 1, n)), _rand(rng, (nb, 1, n), U8))


def test_shared_b_cache_spans_column_blocks(isa):
    """cache with B wider than one packed column block (~1 MB packed: at K = 2048 a few
    hundred columns), so matrices read the cached panels block by block (b's zero point
    moves with the batch: no fold); then the same B folded."""
    rng = np.random.default_rng(5)
    k, n, m, nb = 2048, 600, 20, 3
    a = _transposed(_rand(rng, (nb, m, k), U8))
    b = _rand(rng, (k, n), S8)
    _check_mi(a, b, _rand(rng, (nb, m, 1), U8), _rand(rng, (nb, 1, n), S8))
    _check_mi(a, b, None, _rand(rng, (n,), S8))


@pytest.mark.parametrize("signs", SIGNS[:2], ids=SIGN_IDS[:2])
def test_b_varies(isa, signs):
    """plain: B moves with the batch (A broadcast against a batched B, both batched, a
    1-D A), and per-matrix zero points and scales on both sides."""
    ta, tb = signs
    rng = np.random.default_rng(13)
    nb, m, k, n = 4, 9, 33, 20
    a2 = _rand(rng, (m, k), ta)
    b3 = _rand(rng, (nb, k, n), tb)
    azp, bzp = _rand(rng, (nb, m, 1), ta), _rand(rng, (nb, 1, n), tb)
    _check_mi(a2, b3, azp, bzp)
    _check_mi(_rand(rng, (nb, m, k), ta), b3, azp, bzp)
    _check_mi(_rand(rng, (k,), ta), b3, None, bzp)
    _check_mi(_rand(rng, (2, 1, m, k), ta), b3[:, ::-1], azp, bzp)       # (2, 4) batch
    sa, sb = _scales(rng, (nb, m, 1)) / 64, _scales(rng, (nb, 1, n)) / 64
    sy, yzp = _scales(rng, (nb, 1, 1)) * 2, _rand(rng, (nb, 1, 1), S8)
    _check_ql(a2, sa, azp, b3, sb, bzp, sy, yzp)


@pytest.mark.parametrize("ashape,bshape", [
    ((0, 5, 8), (8, 3)), ((2, 0, 5, 8), (8, 3)), ((1, 5, 8), (0, 8, 3)),
    ((1, 1, 5, 8), (8, 3)), ((1, 4, 1, 5, 8), (1, 8, 3)), ((4, 1, 5, 8), (1, 1, 8, 3)),
    ((1, 5, 8), (1, 8, 3)), ((3, 0, 8), (8, 3)), ((3, 5, 8), (8, 0)), ((3, 5, 0), (0, 4)),
])
def test_batch_dims_with_zeros_and_ones(isa, ashape, bshape):
    """Empty batches (nothing to run), size-1 dims (dropped before folding), K = 0."""
    rng = np.random.default_rng(17)
    a, b = _rand(rng, ashape, U8), _rand(rng, bshape, S8)
    _check_mi(a, b, np.uint8(3), np.int8(-5))
    _check_ql(a, np.float32(0.5), np.uint8(3), b, np.float32(0.25), np.int8(-5),
              np.float32(3.0), np.uint8(100))


def test_high_rank(isa):
    """Up to NumPy's 64 dims: size-1 dims inserted among size-2 batch dims, A strided
    along one and B broadcast along others, so the dims coalesce only in part.  (The
    oracle runs on the same problem without the size-1 dims: np.broadcast_shapes stops
    at 32.)"""
    rng = np.random.default_rng(19)
    m, k, n = 3, 11, 5
    a_lo = _rand(rng, (2, 2, 2, 4, m, k), U8)[:, :, :, ::2]        # (2, 2, 2, 2, m, k)
    b_lo = _rand(rng, (2, 1, 2, 1, k, n), S8)
    azp_lo = _rand(rng, (1, 2, 2, 2, m, 1), U8)
    bzp = _rand(rng, (n,), S8)
    ones = (0, 2, 3) + tuple(range(5, 58))                            # 56 inserted dims
    up = lambda x: np.expand_dims(x, ones)  # noqa: E731  (a view: no copy)
    a, b, azp = up(a_lo), up(b_lo), up(azp_lo)
    assert a.ndim == 62 and not a.flags.c_contiguous
    want = o.matmul_integer(a_lo, b_lo, azp_lo, bzp)
    got = _gk().matmul_integer(a, b, azp, bzp)
    assert got.shape == np.expand_dims(want, ones).shape
    _assert_same(got.reshape(want.shape), want)
    a64 = _rand(rng, (1,) * 30 + (2,) + (1,) * 31 + (m, k), U8)
    b2 = _rand(rng, (k, n), S8)
    want = o.matmul_integer(a64.reshape(2, m, k), b2)
    _assert_same(_gk().matmul_integer(a64, b2).reshape(want.shape), want)
    args = (np.float32(0.1), np.uint8(1), b2, np.float32(0.2), np.int8(0), np.float32(0.5),
            np.int8(3))
    want, _ = o.qlinear_matmul(a64.reshape(2, m, k), *args)
    _assert_same(_gk().qlinear_matmul(a64, *args).reshape(want.shape), want)


def test_deep_k_batches(isa):
    """K just past the driver's depth chunk with a batch of 2 (never folded: each matrix
    runs chunk by chunk), with a shared and a batched B, and requantization."""
    from gemmkit import _core
    k = int(_core._QGEMM_KCHUNK) + 3
    rng = np.random.default_rng(23)
    m, n = 2, 3
    a = _rand(rng, (2, m, k), U8)
    b = _rand(rng, (k, n), S8)
    azp, bzp = _rand(rng, (2, m, 1), U8), _rand(rng, (n,), S8)
    _check_mi(a, b, azp, bzp)
    _check_mi(a[:, :1], b[:, :1])
    b3 = _rand(rng, (2, k, n), S8)
    _check_mi(a, b3, azp, _rand(rng, (2, 1, n), S8))
    sa = np.full((2, m, 1), 2.0 ** -8, np.float32)
    sb = rng.uniform(0.5, 1, (n,)).astype(np.float32)
    _check_ql(a, sa, azp, b, sb, bzp, np.float32(2.0 ** -4), np.int8(-3))


F8 = [np.dtype(t) for t in o.FLOAT8_TYPES]


@pytest.mark.parametrize("route", ["f8_a", "f8_b", "f8_y", "f8_all"])
def test_qlinear_float8_batches(isa, route):
    """Float8 routes, looped over the batch in gk_qlinear_run: float8 a or b (dequantize,
    float32 accumulation) and int8 inputs with a float8 output, with a shared B, a
    batched B, a broadcast A and per-matrix scales / zero points."""
    rng = np.random.default_rng({"f8_a": 1, "f8_b": 2, "f8_y": 3, "f8_all": 4}[route])
    nb, m, k, n = 3, 4, 19, 6
    f8 = F8[{"f8_a": 0, "f8_b": 2, "f8_y": 1, "f8_all": 3}[route]]

    def operand(shape, is_f8, int_dt):
        if is_f8:
            return o.f8_from_float(rng.uniform(-4, 4, size=shape), f8)
        return _rand(rng, shape, int_dt)

    def zp(shape, is_f8, int_dt):
        if is_f8:
            return o.f8_from_float(rng.integers(-2, 3, size=shape).astype(np.float64), f8)
        return _rand(rng, shape, int_dt)

    fa, fb = route in ("f8_a", "f8_all"), route in ("f8_b", "f8_all")
    fy = route in ("f8_y", "f8_all")
    for ashape, bshape, per_matrix in (((nb, m, k), (k, n), False),
                                       ((nb, m, k), (nb, k, n), True),
                                       ((m, k), (2, nb, k, n), True),
                                       ((2, 1, m, k), (nb, k, n), False)):
        a, b = operand(ashape, fa, U8), operand(bshape, fb, S8)
        lead = np.broadcast_shapes(ashape[:-2], bshape[:-2])
        azsh = lead + (m, 1) if per_matrix else (m,)
        bzsh = lead + (1, n) if per_matrix else (n,)
        ysh = lead + (1, 1) if per_matrix else ()
        azp, bzp, yzp = zp(azsh, fa, U8), zp(bzsh, fb, S8), zp(ysh, fy, S8)
        sa, sb = _scales(rng, azsh) / 8, _scales(rng, bzsh) / 8
        sy = _scales(rng, ysh) * np.float32(0.5)
        _check_ql(a, sa, azp, b, sb, bzp, sy, yzp)


def test_fold_declined_for_a_huge_multiplier_grid(isa):
    """Multipliers varying by row (a scale per row per matrix) and by column (b scale
    per column) over more than 2**22 folded outputs: run matrix by matrix instead."""
    rng = np.random.default_rng(31)
    nb, m, k, n = 20, 512, 3, 420
    a = _rand(rng, (nb, m, k), U8)
    b = _rand(rng, (k, n), S8)
    sa = _scales(rng, (nb, m, 1)) / 64
    sb = _scales(rng, (n,)) / 64
    _check_ql(a, sa, _rand(rng, (nb, m, 1), U8), b, sb, _rand(rng, (n,), S8),
              np.float32(0.75), np.uint8(128))


def test_batched_equals_its_matrices(isa):
    """Every route gives each matrix exactly what the 2-D call on that matrix gives."""
    gk = _gk()
    rng = np.random.default_rng(29)
    nb, m, k, n = 6, 10, 45, 33
    a = _rand(rng, (nb, m, k), S8)
    b = _rand(rng, (k, n), U8)
    bzp = _rand(rng, (n,), U8)
    for view in (a, _transposed(a)):
        y = gk.matmul_integer(view, b, None, bzp)
        for t in range(nb):
            _assert_same(y[t], gk.matmul_integer(view[t], b, None, bzp))
