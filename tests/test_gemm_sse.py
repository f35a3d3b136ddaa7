"""The SSE Gemm families (level sse41: src/csrc/gemm/x86/gk_gemm_*_sse41.c) against the
scalar oracle families, bit for bit.

SSE has no FMA: the SSE micro-kernel rounds each product, then adds it to its running sum
in increasing k from +0 -- the scalar kernel's arithmetic lane by lane -- and the blocking
only decides where the (exactly stored) partial sums wait between K blocks.  So at level
sse41 float32/float64 results equal the scalar family's bit for bit on every shape, C form,
alpha/beta, layout and path (packed, B' in place); float16/bfloat16 too (the same generic
widening packers, the same float32 sums, the same generic epilogue).  Shapes come from the
sse41 family's own block sizes (runtime cache blocks included).
"""
import ml_dtypes
import numpy as np
import pytest

import gemmkit as gk
from gemmkit import _core
from test_gemm import problem, relayout

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
UINT = {F16: np.uint16, BF16: np.uint16, F32: np.uint32, F64: np.uint64}

pytestmark = pytest.mark.skipif(
    "sse41" not in gk.cpu_info()["available"], reason="level sse41 not usable here")


@pytest.fixture(scope="module")
def sse_fams():
    """The sse41 families' block sizes per dtype; the default level restored after."""
    default = gk.cpu_info()["isa"]
    _core._set_isa("sse41")
    try:
        fams = {dt: _core._gemm_family_info(dt) for dt in (F16, BF16, F32, F64)}
    finally:
        _core._set_isa(default)
    return fams


def _run_at(level, *args):
    default = gk.cpu_info()["isa"]
    _core._set_isa(level)
    try:
        dt = args[0].dtype
        assert gk.cpu_info()["engines"]["gemm"][str(dt)] == level
        return gk.gemm(*args)
    finally:
        _core._set_isa(default)


def _same_bits(A, B, C=None, alpha=1.0, beta=1.0, ta=0, tb=0):
    ys = _run_at("sse41", A, B, C, alpha, beta, ta, tb)
    yr = _run_at("scalar", A, B, C, alpha, beta, ta, tb)
    assert ys.shape == yr.shape and ys.dtype == yr.dtype == A.dtype
    u = UINT[A.dtype]
    bad = ys.view(u) != yr.view(u)
    # NaN payloads may come from either operand of an add of two NaNs; NaN-ness may not
    nan = np.isnan(ys.astype(np.float64)) & np.isnan(yr.astype(np.float64))
    bad &= ~nan
    assert not bad.any(), (A.shape, B.shape, None if C is None else C.shape, alpha, beta,
                           ta, tb, np.argwhere(bad)[:5], ys[bad][:5], yr[bad][:5])


def test_families_at_sse41(sse_fams):
    for dt, f in sse_fams.items():
        assert f["isa"] == "sse41" and f["level"] == "sse41", (dt, f)
        assert f["mc"] % f["mr"] == 0 and f["nc"] % f["nr"] == 0 and f["kc"] >= 1
    assert (sse_fams[F32]["mr"], sse_fams[F32]["nr"]) == (6, 8)
    assert (sse_fams[F64]["mr"], sse_fams[F64]["nr"]) == (6, 4)


@pytest.mark.parametrize("dt", [F32, F64, F16, BF16], ids=str)
def test_edges_1_to_17(dt):
    rng = np.random.default_rng(3)
    for m in range(1, 18):
        for n in range(1, 18):
            k = (m * 5 + n * 3) % 23 + 1
            ta, tb = m % 2, (n // 2) % 2
            A, B, C = problem(m, n, k, dt, ta, tb, "MN", rng)
            _same_bits(A, B, C, 1.5, -0.5, ta, tb)


@pytest.mark.parametrize("dt", [F32, F64, F16, BF16], ids=str)
def test_shapes_around_blocks(sse_fams, dt):
    f = sse_fams[dt]
    mr, nr, mc, kc, nc = f["mr"], f["nr"], f["mc"], f["kc"], f["nc"]
    rng = np.random.default_rng(5)
    shapes = [
        (mr, nr, kc), (mr - 1, nr + 1, kc - 1), (mr + 1, nr - 1, kc + 1),
        (2 * mr + 3, 2 * nr + 5, 2 * kc + 7),   # several K blocks
        (mc + mr + 1, nr + 3, 5),               # past MC
        (mc + 1, 2 * nr + 1, kc + 3),           # past MC, K split
        (mr + 1, nc + nr - 1, 9),               # past NC
        (3, nc + 1, kc + 1),                    # past NC, K split (thin A: B' in place)
        (40, 3 * nr + 2, 2 * kc + 1),           # above the thin rows, packed
        (17, 45, 100),                          # small call: B' in place
    ]
    for i, (M, N, K) in enumerate(shapes):
        ta, tb = i % 2, (i // 2) % 2
        A, B, C = problem(M, N, K, dt, ta, tb, ["M1", "N", "MN", "scalar"][i % 4], rng)
        _same_bits(A, B, C, 0.75, -1.25, ta, tb)
        _same_bits(A, B, None, 1.0, 1.0, ta, tb)


@pytest.mark.parametrize("dt", [F32, F64], ids=str)
@pytest.mark.parametrize("cshape", ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (1.0, 0.0), (-2.5, 0.5), (0.0, 3.0)])
def test_c_forms_alpha_beta(dt, cshape, alpha, beta):
    rng = np.random.default_rng(9)
    A, B, C = problem(23, 19, 37, dt, 0, 1, cshape, rng)
    _same_bits(A, B, C, alpha, beta, 0, 1)


@pytest.mark.parametrize("dt", [F32, F64], ids=str)
@pytest.mark.parametrize("kind", ["f", "neg", "slice", "offset", "readonly", "unaligned"])
def test_strided_inputs(dt, kind):
    rng = np.random.default_rng(13)
    for M, N, K, ta, tb in [(13, 21, 30, 0, 0), (7, 40, 9, 1, 0), (50, 11, 300, 0, 1)]:
        A, B, C = problem(M, N, K, dt, ta, tb, "MN", rng)
        _same_bits(relayout(A, kind), relayout(B, kind), relayout(C, kind), 1.25, 0.5,
                   ta, tb)


@pytest.mark.parametrize("dt", [F32, F64], ids=str)
def test_extreme_values(dt):
    """Cancellation, subnormals (SSE without FTZ/DAZ computes them), overflow to inf,
    inf * 0 = NaN, signed zeros."""
    rng = np.random.default_rng(17)
    fi = np.finfo(dt)
    M, N, K = 11, 13, 70
    A = rng.standard_normal((M, K)).astype(dt)
    B = rng.standard_normal((K, N)).astype(dt)
    A[0] *= fi.tiny * 4          # products and sums subnormal
    A[1] = fi.max / 4            # overflow to inf
    A[2, :] = -0.0               # a sum of -0 products is +0
    A[3, 5] = np.inf             # inf * 0 below: NaN
    B[5, 0] = 0.0
    A[4, ::2] = 1e30 if dt == F32 else 1e300
    A[4, 1::2] = -A[4, ::2]      # cancellation: order matters
    B[:, 1] = 1.0
    _same_bits(A, B, None, 1.0, 1.0)
    _same_bits(A, B, rng.standard_normal((M, N)).astype(dt), 1.0, -1.0)


def test_k_zero_and_empty():
    for dt in (F32, F64):
        A = np.ones((5, 0), dt)
        B = np.ones((0, 9), dt)
        C = np.full((5, 9), 2.0, dt)
        _same_bits(A, B, C, 1.0, 0.5)
        _same_bits(A, B, None, 1.0, 1.0)
