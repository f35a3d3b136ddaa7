"""The float32 / float64 Gemm families on every path (the ``isa`` fixture forces each
usable ISA level through GEMMKIT_ISA's selection), against a float64 oracle.

Bound (stated, from test_gemm.float_oracle): with u the unit roundoff of the accumulation
type, |Y - ref| <= (K + 2) * (u + 2**-53) * |alpha| * sum_k |a_ik||b_kj|
                  + 2u (|alpha * A'B'| + |beta * C|) + subnormal slack.
FMA (the SIMD families) rounds once per multiply-add instead of twice: it stays inside the
same gamma_K bound.  The scalar families must additionally equal the sequential oracle bit
for bit (checked in test_gemm.py); here every path is held to the bound, and shapes come
from each path's own block sizes (runtime cache blocks included).
"""
import ml_dtypes
import numpy as np
import pytest

import gemmkit as gk
from gemmkit import _core
from test_gemm import block_shapes, check_float_gemm, problem, seq_oracle

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [F32, F64]


def _fam(dt):
    return _core._gemm_family_info(dt)


def test_family_per_level(isa):
    """The most specific float family at or below the level runs.  A family's dispatch
    level is one of the ladder's; its name is that level, or the level plus the one
    feature it needs beyond it (bfloat16 on AMX tiles: "amxbf16" at level amx; on
    vdpbf16ps: "avx512bf16" at level avx512; on
    BFMMLA: "neonbf16" at level neon); vdpbf16ps only where it outruns the widening
    family ("avx512bf16-fast", AMD)."""
    levels = _core._levels()
    feats = gk.cpu_info()["features"]
    bf = _fam(BF16)
    assert bf["level"] in levels and levels.index(bf["level"]) <= levels.index(isa)
    # the dot-product families: name, its level, the CPU feature it needs beyond it
    dots = [("amxbf16", "amx", "amx-bf16"), ("avx512bf16", "avx512", "avx512bf16-fast"),
            ("neonbf16", "neon", "bf16")]
    for i, (name, level, feat) in enumerate(dots):
        better = any(lv in levels and levels.index(isa) >= levels.index(lv) and ft in feats
                     for _, lv, ft in dots[:i])  # a more specific dot family runs instead
        if (level in levels and levels.index(isa) >= levels.index(level) and feat in feats
                and not better):
            assert bf["isa"] == name and bf["level"] == level, (isa, bf)
            assert bf["fallback"] is not None  # it declines calls its guard rejects
        else:
            assert bf["isa"] != name, (isa, bf)
    for dt in FLOATS:
        f = _fam(dt)
        assert f["isa"] == f["level"] and f["fallback"] is None
        assert levels.index(f["isa"]) <= levels.index(isa)
        if isa == "sse41":
            assert f["isa"] == "sse41", (isa, f)
        elif isa in ("avx2", "avxvnni"):
            assert f["isa"] == "avx2", (isa, f)
        elif isa in ("avx512", "avx512vnni", "amx"):
            assert f["isa"] == "avx512", (isa, f)
        assert f["mc"] % f["mr"] == 0 and f["nc"] % f["nr"] == 0 and f["kc"] >= 1


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_edges_1_to_17(isa, dt):
    rng = np.random.default_rng(7)
    for m in range(1, 18):
        for n in (1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33):
            k = (m * 7 + n) % 19 + 1
            A, B, C = problem(m, n, k, dt, 0, 0, "MN", rng)
            check_float_gemm(A, B, C, 1.5, -0.5)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_shapes_around_blocks(isa, dt):
    rng = np.random.default_rng(11)
    f = _fam(dt)
    for i, (M, N, K) in enumerate(block_shapes(f)):
        ta, tb = i % 2, (i // 2) % 2
        A, B, C = problem(M, N, K, dt, ta, tb, ["M1", "N", "MN", "scalar"][i % 4], rng)
        check_float_gemm(A, B, C, 0.75, -1.25, ta, tb)
        check_float_gemm(A, B, None, 1.0, 1.0, ta, tb)  # identity epilogue (skipped)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("cshape", ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"])
@pytest.mark.parametrize("beta", [0.0, 1.0, -2.5])
def test_c_broadcasts_alpha_beta(isa, dt, cshape, beta):
    rng = np.random.default_rng(3)
    for (M, N, K) in [(37, 45, 29), (100, 70, 300)]:
        A, B, C = problem(M, N, K, dt, 1, 0, cshape, rng)
        check_float_gemm(A, B, C, -0.375, beta, 1, 0)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_small_calls_in_place_b(isa, dt):
    """Below the small-call threshold B' is read in place: contiguous and strided B,
    transposed B (packed path), N below / at / past the tile width, negative strides."""
    rng = np.random.default_rng(5)
    nr = _fam(dt)["nr"]
    for (M, N, K) in [(64, 64, 64), (1, nr, 1), (5, nr - 1, 3), (13, 3 * nr + 5, 40),
                      (100, 100, 100), (128, 128, 128)]:
        for tb in (0, 1):
            A, B, C = problem(M, N, K, dt, 0, tb, "N", rng)
            check_float_gemm(A, B, C, 2.0, 0.5, 0, tb)
        A, B, _ = problem(M, N, K, dt, 0, 0, "none", rng)
        check_float_gemm(A[::-1], B[::-1, ::-1].copy()[::-1, ::-1], None)
        Bw = np.zeros((K, N + 3), dt)
        Bw[:, :N] = B
        check_float_gemm(A, Bw[:, :N], None)           # row stride != N
        check_float_gemm(A, B[::-1], None)             # negative row stride


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_thin_a_in_place_b(isa, dt):
    """Thin A (M <= 32) reads B' in place at any size, in K blocks of a few rows: row
    counts around one panel, two panels and the 32-row limit, K across several blocks and
    past the family's KC, N tails, C forms, B row strides of every sign."""
    rng = np.random.default_rng(13)
    f = _fam(dt)
    mr, nr, kc = f["mr"], f["nr"], f["kc"]
    for M in sorted({1, 2, mr - 1, mr, mr + 1, 2 * mr - 1, 2 * mr, 2 * mr + 1, 31, 32, 33}):
        for (N, K) in [(nr, 3), (2 * nr + 5, 16 * 3 + 5), (3 * nr - 1, kc + 9)]:
            i = M + N + K
            A, B, C = problem(M, N, K, dt, 0, 0, ["none", "N", "MN", "M1"][i % 4], rng)
            check_float_gemm(A, B, C, 0.5, 1.5)
    A, B, C = problem(3, 2 * nr + 1, 2 * kc + 1, dt, 0, 0, "MN", rng)
    check_float_gemm(A, B[::-1].copy()[::-1], C, 1.0, -1.0)     # negative B row stride
    Bw = np.zeros((2 * kc + 1, 2 * nr + 4), dt)
    Bw[:, :2 * nr + 1] = B
    check_float_gemm(A, Bw[:, :2 * nr + 1], C, 1.0, -1.0)       # B row stride != N


@pytest.fixture(params=["cached", "from_memory"])
def strip_b(request):
    """The strip path's two variants: B' as cached (tile by tile) and as streaming from
    memory (several tiles per step; normally only past the last-level cache, forced here
    on small B')."""
    prev = _core._gemm_memory_bytes(1 if request.param == "from_memory" else 0)
    yield request.param
    _core._gemm_memory_bytes(prev)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_few_rows_match_rows_of_four(isa, dt, strip_b):
    """Products of 1-3 rows (M = 1: a GEMV; the SIMD float families run their full tiles
    as one strip, gk_gemm_ukernel_strip_fn) perform, per output, the operations of the
    same rows of a four-row product, which runs tile by tile, with the same B' and K
    blocks (all thin A in one row panel): the same bits, with and without a column tail,
    B' cached or streamed (past 256 KiB), tile counts that leave a remainder after the
    from-memory variant's steps of 2-4 tiles, a negative row stride, C and alpha/beta,
    on 1 and 2 threads."""
    rng = np.random.default_rng(17)
    nr, kc = _fam(dt)["nr"], _fam(dt)["kc"]
    for (N, K) in [(5 * nr + 3, 29), (3 * nr, kc + 9), (4 * nr + 1, 2100), (6 * nr, 1500),
                   (7 * nr + 2, 300), (9 * nr, 40)]:
        A = rng.standard_normal((4, K)).astype(dt)
        B = rng.standard_normal((K, N)).astype(dt)
        C = rng.standard_normal((4, 1)).astype(dt)
        for Bv in (B, B[::-1].copy()[::-1]):
            for nt in (1, 2):
                with gk.threads(nt):
                    y4 = gk.gemm(A, Bv, C, 0.75, -1.5)
                    for m in (1, 2, 3):
                        ym = gk.gemm(A[:m], Bv, C[:m], 0.75, -1.5)
                        assert np.array_equal(ym, y4[:m]), (m, N, K, nt)
        for m in (1, 2, 3):
            check_float_gemm(A[:m], B, C[:m], 0.75, -1.5)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_nan_inf_propagate(isa, dt):
    rng = np.random.default_rng(9)
    for (M, N, K) in [(20, 40, 30), (200, 150, 400)]:
        A, B, C = problem(M, N, K, dt, 0, 0, "MN", rng)
        A[3, 5] = np.nan
        A[7, 1] = np.inf
        B[2, 11] = -np.inf
        C[0, 0] = np.nan
        with np.errstate(all="ignore"):
            Y = check_float_gemm(A, B, C, 1.0, 1.0)  # same NaN-ness / infinities as the oracle
        assert np.isnan(Y[3]).all() and np.isnan(Y[0, 0])
        A2 = np.zeros((M, K), dt)
        A2[0, 0] = np.inf
        B2 = np.where(np.isfinite(B), np.abs(B), 0).astype(dt) + 1
        Y = gk.gemm(A2, B2)
        assert np.isposinf(Y[0]).all() and (Y[1:] == 0).all()


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_first_block_never_reads_y(isa, dt):
    """Uninitialised Y (NaN garbage from the heap) must not leak into any path."""
    rng = np.random.default_rng(13)
    f = _fam(dt)
    for (M, N, K) in [(64, 64, 64), (f["mr"] * 3 + 1, f["nr"] * 2 + 3, f["kc"] + 5)]:
        junk = [np.full((M, N), np.nan, dt) for _ in range(4)]
        del junk
        A, B, _ = problem(M, N, K, dt, 0, 0, "none", rng)
        Y = check_float_gemm(A, B, None)
        assert np.isfinite(Y).all()


def test_qlinear_float8_runs_rounded_kernel_bit_exact(isa):
    """QLinearMatMul's float8 path runs the float32 family with separately rounded
    products: its float32 sums equal the sequential scalar definition bit for bit even on
    FMA paths (dequantized values with scales are not exact products)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(17)
    f = _fam(F32)
    for (M, N, K) in [(f["mr"] + 3, f["nr"] + 5, f["kc"] + 9), (33, 47, 61)]:
        a = rng.uniform(-8, 8, (M, K)).astype(ml_dtypes.float8_e4m3fn)
        b = rng.uniform(-8, 8, (K, N)).astype(ml_dtypes.float8_e4m3fn)
        a_s = np.float32(0.0173)
        b_s = np.float32(0.0291)
        y_s = np.float32(1.0)
        y_zp = np.zeros((), ml_dtypes.float8_e5m2)
        a_zp = np.zeros((), ml_dtypes.float8_e4m3fn)
        b_zp = np.zeros((), ml_dtypes.float8_e4m3fn)
        got = gk.qlinear_matmul(a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp)
        # the definition: dequantize (one rounding each), sequential float32 sums,
        # / y_scale, saturating encode
        ad = a.astype(np.float32) * a_s
        bd = b.astype(np.float32) * b_s
        acc = seq_oracle(ad, bd, None, 1.0, 1.0)
        want = (acc / y_s).astype(ml_dtypes.float8_e5m2)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
