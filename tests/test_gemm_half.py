"""float16 / bfloat16 Gemm on every path (the ``isa`` fixture forces each usable ISA level):
the widening families (x86: packers widen exactly into float32 panels, the float32 FMA
micro-kernel, one RNE rounding in a vector epilogue) and the scalar oracle.

What is held, per path:
- the float64 oracle's bound (test_gemm.float_oracle: gamma_K accumulation in float32, the
  epilogue's roundings, one final rounding to 16 bits), shapes from each path's own block
  sizes, transA / transB, every C form, non-contiguous / negative-stride / unaligned inputs;
- bit-identity with the scalar family wherever the float32 sums are exact on every path
  (small integers: FMA or not, the same sums), so the vector epilogue is checked against
  the generic one bit for bit, NaN codes, float16 overflow and bfloat16 ties included;
- a single rounding: results where a 16-bit accumulation, or a second rounding through
  another 16-bit format, would differ;
- NaN / inf propagation; beta == 0 never reads C.
"""
import ml_dtypes
import numpy as np
import pytest

import gemmkit as gk
from gemmkit import _core
from test_gemm import (assert_float_close, block_shapes, check_float_gemm, float_oracle,
                       problem, relayout)

F16, BF16, F64 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float64)
HALVES = [F16, BF16]
CSHAPES = ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"]


def _fam(dt):
    return _core._gemm_family_info(dt)


def _bits(Y):
    return np.ascontiguousarray(Y).view(np.uint16)


def _scalar_gemm(*args):
    """The same call on the scalar oracle family (restores the active level)."""
    cur = gk.cpu_info()["isa"]
    _core._set_isa("scalar")
    try:
        return gk.gemm(*args)
    finally:
        _core._set_isa(cur)


def _small_ints(shape, rng, lo=-8, hi=8):
    return rng.integers(lo, hi + 1, size=shape).astype(F64)


def test_family_per_level(isa):
    """The most specific 16-bit family at or below the level runs: the widening x86
    families from sse41 up (sse41: generic widening packers around the SSE float32 kernel); from avx512 up, bfloat16 runs the vdpbf16ps family (level
    avx512, isa "avx512bf16") where the CPU has AVX512_BF16 and vdpbf16ps outruns the
    widening path there (feature "avx512bf16-fast", AMD; not Intel's); at amx, the AMX-BF16
    family (isa "amxbf16") where the CPU has it (feature "amx-bf16")."""
    levels = _core._levels()
    feats = gk.cpu_info()["features"]
    has_bf16dot = "avx512bf16-fast" in feats
    assert not has_bf16dot or "avx512bf16" in feats
    has_amxbf16 = "amx-bf16" in feats and "amx" in levels and \
        levels.index(isa) >= levels.index("amx")
    for dt in HALVES:
        f = _fam(dt)
        assert levels.index(f["level"]) <= levels.index(isa)
        above_avx512 = "avx512" in levels and levels.index(isa) >= levels.index("avx512")
        if isa == "sse41":
            assert f["isa"] == "sse41" and f["level"] == "sse41", (isa, f)
        elif isa in ("avx2", "avxvnni"):
            assert f["isa"] == "avx2", (isa, f)
        elif dt == BF16 and has_amxbf16:
            assert f["isa"] == "amxbf16" and f["level"] == "amx", (isa, f)
        elif above_avx512:
            want = "avx512bf16" if (dt == BF16 and has_bf16dot) else "avx512"
            assert f["isa"] == want and f["level"] == "avx512", (isa, f)
        assert f["mc"] % f["mr"] == 0 and f["nc"] % f["nr"] == 0 and f["kc"] >= 1
    engines = gk.cpu_info()["engines"]["gemm"]
    assert engines["float16"] == _fam(F16)["isa"] and engines["bfloat16"] == _fam(BF16)["isa"]


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_edges_1_to_17(isa, dt):
    rng = np.random.default_rng(7)
    for m in range(1, 18):
        for n in (1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33):
            k = (m * 7 + n) % 19 + 1
            A, B, C = problem(m, n, k, dt, m % 2, n % 2, "MN", rng)
            check_float_gemm(A, B, C, 1.5, -0.5, m % 2, n % 2)


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_shapes_around_blocks(isa, dt):
    rng = np.random.default_rng(11)
    f = _fam(dt)
    for i, (M, N, K) in enumerate(block_shapes(f)):
        ta, tb = i % 2, (i // 2) % 2
        A, B, C = problem(M, N, K, dt, ta, tb, ["M1", "N", "MN", "scalar"][i % 4], rng)
        check_float_gemm(A, B, C, 0.75, -1.25, ta, tb)
        check_float_gemm(A, B, None, 1.0, 1.0, ta, tb)


@pytest.mark.parametrize("dt", HALVES, ids=str)
@pytest.mark.parametrize("cshape", CSHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.0, -2.5])
def test_c_broadcasts_alpha_beta(isa, dt, cshape, beta):
    rng = np.random.default_rng(3)
    for (M, N, K) in [(37, 45, 29), (100, 70, 300)]:
        for ta, tb in ((1, 0), (0, 1)):
            A, B, C = problem(M, N, K, dt, ta, tb, cshape, rng)
            if beta == 0.0 and C is not None:
                C = np.full(C.shape, np.nan, dt)  # beta == 0: never read
            check_float_gemm(A, B, C, -0.375, beta, ta, tb)


def _c_views(C):
    """(M, N) C as contiguous, column-strided, transposed, negative-strided and unaligned
    views (the vector epilogue's C loops and its generic fallback)."""
    return [C, relayout(C, "slice"), relayout(C, "f"), relayout(C, "neg"),
            relayout(C, "unaligned"), relayout(C, "offset")]


@pytest.mark.parametrize("dt", HALVES, ids=str)
@pytest.mark.parametrize("cshape", CSHAPES)
def test_epilogue_bits_equal_the_scalar_family(isa, dt, cshape):
    """Exact float32 sums (small integers) on every path, so Y depends on the epilogue
    alone: the vector epilogue must give the generic one's bits, for alpha/beta that round
    and every C form (C holding values near the 16-bit range's top, NaN and inf)."""
    rng = np.random.default_rng(29)
    f = _fam(dt)
    for (M, N, K) in [(f["mr"] + 1, 2 * f["nr"] + 3, 7), (2 * f["mr"] - 1, f["nr"] - 1,
                                                          f["kc"] + 2)]:
        A = _small_ints((M, K), rng).astype(dt)
        B = _small_ints((K, N), rng).astype(dt)
        shapes = {"none": None, "scalar": (), "1": (1,), "N": (N,), "1N": (1, N),
                  "M1": (M, 1), "11": (1, 1), "MN": (M, N)}
        cs = shapes[cshape]
        Cs = [None]
        if cs is not None:
            top = 60000.0 if dt == F16 else 3.0e38
            C = (rng.uniform(-1, 1, cs) * rng.choice([1.0, 100.0, top], cs)).astype(dt)
            if C.size > 2:
                C.flat[0] = np.nan
                C.flat[1] = np.inf
            Cs = _c_views(C) if cshape == "MN" else [C]
        for Cv in Cs:
            for alpha, beta in ((1.0, 1.0), (0.1, -1.7), (1000.0, 0.3), (-3.0e3, 1.0)):
                with np.errstate(all="ignore"):
                    Y = gk.gemm(A, B, Cv, alpha, beta)
                    R = _scalar_gemm(A, B, Cv, alpha, beta)
                np.testing.assert_array_equal(_bits(Y), _bits(R), err_msg=str((alpha, beta)))


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_nan_codes_and_overflow_bits(isa, dt):
    """Sums that overflow the 16-bit range, land on ties, or are NaN with payloads: the
    same codes as the scalar oracle (gk_f32_to_f16 / gk_f32_to_bf16)."""
    rng = np.random.default_rng(31)
    M, N, K = 9, 37, 3
    A = np.ones((M, K), dt)
    # column j's sum is B[0, j] + B[1, j] + B[2, j] (exact in float32)
    B = np.zeros((K, N), F64)
    if dt == F16:
        B[0] = 65504.0
        B[1] = rng.choice([0.0, 8.0, 15.0, 16.0, 17.0, 32.0, -65504.0], N)
    else:
        B[0] = 1.0
        B[1] = rng.choice([0.0, 2.0**-8, 2.0**-9, 3 * 2.0**-8, 2.0**-7], N)
        B[2] = rng.choice([0.0, 2.0**-14, -2.0**-14], N)
    B = B.astype(dt)
    B[2, 5] = np.nan
    B[2, 6] = -np.inf
    codes = [0x7d01, 0xfe23, 0x7c01] if dt == F16 else [0x7f81, 0xffc3, 0x7fa0]
    raw = np.array(codes, np.uint16).view(dt)
    B[0, 7:10] = raw  # NaN codes with payloads (signalling and quiet)
    for alpha in (1.0, 1.0009765625, -0.5):
        with np.errstate(all="ignore"):
            Y, R = gk.gemm(A, B, None, alpha), _scalar_gemm(A, B, None, alpha)
        np.testing.assert_array_equal(_bits(Y), _bits(R))
    assert np.isnan(Y[:, [5, 7, 8, 9]].astype(F64)).all() and np.isposinf(Y[:, 6].astype(F64)).all()


def test_float16_overflow_to_inf(isa):
    A = np.array([[65504.0, 8.0], [65504.0, 16.0], [-65504.0, -16.0], [60000.0, 6000.0]],
                 F16)
    B = np.array([[1.0], [1.0]], F16)
    Y = gk.gemm(A, B).astype(F64)[:, 0]
    # 65512 is a tie between 65504 and the next step (65536 = inf): even -> 65504;
    # 65520 rounds to inf
    assert Y[0] == 65504.0 and np.isposinf(Y[1]) and np.isneginf(Y[2]) and np.isposinf(Y[3])
    # a sum beyond float16 scaled back into range: no 16-bit accumulation anywhere
    A = np.full((3, 4), 300.0, F16)
    B = np.full((4, 5), 300.0, F16)
    Y = gk.gemm(A, B, None, 0.01)
    np.testing.assert_array_equal(Y, np.full((3, 5), 3600.0, F16))


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_rounded_once(isa, dt):
    """One RNE rounding of the float32 sum (exact here): 1 + half an ulp + a little rounds
    up; a 16-bit
    accumulation (each small term below half an ulp) or a rounding first to float16 (for
    bfloat16: to the tie, then to even) would give 1."""
    if dt == F16:
        terms = [1.0, 2.0**-12, 2.0**-12, 2.0**-20]   # 1 + 2**-11 + 2**-20
        want = 1.0 + 2.0**-10
    else:
        terms = [1.0, 2.0**-9, 2.0**-9, 2.0**-20]     # 1 + 2**-8 + 2**-20
        want = 1.0 + 2.0**-7
    for M, N, reps in ((1, 1, 1), (17, 35, 3), (3, 70, 90)):
        K = 4 * reps
        A = np.tile(np.array(terms, dt), (M, reps))
        B = np.zeros((K, N), dt)
        B[:4] = 1.0  # only the first group counts; the rest adds exact zeros
        Y = gk.gemm(A, B)
        assert (Y.astype(F64) == want).all(), Y
        Yt = gk.gemm(np.ascontiguousarray(A.T), np.ascontiguousarray(B.T), None, 1.0, 1.0, 1, 1)
        assert (Yt.astype(F64) == want).all()
        # and through the epilogue: alpha*acc + beta*C (exact here) rounded once
        C = np.full((M, N), 0.25, dt)
        Y = gk.gemm(A, B, C, 1.0, 2.0)
        assert (Y.astype(F64) == want + 0.5).all()


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_nan_inf_propagate(isa, dt):
    rng = np.random.default_rng(9)
    for (M, N, K) in [(20, 40, 30), (200, 150, 400)]:
        A, B, C = problem(M, N, K, dt, 0, 0, "MN", rng)
        A[3, 5] = np.nan
        A[7, 1] = np.inf
        B[2, 11] = -np.inf
        C[0, 0] = np.nan
        with np.errstate(all="ignore"):
            Y = check_float_gemm(A, B, C, 1.0, 1.0)
        assert np.isnan(Y[3].astype(F64)).all() and np.isnan(Y[0, 0].astype(F64))
        A2 = np.zeros((M, K), dt)
        A2[0, 0] = np.inf
        B2 = (np.abs(rng.uniform(-1, 1, (K, N))) + 1).astype(dt)
        Y = gk.gemm(A2, B2).astype(F64)
        assert np.isposinf(Y[0]).all() and (Y[1:] == 0).all()


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_beta_zero_never_reads_c(isa, dt):
    rng = np.random.default_rng(19)
    f = _fam(dt)
    for (M, N, K) in [(5, 4, 3), (f["mr"] + 2, f["nr"] + 2, f["kc"] + 2)]:
        A, B, _ = problem(M, N, K, dt, 0, 0, "none", rng)
        for cs in [(), (N,), (M, 1), (M, N)]:
            C = np.full(cs, np.nan, dt)
            Y = gk.gemm(A, B, C, 2.0, 0.0)
            np.testing.assert_array_equal(_bits(Y), _bits(gk.gemm(A, B, None, 2.0)))
            assert not np.isnan(Y.astype(F64)).any()


LAYOUTS = ["f", "neg", "slice", "offset", "unaligned"]


@pytest.mark.parametrize("dt", HALVES, ids=str)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_strided_inputs(isa, dt, kind):
    """Non-contiguous operands (the packers' strided paths) give the contiguous result's
    bits: the sums are the same, only their reading differs."""
    rng = np.random.default_rng(37)
    f = _fam(dt)
    for (M, N, K) in [(10, 7, 12), (f["mr"] + 3, f["nr"] + 5, f["kc"] + 9)]:
        A, B, C = problem(M, N, K, dt, 0, 0, "MN", rng)
        Y0 = gk.gemm(A, B, C, 2.0, 3.0)
        for ta, tb in ((0, 0), (1, 0), (0, 1), (1, 1)):
            A2 = (A.T if ta else A).copy()
            B2 = (B.T if tb else B).copy()
            args = (relayout(A2, kind), relayout(B2, kind), relayout(C, kind), 2.0, 3.0, ta, tb)
            Y = check_float_gemm(*args)
            np.testing.assert_array_equal(_bits(Y), _bits(Y0))


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_zero_stride_and_reversed_views(isa, dt):
    rng = np.random.default_rng(41)
    A = np.broadcast_to(rng.uniform(-1, 1, (1, 40)).astype(dt), (33, 40))
    B = np.broadcast_to(rng.uniform(-1, 1, (40, 1)).astype(dt), (40, 37))  # B[k, j] = b[k]
    C = np.broadcast_to(rng.uniform(-1, 1, (1, 37)).astype(dt), (33, 37))
    assert A.strides[0] == 0 and B.strides[1] == 0 and C.strides[0] == 0
    check_float_gemm(A, B, C, 2.0, 1.0)
    check_float_gemm(A.T, B.T, C, 2.0, 1.0, 1, 1)
    base = problem(60, 90, 1, dt, rng=rng)[0]
    Ar = base[55:2:-2, 85:5:-3]  # negative strides, offset into base
    Br = base[::2, 1:40][:Ar.shape[1]]
    check_float_gemm(Ar, Br, base[0, :Br.shape[1]], 1.0, -1.0)


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_k_zero_and_empty(isa, dt):
    C = np.array([[1.5], [-2.0], [3.0]], dt)
    Y = gk.gemm(np.zeros((3, 0), dt), np.zeros((0, 40), dt), C, 1.0, 0.5)
    np.testing.assert_array_equal(Y, np.broadcast_to(C.astype(np.float32) * 0.5, (3, 40)).astype(dt))
    assert gk.gemm(np.zeros((0, 5), dt), np.zeros((5, 4), dt)).shape == (0, 4)
    assert gk.gemm(np.zeros((4, 5), dt), np.zeros((5, 0), dt)).shape == (4, 0)


@pytest.mark.parametrize("dt", HALVES, ids=lambda d: d.name)
def test_thin_products_equal_the_blocked_path(isa, dt):
    """Thin A (few rows) with a 16-bit output runs the blocked path in thin K blocks of all
    the columns (gk_gemm_plan.kc_thin), or for 1..3 rows with B' rows contiguous reads B'
    in place (the widening families' ukernel_strip_h): the sums still continue in float32
    in increasing k, so the bits equal the family's own blocking (read through a
    pre-packed B, which keeps it), for any thread count, transB and C, and hold the float32
    bound.  A family whose size rule hands such a call on (min_rows: the dot-product
    families) still runs a call on B' packed for it: the two then need not agree bit for
    bit, and each holds the bound."""
    rng = np.random.default_rng(29)
    f = _fam(dt)
    for M in sorted({1, 2, 3, f["mr"], f["mr"] + 1, 31}):
        for (K, N) in [(40, 70), (700, 2 * f["nr"] + 5), (90, f["nr"] - 3)]:
            for tb in (0, 1):
                A, B, C = problem(M, N, K, dt, 0, tb, "N", rng)
                want = check_float_gemm(A, B, C, 0.5, 2.0, 0, tb)
                pb = gk.pack_b(B, "gemm", transB=tb)
                got = gk.gemm(A, pb, C, 0.5, 2.0, 0, tb)
                if M < f["min_rows"] or (M <= 3 and tb == 0 and f["thin_16bit"] != f["isa"]):
                    assert_float_close(got, *float_oracle(A, B, C, 0.5, 2.0, 0, tb))
                else:
                    np.testing.assert_array_equal(_bits(got), _bits(want),
                                                  err_msg=f"{M}x{K}x{N} transB={tb}")
                for t in (2, 3):
                    with gk.threads(t):
                        np.testing.assert_array_equal(
                            _bits(gk.gemm(A, B, C, 0.5, 2.0, 0, tb)), _bits(want),
                            err_msg=f"{M}x{K}x{N} transB={tb} threads={t}")


@pytest.mark.parametrize("dt", HALVES, ids=lambda d: d.name)
def test_thin_in_place_16bit(isa, dt):
    """1..3 rows with B' rows contiguous (transB = 0, any row stride, reversed rows too)
    read B' in place on the widening families (ukernel_strip_h: several tiles per step, the
    column tail through a packed panel, the sums in a float32 workspace), with and without
    the from-memory variant (its prefetch), for 1..3 threads (parts narrower than a tile
    included):
    - within the float32 bound, and the same bits for every variant and thread count;
    - where the dispatched family runs such calls itself, the bits of its blocked path on
      B' packed by pack_b (a dot-product family hands them to the widening one, and runs
      them itself on B' packed for it);
    - on small integers (every float32 sum exact) the scalar family's bits, whichever
      family ran."""
    f = _fam(dt)
    rng = np.random.default_rng(31)
    nr = f["nr"]
    cases = [(1, 40, 70), (2, 700, 8 * nr + 5), (3, 65, 3 * nr), (1, 1, nr),
             (3, 9000, nr + 1), (1, 300, 17 * nr + 31), (2, 33, 9 * nr)]
    for M, K, N in cases:
        A, Bw, _ = problem(M, N + 5, K + 3, dt, 0, 0, "none", rng)
        A = A[:, :K]
        C = problem(1, N, 1, dt, 0, 0, "N", rng)[2]
        views = [("c", np.ascontiguousarray(Bw[:K, :N])), ("rows", Bw[1:K + 1, 2:N + 2]),
                 ("reversed", Bw[:K, :N][::-1])]
        for name, B in views:
            want = check_float_gemm(A, B, C, 0.5, 2.0, 0, 0)
            got = gk.gemm(A, gk.pack_b(B, "gemm"), C, 0.5, 2.0)
            if f["thin_16bit"] == f["isa"]:
                np.testing.assert_array_equal(_bits(got), _bits(want),
                                              err_msg=f"{M}x{K}x{N} {name} pack_b")
            else:
                assert_float_close(got, *float_oracle(A, B, C, 0.5, 2.0, 0, 0))
            for mem in (0, 1):
                old = _core._gemm_memory_bytes(1 if mem else 0)
                try:
                    for t in (1, 2, 3):
                        with gk.threads(t):
                            np.testing.assert_array_equal(
                                _bits(gk.gemm(A, B, C, 0.5, 2.0)), _bits(want),
                                err_msg=f"{M}x{K}x{N} {name} mem={mem} threads={t}")
                finally:
                    _core._gemm_memory_bytes(old)
        # exact sums: the scalar family's bits (widening, positions, the tail panel)
        Ai = _small_ints((M, K), rng).astype(dt)
        Bi = _small_ints((K, N), rng).astype(dt)[::-1]
        Ci = _small_ints((N,), rng).astype(dt)
        for mem in (0, 1):
            old = _core._gemm_memory_bytes(1 if mem else 0)
            try:
                np.testing.assert_array_equal(_bits(gk.gemm(Ai, Bi, Ci, 1.0, 1.0)),
                                              _bits(_scalar_gemm(Ai, Bi, Ci, 1.0, 1.0)),
                                              err_msg=f"{M}x{K}x{N} small ints mem={mem}")
            finally:
                _core._gemm_memory_bytes(old)
