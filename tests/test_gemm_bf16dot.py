"""The bfloat16 Gemm dot-product families -- AMX-BF16 tiles (tdpbf16ps) and vdpbf16ps on x86
(src/csrc/gemm/x86/gk_gemm_bf16_amxbf16.c, gk_gemm_bf16_avx512bf16.c) and BFMMLA on ARM64
(src/csrc/gemm/arm/gk_gemm_bf16_neonbf16.c) -- against a float64 oracle, their guard
(src/csrc/gemm/gk_gemm_bf16dot_guard.h) and the AMX family's size rule.

Bound (test_gemm.float_oracle, the float32-accumulation bound every bfloat16 path keeps):
|Y - ref| <= (K + 2) * (2**-24 + 2**-53) * |alpha| * sum_k |a_ik||b_kj|
             + 2u (|alpha A'B'| + |beta C|) + 2**-8 |ref| (the one rounding to bfloat16)
             + subnormal slack.
vdpbf16ps adds the two products of a pair with an FMA each (odd k first): sequential
float32 sums in another order, inside the same bound -- as long as no denormal appears
(it reads input denormals as zero and flushes denormal results).  tdpbf16ps has the same
flushes; it combines a 32-deep step's products with fewer roundings than sequential sums
(1 + 16 * 2**-24 - 1 gives 8 * 2**-24 where sequential float32 sums give 0), inside the
bound too.  BFMMLA adds the two
products of a pair, then that to the sum, each rounded to odd (under 1 ulp each), with
the same flushes.  The guard declines a call whose inputs could produce a denormal (a
bfloat16 denormal in A' or B', or the smallest nonzero exponents summing below -112) and,
for BFMMLA, one with an infinity or NaN or exponents large enough for a partial sum to
near 2**128; the next family of the bfloat16 row (the widening float32 one) then runs it,
so those results equal that family's bit for bit.

Shapes come from the family's own block sizes (runtime cache blocks and sub-blocks).  The
module switches the size rules off (calls the AMX family hands on for speed run on it
here), except test_size_rule, which checks them.  Every test runs only where the dispatch
picks such a family: this CPU has AMX-BF16 (cpu_info feature "amx-bf16", level amx), or
AVX512_BF16 where vdpbf16ps outruns the widening float32 path ("avx512bf16-fast": AMD;
Intel's ran 0.6x of it on Sapphire Rapids, so there the dispatch passes the family over
and only the C kernel harness runs it), or FEAT_BF16 on ARM64, and the build has the
family's group.
"""
import ml_dtypes
import numpy as np
import pytest

import gemmkit as gk
from gemmkit import _core
from test_gemm import assert_float_close, float_oracle, problem, relayout

BF16 = np.dtype(ml_dtypes.bfloat16)
FAM = _core._gemm_family_info(BF16)

# family -> (its dispatch level, tile, the fingerprint below's value on it)
DOT_FAMILIES = {"amxbf16": ("amx", 32, 32, 2.0**-24),
                "avx512bf16": ("avx512", 14, 32, 2.0**-24),
                "neonbf16": ("neon", 8, 8, 3 * 2.0**-24)}
# the depth one instruction takes: only a product's last K block is not a multiple of it
KSTEP = {"amxbf16": 32, "avx512bf16": 2, "neonbf16": 4}

pytestmark = pytest.mark.skipif(
    FAM["isa"] not in DOT_FAMILIES,
    reason=f"no bfloat16 dot-product family runs here (dispatched: {FAM['isa']}; x86 needs "
           f"AMX-BF16 at level amx, or AVX512_BF16 where vdpbf16ps outruns the widening "
           f"float32 path (feature "
           f"avx512bf16-fast: AMD; on Intel the C kernel harness runs the family), the "
           f"avx512bf16 build group and an ISA level of avx512 or above; ARM64 FEAT_BF16 "
           f"and the neonbf16 group)")
LEVEL, MR, NR, FP_VALUE = DOT_FAMILIES.get(FAM["isa"], (None, 0, 0, None))


@pytest.fixture(autouse=True)
def _family_on_every_shape():
    """The size rules off: the family runs every call its guard accepts."""
    prev = _core._gemm_size_rules(False)
    try:
        yield
    finally:
        _core._gemm_size_rules(prev)


def bf(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(BF16)


def check(A, B, C=None, alpha=1.0, beta=1.0, ta=0, tb=0):
    Y = gk.gemm(A, B, C, alpha, beta, ta, tb)
    M = (A.T if ta else A).shape[0]
    N = (B.T if tb else B).shape[1]
    assert Y.shape == (M, N) and Y.dtype == BF16 and Y.flags.c_contiguous
    with np.errstate(all="ignore"):
        assert_float_close(Y, *float_oracle(A, B, C, alpha, beta, ta, tb))
    return Y


def same_bits(Y, R):
    y, r = Y.view(np.uint16), R.view(np.uint16)
    nan = np.isnan(Y.astype(np.float64)) & np.isnan(R.astype(np.float64))
    assert np.array_equal(np.where(nan, 0, y), np.where(nan, 0, r))


def fallback(A, B, C=None, alpha=1.0, beta=1.0, ta=0, tb=0):
    return _core._gemm_with_fallback(A, B, C, alpha, beta, ta, tb)


# A 1 x 4 by 4 x 1 product whose value tells the summation orders apart: sequential float32
# sums (every widening family) give 0; pairs added odd k first (vdpbf16ps) 2**-24; pair
# sums rounded to odd, then added (BFMMLA) 3 * 2**-24: 1 + 2**-24 -> 1 + 2**-23, then
# 2**-24 - 1 exact, then (1 + 2**-23) + (2**-24 - 1) = 3 * 2**-24 exact.
FP_A = [1.0, 2.0**-24, 2.0**-24, -1.0]


def ran_dot_family(A_extra=None):
    A = bf([FP_A + ([] if A_extra is None else [A_extra])])
    B = bf(np.ones((A.shape[1], 1)))
    return float(gk.gemm(A, B)[0, 0]) == FP_VALUE


def test_family_and_fingerprint():
    assert FAM["level"] == LEVEL and FAM["mr"] == MR and FAM["nr"] == NR
    # only a product's last K block is not a whole number of the instruction's depth
    assert FAM["kc"] % KSTEP[FAM["isa"]] == 0 and FAM["kc_sub"] % KSTEP[FAM["isa"]] == 0
    assert FAM["fallback"] is not None and FAM["fallback"] != FAM["isa"]
    assert ran_dot_family()                       # accepted: the dot family ran
    A = bf([FP_A])
    assert float(fallback(A, bf(np.ones((4, 1))))[0, 0]) == 0.0  # sequential order
    assert not ran_dot_family(2.0**-130)          # a denormal: declined


def _shapes(f):
    mr, nr, mc, kc, nc = f["mr"], f["nr"], f["mc"], f["kc"], f["nc"]
    return [
        (mr, nr, kc),                       # one full tile, one full K block
        (mr - 1, nr + 1, kc - 1),           # edge tiles on both sides, odd K
        (mr + 1, nr - 1, kc + 1),           # second K block of depth 1 (one padded pair)
        (2 * mr + 3, 2 * nr + 5, 2 * kc + 7),
        (mr, nr, 2 * kc),                   # two full K blocks
        (mc + mr + 1, nr + 3, 5),           # past MC
        (mc + 1, 2 * nr + 1, kc + 3),       # past MC, K split, odd last block
        (mr + 1, nc + nr - 1, 9),           # past NC
        (3, nc + 1, kc + 1),                # past NC, K split
        (2, 3, 3 * kc + 1),                 # deep K
    ] + ([
        (2 * mr + 1, nr + 3, 2 * f["kc_sub"]),           # two sub-blocks of one K block
        (mc + mr - 1, nr + 1, 3 * f["kc_sub"] + 1),      # several, the last one longer
        (mr + 5, 2 * nr + 1, kc + 2 * f["kc_sub"] + 7),  # and a second K block
    ] if f["kc_sub"] else [])


def test_shapes_around_blocks():
    rng = np.random.default_rng(11)
    for i, (M, N, K) in enumerate(_shapes(FAM)):
        ta, tb = i % 2, (i // 2) % 2
        A, B, C = problem(M, N, K, BF16, ta, tb, ["M1", "N", "MN", "scalar"][i % 4], rng)
        check(A, B, C, 0.75, -1.25, ta, tb)
        check(A, B, None, 1.0, 1.0, ta, tb)


def test_edges_1_to_17():
    rng = np.random.default_rng(7)
    for m in range(1, 18):
        for n in (1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33):
            k = (m * 7 + n) % 19 + 1  # odd and even K
            A, B, C = problem(m, n, k, BF16, 0, 0, "MN", rng)
            check(A, B, C, 1.5, -0.5)
            check(A, B, None, 1.0, 0.0, 0, 0)


@pytest.mark.parametrize("cshape", ["none", "scalar", "1", "N", "1N", "M1", "11", "MN"])
@pytest.mark.parametrize("beta", [0.0, 1.0, -2.5])
def test_c_broadcasts_alpha_beta(cshape, beta):
    rng = np.random.default_rng(3)
    for (M, N, K) in [(37, 45, 29), (100, 70, 300)]:
        for ta, tb in [(0, 0), (1, 1)]:
            A, B, C = problem(M, N, K, BF16, ta, tb, cshape, rng)
            check(A, B, C, -0.375, beta, ta, tb)


@pytest.mark.parametrize("kind", ["c", "f", "neg", "slice"])
def test_strided_inputs(kind):
    """Every packer path: rows / columns contiguous, neither, negative strides; and an
    unaligned base (byte offset 1: 2-byte elements at odd addresses)."""
    rng = np.random.default_rng(5)
    for (M, N, K) in [(29, 67, 33), (15, 33, 2 * FAM["kc"] + 1)]:
        for ta, tb in [(0, 0), (1, 0), (0, 1), (1, 1)]:
            A, B, C = problem(M, N, K, BF16, ta, tb, "N", rng)
            Y = check(relayout(A, kind), relayout(B, kind), C, 2.0, 0.5, ta, tb)
            same_bits(Y, gk.gemm(A, B, C, 2.0, 0.5, ta, tb))
    A, B, _ = problem(21, 45, 37, BF16, 0, 0, "none", rng)
    buf = np.zeros(2 * A.size + 1, np.uint8)
    Au = np.frombuffer(buf.data, np.uint8, 2 * A.size, 1).view(BF16).reshape(A.shape)
    Au[...] = A
    assert Au.ctypes.data % 2 == 1
    same_bits(check(Au, B), gk.gemm(A, B))
    # broadcast rows / columns (stride 0)
    Ab = np.broadcast_to(A[:1], A.shape)
    Bb = np.broadcast_to(B[:, :1], B.shape)
    check(Ab, Bb)


def test_nan_inf_propagate():
    rng = np.random.default_rng(9)
    for (M, N, K) in [(20, 40, 30), (200, 150, 401)]:
        A, B, C = problem(M, N, K, BF16, 0, 0, "MN", rng)
        A[3, 5] = np.nan
        A[7, 1] = np.inf
        B[2, 11] = -np.inf
        C[0, 0] = np.nan
        Y = check(A, B, C, 1.0, 1.0)
        assert np.isnan(Y[3].astype(np.float32)).all() and np.isnan(float(Y[0, 0]))
        A2 = np.zeros((M, K), BF16)
        A2[0, 0] = np.inf
        B2 = bf(np.abs(np.where(np.isfinite(B.astype(np.float32)), B.astype(np.float32), 0)) + 1)
        Y = gk.gemm(A2, B2)
        assert np.isposinf(Y[0].astype(np.float32)).all() and (Y[1:].astype(np.float32) == 0).all()
    # products overflowing float32 give inf, as in the float32 path
    A = bf([[2.0**100, 2.0**100]])
    B = bf([[2.0**100], [2.0**100]])
    assert np.isposinf(float(gk.gemm(A, B)[0, 0]))


def test_empty_and_k0():
    C = bf(np.arange(6).reshape(2, 3))
    Y = gk.gemm(np.zeros((2, 0), BF16), np.zeros((0, 3), BF16), C, 1.0, 2.0)
    assert np.array_equal(Y.astype(np.float32), 2 * C.astype(np.float32))
    assert gk.gemm(np.zeros((0, 5), BF16), np.zeros((5, 3), BF16)).shape == (0, 3)


# ---- the guard ------------------------------------------------------------------------------


def _put(x, pos, v):
    x = x.copy()
    x[pos] = v
    return x


@pytest.mark.parametrize("where", ["A first", "A last", "B first", "B last", "B middle"])
@pytest.mark.parametrize("layout", [(0, 0), (1, 0), (0, 1), (1, 1), "slice"])
def test_guard_declines_denormals(where, layout):
    """A bfloat16 denormal anywhere in A' or B' (also in a vector's masked tail): the call
    runs on the fallback family -- its result bit for bit, within the bound."""
    rng = np.random.default_rng(21)
    ta, tb = (0, 0) if layout == "slice" else layout
    M, N, K = 19, 45, 37
    A, B, C = problem(M, N, K, BF16, ta, tb, "N", rng)
    den = np.uint16(0x0005).view(BF16)  # 5 * 2**-133
    big = bf(2.0**110)
    if where.startswith("A"):
        pos = (0, 0) if where == "A first" else (A.shape[0] - 1, A.shape[1] - 1)
        A = _put(A, pos, den)
        # make the lost product visible: its partner in B' is huge
        r = pos[0] if ta else pos[1]
        B = _put(B, (slice(None), r) if tb else (r, slice(None)), big)
    else:
        pos = {"B first": (0, 0), "B last": (B.shape[0] - 1, B.shape[1] - 1),
               "B middle": (B.shape[0] // 2, B.shape[1] // 2)}[where]
        B = _put(B, pos, den)
        r = pos[1] if tb else pos[0]
        A = _put(A, (r, slice(None)) if ta else (slice(None), r), big)
    if layout == "slice":
        A, B = relayout(A, "slice"), relayout(B, "slice")
    Y = check(A, B, C, 1.0, 1.0, ta, tb)
    same_bits(Y, fallback(A, B, C, 1.0, 1.0, ta, tb))
    # the denormal's products are kept (vdpbf16ps would read it as zero)
    assert np.abs(Y.astype(np.float64)).max() > 2.0**-30


@pytest.mark.parametrize("M,N,K", [(1, 100, 64), (3, 70, 37), (19, 45, 33), (2, 33, 1)])
def test_guard_sees_transposed_w(M, N, K):
    """A denormal in W stored [N, K] (transB, a Linear layer's weight: the thin path packs
    W's columns 16 x 16 words at a time) is seen by the guard folded into that packing:
    its product with a moderate partner (the only nonzero one of its output) survives.
    Flushed, as vdpbf16ps would, the output would be 0."""
    rng = np.random.default_rng(33)
    den = np.uint16(0x0005).view(BF16)  # 5 * 2**-133
    W = rng.uniform(0.5, 2.0, (N, K)).astype(BF16)
    A = np.zeros((M, K), BF16)
    r = K // 2
    cols = sorted({0, N // 2, N - 1})
    for n in cols:
        W[n, r] = den
    A[:, r] = bf(2.0**60)
    Y = gk.gemm(A, W, transB=1)
    want = (2.0**60 * W[:, r].astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(Y.astype(np.float32), np.broadcast_to(want, (M, N)))
    assert (Y[:, cols].astype(np.float64) == 5 * 2.0**-73).all()


def test_guard_declines_flushable_products():
    """Nonzero exponents summing below -112: products (or sums) could fall below 2**-126
    and be flushed; the call runs on the fallback family, which keeps them."""
    A = bf([[2.0**-70]])
    B = bf([[2.0**-70]])
    Y = gk.gemm(A, B, None, 2.0**60)  # the float32 sum 2**-140 is denormal; alpha rescales
    assert float(Y[0, 0]) == 2.0**-80
    rng = np.random.default_rng(23)
    A, B, C = problem(33, 50, 70, BF16, 0, 0, "MN", rng)
    A = _put(A, (5, 7), bf(2.0**-57))    # emin(A) = -57
    B = _put(B, (3, 4), bf(2.0**-56))    # emin(B) = -56: sum -113 < -112
    Y = check(A, B, C, 1.0, 1.0)
    same_bits(Y, fallback(A, B, C))


def test_guard_boundary_accepted_exactly():
    """At eA + eB = -112 the family runs (the fingerprint shows it) and no product or
    running sum is flushed: the smallest nonzero one is 2**-126, a normal float32."""
    a = [2.0**-56 * (1 + 2.0**-7), -(2.0**-56)] + FP_A
    b = [2.0**-56, 2.0**-56, 1.0, 1.0, 1.0, 1.0]
    A, B = bf([a]), bf(np.array(b)[:, None])
    Y = check(A, B, None, 2.0**100, 1.0)  # exact sum 2**-119 + 2**-24: the 2**-119 is
    # below the sums' ulp, the fingerprint is the dot family's (sequential sums give 0)
    assert float(Y[0, 0]) == FP_VALUE * 2.0**100
    # cancellation down to the grid: 2**-112 (1 + 2**-7) - 2**-112 = 2**-119, kept
    A2, B2 = bf([a[:2]]), bf(np.array(b[:2])[:, None])
    assert float(gk.gemm(A2, B2, None, 2.0**119)[0, 0]) == 1.0
    # one exponent lower: declined
    A3 = bf([[2.0**-57] + FP_A])
    B3 = bf(np.array([2.0**-56, 1, 1, 1, 1])[:, None])
    same_bits(gk.gemm(A3, B3), fallback(A3, B3))
    assert float(gk.gemm(A3, B3)[0, 0]) == 0.0  # sequential: the 2**-24 was lost


def test_guard_zeros_and_specials():
    """Zeros (either sign) carry no small exponent: accepted.  Infinities and NaN: accepted
    by vdpbf16ps (it rounds to nearest, as the float32 path), declined by BFMMLA; either
    way they propagate per IEEE."""
    extra = [0.0, -0.0, np.inf, -np.inf, np.nan]
    for v in extra:
        A = bf([FP_A + [v]])
        B = bf(np.array([1, 1, 1, 1, 0])[:, None])
        Y = gk.gemm(A, B)
        if np.isnan(v) or np.isinf(v):
            assert np.isnan(float(Y[0, 0]))  # v * 0
            if FAM["isa"] == "neonbf16":
                same_bits(Y, fallback(A, B))
        else:
            assert float(Y[0, 0]) == FP_VALUE  # the dot family ran
    # all-zero operands
    Z = np.zeros((5, 6), BF16)
    assert (gk.gemm(Z, Z.T).astype(np.float32) == 0).all()


@pytest.mark.parametrize("where", ["A", "B"])
def test_guard_large_exponents(where):
    """BFMMLA rounds to odd, so its guard also declines a call whose exponents could carry
    a partial sum to 2**128 (here 2**126 against 1.0 at depth 4-5); the round-to-nearest
    families (vdpbf16ps, tdpbf16ps) take it.  Which one ran shows in the fingerprint row
    (FP_A against ones), also when the large element sits in a pack_b (the pack keeps
    what its packers saw of B'), in one row of A (the thin path) and on two threads.  A
    sum that does overflow gives inf either way (alpha = 0.5 keeps it from hiding in the
    rounding to bfloat16), the fallback's bits."""
    declines = FAM["isa"] == "neonbf16"
    big = 2.0**126
    if where == "A":   # row 0 the fingerprint; the large element in A' meets a zero of B'
        A = bf([FP_A + [big], FP_A + [0.0]])
        B = bf(np.array([[1.0, 1.0, 1.0, 1.0, 0.0]]).T)
    else:              # column 0 the fingerprint; the large element in B' column 1
        A = bf([FP_A + [0.0]])
        B = bf(np.array([[1.0, 1.0, 1.0, 1.0, 1.0], [big, 0.0, 0.0, 0.0, 0.0]]).T)
    want = 0.0 if declines else FP_VALUE
    for threads in (1, 2):
        with gk.threads(threads):
            Y = gk.gemm(A, B)
            assert float(Y[0, 0]) == want
            same_bits(Y, fallback(A, B)) if declines else check(A, B)
            assert float(gk.gemm(A, gk.pack_b(B, "gemm"))[0, 0]) == want
            assert float(gk.gemm(A[:1], gk.pack_b(B, "gemm"))[0, 0]) == want
    # overflowing sums: inf, the fallback's bits
    A2 = bf(np.full((MR + 5, 8), 0.5))
    B2 = bf(np.full((8, 2 * NR + 3), 0.5))
    A2[3, :2], B2[:2] = bf(2.0**127), bf(1.0)
    want2 = fallback(A2, B2, None, 0.5)
    assert np.isinf(want2[3].astype(np.float32)).all()
    same_bits(gk.gemm(A2, B2, None, 0.5), want2)
    same_bits(gk.gemm(A2, gk.pack_b(B2, "gemm"), None, 0.5), want2)
    same_bits(gk.gemm(A2[3:4], B2, None, 0.5), want2[3:4])
    assert ran_dot_family()


@pytest.mark.parametrize("seed", range(4))
def test_random_tiny_scales_match_a_path(seed):
    """Random data at random scales down to the denormal range: either path, always within
    the bound (the guard keeps the dot family away from flushes)."""
    rng = np.random.default_rng(100 + seed)
    M, N, K = 23, 41, 57
    for ea, eb in [(-60, -60), (-56, -56), (-40, -80), (-126, 10), (-133, 0)]:
        A = bf(rng.standard_normal((M, K)) * 2.0**ea)
        B = bf(rng.standard_normal((K, N)) * 2.0**eb)
        check(A, B, None, 2.0**(-(ea + eb) // 2), 1.0)


def test_size_rule():
    """With the size rules on (the default), a call with fewer rows, a shallower K or fewer
    multiply-adds than the family's rule runs on the fallback (its bits); one at every
    limit runs on the family (its fingerprint)."""
    rows, depth, macs = FAM["min_rows"], FAM["min_depth"], FAM["min_macs"]
    if not (rows or depth or macs):
        pytest.skip(f"{FAM['isa']} has no size rule")
    _core._gemm_size_rules(True)
    m, k = max(rows, 1), max(depth, 4)
    n = max(-(-macs // (m * k)), 1)
    # FP_A's fingerprint in every row, zero-padded to depth k
    A = bf(np.tile(np.array(FP_A + [0.0] * (k - 4)), (m, 1)))
    B = bf(np.ones((k, n)))
    assert float(gk.gemm(A, B)[0, 0]) == FP_VALUE                  # at the limits: runs
    below = [(A[:m - 1], B), (A[:, :k - 1], B[:k - 1]), (A, B[:, :n - 1])]
    for A2, B2 in below:
        (m2, k2), n2 = A2.shape, B2.shape[1]
        if m2 and k2 and n2 and (m2 < rows or k2 < depth or m2 * k2 * n2 < macs):
            same_bits(gk.gemm(A2, B2), fallback(A2, B2))
            if k2 >= 4:
                assert float(gk.gemm(A2, B2)[0, 0]) == 0.0  # the sequential order ran
    if rows > 1:  # B' packed for the family: fewer rows still run on it (no repacking)
        n1 = max(-(-macs // ((rows - 1) * k)), 1)
        A1, B1 = A[:rows - 1], bf(np.ones((k, n1)))
        got = gk.gemm(A1, gk.pack_b(B1, "gemm"))
        assert float(got[0, 0]) == FP_VALUE
        _core._gemm_size_rules(False)
        same_bits(got, gk.gemm(A1, B1))  # the family's bits, B packed per call
        _core._gemm_size_rules(True)
    _core._gemm_size_rules(False)
    assert float(gk.gemm(A[:1, :4], B[:4, :1])[0, 0]) == FP_VALUE  # rules off: runs


@pytest.mark.parametrize("where", ["A", "B"])
def test_guard_with_pack_b_and_threads(where):
    """The guard sees every element whether B' comes packed per call or from pack_b (the
    pack keeps what its packers saw, so a call does not scan B' again), and whichever
    thread packed it: a denormal anywhere in A' or B' gives the fallback's bits, also for
    one row of A (the thin path).  The denormal's products are the only terms of one
    output row (column) and visible there (3 * 2**-33), where a flush would leave
    zeros."""
    rng = np.random.default_rng(31)
    M, N, K = 96, 2 * NR * 4 + 7, 300
    A, B, _ = problem(M, N, K, BF16, 0, 0, "none", rng)
    den, big = np.uint16(0x0003).view(BF16), bf(2.0**100)
    spots = ([(0, 0), (M - 1, K - 1), (M // 2, K // 3)] if where == "A" else
             [(0, 0), (K - 1, N - 1), (K // 2, N - NR // 2)])
    for threads in (1, 2):
        with gk.threads(threads):
            for r, c in spots:
                A2, B2 = A.copy(), B.copy()
                if where == "A":   # row r of A': the denormal at depth c alone; B' row c big
                    A2[r] = 0
                    A2[r, c] = den
                    B2[c] = big
                    want = fallback(A2, B2)
                    line = want[r]
                else:              # column c of B': the denormal at depth r alone; A' column r big
                    B2[:, c] = 0
                    B2[r, c] = den
                    A2[:, r] = big
                    want = fallback(A2, B2)
                    line = want[:, c]
                assert (line.astype(np.float32) == np.float32(3 * 2.0**-33)).all()
                same_bits(check(A2, B2), want)
                pb = gk.pack_b(B2, "gemm")
                same_bits(gk.gemm(A2, pb), want)
                row = r if where == "A" else 0
                same_bits(gk.gemm(A2[row:row + 1], pb), want[row:row + 1])
            same_bits(gk.gemm(A, gk.pack_b(B, "gemm")), check(A, B))
    assert ran_dot_family()  # the dot family runs where nothing is declined
