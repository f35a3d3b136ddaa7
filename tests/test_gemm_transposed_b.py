"""Gemm with B' stored column by column (transB = 1: a weight W of shape [N, K], the
layout every fully connected layer exported to ONNX has) and thin A (M <= 32), on every
path (the ``isa`` fixture) and every element type.

Such a B' has no in-place kernel; the driver packs one micro-panel of it at a time into
a buffer that stays in L1 (gk_gemm_driver.c, run_thin_bt: K blocks of
GK_GEMM_THIN_T_KC = 64 or the family's own, the last one of an A block up to twice that
deep, A in blocks of about half of L2).  Every output's sum still runs in increasing k
with the family's own operations, so the result is bit for bit the one of the same
product with B' stored row by row (which takes the in-place or the thin packed path) --
the layout of B' never changes Gemm's bits -- and it is within the float bound of the
float64 oracle (integers: exact).  Shapes cross the K blocks (64, or with W larger than
the last-level cache the family's own, 256 for the avx512 32-bit families: both forced,
KT - 1 .. KT + 1, 2 KT +- 1, 3 KT), several A blocks (K from the reported L2 size),
every column tail of the tile and row counts around the tile's rows; W with a negative
row stride and with rows wider than K; 1 and 2 threads.  The size rules are off, so the
bfloat16 AMX family runs thin products too.
"""
import ml_dtypes
import numpy as np
import pytest

import gemmkit as gk
from gemmkit import _core
from test_gemm import check_float_gemm, int_oracle, problem

F16, BF16, F32, F64 = (np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32,
                                             np.float64))
I32, U32, I64, U64 = (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
ALL = [F16, BF16, F32, F64, I32, U32, I64, U64]
THIN_ROWS, THIN_PANELS = 32, 6  # GK_GEMM_THIN_ROWS, GK_GEMM_THIN_MAX_PANELS


@pytest.fixture(autouse=True)
def _every_family_on_every_shape():
    prev = _core._gemm_size_rules(False)
    try:
        yield
    finally:
        _core._gemm_size_rules(prev)


@pytest.fixture(autouse=True, params=["cached", "from_memory"])
def w_where(request):
    """W as cached (K blocks of GK_GEMM_THIN_T_KC) and as larger than the last-level cache
    (the family's kc_thin_t, forced here on small W)."""
    prev = _core._gemm_memory_bytes(1 if request.param == "from_memory" else 0)
    yield request.param
    _core._gemm_memory_bytes(prev)


def _kt(f, w_where):
    """The K block the family packs W in, as `w_where` has it."""
    return f["kc_thin_t_memory"] if w_where == "from_memory" else f["kc_thin_t"]


def _check(A, W, C, alpha, beta):
    """gemm(A, W, transB=1) equals gemm(A, W.T as a row-major B) bit for bit and the
    oracle (exact for integers, the float bound otherwise); on 1 and 2 threads."""
    Bt = np.ascontiguousarray(W.T)
    ref = gk.gemm(A, Bt, C, alpha, beta)
    for nt in (1, 2):
        with gk.threads(nt):
            Y = gk.gemm(A, W, C, alpha, beta, transB=1)
        assert Y.dtype == ref.dtype and Y.shape == ref.shape
        assert np.array_equal(Y.view(f"u{Y.itemsize}"), ref.view(f"u{ref.itemsize}")), \
            (A.shape, W.shape, W.strides, nt)
    if A.dtype.kind in "iu":
        np.testing.assert_array_equal(Y, int_oracle(A, W, C, alpha, beta, 0, 1))
    else:
        check_float_gemm(A, W, C, alpha, beta, 0, 1)


def _rows(mr):
    return sorted({m for m in (1, 2, 3, mr - 1, mr, mr + 1, 2 * mr + 1, THIN_ROWS)
                   if 1 <= m <= THIN_ROWS and -(-m // mr) <= THIN_PANELS})


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_across_k_blocks_and_tails(isa, dt, w_where):
    f = _core._gemm_family_info(dt)
    mr, nr, KT = f["mr"], f["nr"], _kt(f, w_where)
    rng = np.random.default_rng(23)
    depths = [1, 7, KT - 1, KT, KT + 1, 2 * KT - 1, 2 * KT, 2 * KT + 1, 3 * KT - 1, 3 * KT, 300]
    widths = [1, nr - 1, nr, nr + 1, 3 * nr + 5]
    for i, M in enumerate(_rows(mr)):
        for j, K in enumerate(depths):
            N = widths[(i + j) % len(widths)]
            cshape = ["none", "N", "MN", "M1", "scalar"][(i + 2 * j) % 5]
            A, W, C = problem(M, N, K, dt, 0, 1, cshape, rng)
            alpha = 1.0 if cshape == "none" else (3.0 if dt.kind in "iu" else 0.75)
            _check(A, W, C, alpha, -2.0)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_several_a_blocks(isa, dt, w_where):
    """K deep enough that A is packed in several blocks (the float16/bfloat16 sums then
    wait in a workspace of every column between blocks)."""
    f = _core._gemm_family_info(dt)
    mr, nr, KT = f["mr"], f["nr"], _kt(f, w_where)
    esz = 8 if dt.itemsize == 8 else 4
    l2 = gk.cpu_info()["caches"]["l2"] or (1 << 20)
    rng = np.random.default_rng(29)
    for M in (1, min(THIN_ROWS, 2 * mr + 1)):
        panels = -(-M // mr)
        kb = max(KT, l2 // 2 // (panels * mr * esz) // KT * KT)
        for K in (kb + KT + 5, 2 * kb + 3):
            A, W, C = problem(M, 2 * nr + 3, K, dt, 0, 1, "N", rng)
            _check(A, W, C, 5.0 if dt.kind in "iu" else 0.5, 2.0)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_grouped_tiles(isa, dt, w_where):
    """1..3 rows against W of many column tiles.  A family with thin_t_tiles (the x86 FMA
    families on float32 panels -- float32, float16, bfloat16 widening -- and avx2
    float64) packs that many full tiles together and runs them as one strip where W fits
    half the last-level cache ("cached" here; "from_memory" runs them tile by tile):
    whole groups, a partial last group, a column tail, across K blocks and A blocks (the
    16-bit outputs' sums then wait in a workspace of every column).  The bits are those
    of tile by tile (and of W.T row-major)."""
    f = _core._gemm_family_info(dt)
    mr, nr, KT = f["mr"], f["nr"], _kt(f, w_where)
    if (f["isa"] in ("avx2", "avx512") and dt in (F16, BF16, F32)) or \
            (f["isa"] == "avx2" and dt == F64):
        assert f["thin_t_tiles"] == 4, f  # the families it was measured on
    tt = max(f["thin_t_tiles"], 1)
    esz = 8 if dt.itemsize == 8 else 4
    l2 = gk.cpu_info()["caches"]["l2"] or (1 << 20)
    kb = max(KT, l2 // 2 // (mr * esz) // KT * KT)  # A's block for one row panel
    rng = np.random.default_rng(31)
    shapes = [(tt * nr, KT + 1), (2 * tt * nr + nr + 7, 2 * KT + 3),
              ((tt + 1) * nr + nr // 2, 300), (3 * tt * nr - 1, 5), (2 * tt * nr, kb + KT + 5)]
    for M in range(1, min(3, mr) + 1):
        for i, (N, K) in enumerate(shapes):
            cshape = ["N", "MN", "none", "M1", "scalar"][(M + i) % 5]
            A, W, C = problem(M, N, K, dt, 0, 1, cshape, rng)
            alpha = 1.0 if cshape == "none" else (3.0 if dt.kind in "iu" else 0.75)
            _check(A, W, C, alpha, 0.5 if dt.kind == "f" else 2.0)


@pytest.mark.parametrize("dt", [F32, BF16, F64, I64], ids=str)
def test_w_layouts(isa, dt, w_where):
    """W with a negative row stride, rows wider than K, and a transposed view of a
    row-major B (B.T: the same memory as B, read as columns)."""
    rng = np.random.default_rng(31)
    f = _core._gemm_family_info(dt)
    nr, KT = f["nr"], _kt(f, w_where)
    for (M, N, K) in [(1, 2 * nr + 1, 2 * KT + 9), (5, nr + 3, 3 * KT + 1)]:
        A, W, C = problem(M, N, K, dt, 0, 1, "MN", rng)
        _check(A, np.ascontiguousarray(W[::-1])[::-1], C, 1.0, 1.0)
        wide = np.zeros((N, K + 5), dt)
        wide[:, :K] = W
        _check(A, wide[:, :K], C, 1.0, 1.0)
        _check(A, np.ascontiguousarray(W.T).T, C, 1.0, 1.0)
