"""QLinearMatMul with float8 inputs takes the float32 family's FMA micro-kernel where every
product real_a * real_b is exact in float32 (per-tensor parameters whose values have few
significant bits and keep every product normal and finite: float8 with power-of-two scales,
integer zero points), and its separately rounded one everywhere else.  The definition
rounds each product before its add; with exact products a fused multiply-add rounds each
step the same way, so the two micro-kernels give the same bits.

Every case here is checked bit for bit against the definition evaluated in float32 one
product at a time (oracles.qlinear_f8_sequential), on every kernel path:
  - eligible inputs under the default rule, under the rounded kernel only (mode 0) and
    under the FMA kernel forced (mode 2): all three equal the definition;
  - inputs whose products are inexact (an ordinary scale) or would leave the normal range:
    the default rule keeps the rounded kernel, so it equals the definition, and forcing
    the FMA kernel there gives different bits (so these inputs do tell the kernels apart,
    and the equalities above are not vacuous);
  - NaN and infinite codes among eligible values.
"""
from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest

import oracles as o

E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
E4M3FNUZ = np.dtype(ml_dtypes.float8_e4m3fnuz)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
E5M2FNUZ = np.dtype(ml_dtypes.float8_e5m2fnuz)
U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
F32 = np.float32


@contextlib.contextmanager
def fma_mode(mode):
    from gemmkit import _core
    old = _core._qlinear_f8_fma_mode(mode)
    try:
        yield
    finally:
        _core._qlinear_f8_fma_mode(old)


def finite_codes(dt):
    codes = np.arange(256, dtype=np.uint8)
    return codes[np.isfinite(codes.view(dt).astype(np.float64))]


def rand_q(rng, shape, dt):
    if o.is_float8(dt):
        return rng.choice(finite_codes(dt), size=shape).astype(np.uint8).view(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dt)


def run_modes(args, modes=(1, 0, 2)):
    import gemmkit as gk
    out = {}
    for mode in modes:
        with fma_mode(mode):
            out[mode] = gk.qlinear_matmul(*args)
    return out


def codes(y):
    return o.canonical_f8_codes(y) if o.is_float8(y.dtype) else y


def definition(args):
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = args
    M, N = a.shape[0], b.shape[1]
    return o.qlinear_f8_sequential(
        a, np.full(M, a_scale, F32), np.full(M, a_zp, a_zp.dtype),
        b, np.full(N, b_scale, F32), np.full(N, b_zp, b_zp.dtype), y_scale, y_zp)


def zero(dt, v=0):
    return np.asarray(v).astype(dt)[()] if o.is_float8(dt) else np.asarray(v, dt)[()]


# (a dtype, b dtype, a scale, b scale, a zero point, b zero point): per-tensor, values
# of at most 4 (float8) or 9 (uint8/int8 less an integer zero point) significant bits
ELIGIBLE = [
    (E4M3FN, E4M3FN, 0.5, 0.25, 0, 0),
    (E5M2, E4M3FNUZ, 2.0 ** -3, 2.0 ** 4, 0, 0),
    (U8, E4M3FN, 2.0 ** -6, 1.0, 7, 0),
    (E4M3FN, S8, 1.0, 2.0 ** -5, 0, -3),
    (E5M2FNUZ, E5M2, 2.0 ** 20, 2.0 ** -30, 0, 0),
]


def _shapes():
    from gemmkit import _core
    fam = _core._gemm_family_info(np.float32)
    mr, nr, kc = fam["mr"], fam["nr"], fam["kc"]
    return [(mr + 3, nr + 5, 300), (2 * mr + 1, nr - 1 or 1, kc + 3), (1, 2 * nr + 1, 77)]


@pytest.mark.parametrize("ydt", [E4M3FN, S8, U8], ids=lambda d: d.name)
@pytest.mark.parametrize("case", range(len(ELIGIBLE)))
def test_exact_products_take_fma_with_the_definitions_bits(isa, case, ydt):
    adt, bdt, sa, sb, za, zb = ELIGIBLE[case]
    rng = np.random.default_rng(100 + case)
    for M, N, K in _shapes():
        a, b = rand_q(rng, (M, K), adt), rand_q(rng, (K, N), bdt)
        y_scale = F32(np.sqrt(K) * sa * sb * 8)
        y_zp = zero(ydt, 3 if ydt == U8 else 0)
        args = (a, F32(sa), zero(adt, za), b, F32(sb), zero(bdt, zb), y_scale, y_zp)
        want = codes(definition(args))
        out = run_modes(args)
        for mode in (1, 0, 2):
            assert np.array_equal(codes(out[mode]), want), (isa, mode, M, N, K)


# Inputs whose products are not all exact in float32: the default rule keeps the rounded
# kernel.  Each output's first two products cancel, x*y then x*(-y), and the rest are zero:
# rounded, p - p = 0; fused, fl(p - x*y) is p's own rounding error, not 0 wherever x*y is
# inexact, and a y_scale of 2^-60 turns that into a saturated int8 instead of 0.  So an
# FMA kernel on these inputs is seen in almost every output.
INEXACT = [
    ("ordinary scales", E4M3FN, E4M3FN, 0.0123, 0.37),
    ("uint8 scale 1/3", U8, E4M3FN, 1 / 3, 0.5),
    ("e5m2 x e4m3fnuz", E5M2, E4M3FNUZ, 0.5, 0.1),
]


def nonzero_codes(dt):
    c = finite_codes(dt)
    return c[c.view(dt).astype(np.float64) != 0]


@pytest.mark.parametrize("case", range(len(INEXACT)), ids=[c[0] for c in INEXACT])
def test_inexact_products_keep_the_rounded_kernel(isa, case):
    from gemmkit import _core
    _, adt, bdt, sa, sb = INEXACT[case]
    rng = np.random.default_rng(200 + case)
    M, N, K = 40, 70, 300
    a = np.zeros((M, K), np.uint8).view(adt) if o.is_float8(adt) else np.zeros((M, K), adt)
    b = np.zeros((K, N), np.uint8).view(bdt)
    x = rng.choice(nonzero_codes(adt), size=M).astype(np.uint8)
    a[:, 0] = a[:, 1] = x.view(adt) if o.is_float8(adt) else x.astype(adt)
    y = rng.choice(nonzero_codes(bdt), size=N).astype(np.uint8)
    b[0, :] = y.view(bdt)
    b[1, :] = (y ^ 0x80).view(bdt)  # the sign bit: -y in every float8 format
    args = (a, F32(sa), zero(adt), b, F32(sb), zero(bdt), F32(2.0 ** -60), zero(S8))
    want = definition(args)
    assert not want.any()  # p - p
    out = run_modes(args)
    assert np.array_equal(out[1], want)
    assert np.array_equal(out[0], want)
    if _core._gemm_family_info(np.float32)["fused"]:  # families with an FMA form
        assert np.count_nonzero(out[2]) > M * N // 2, "the inputs do not tell the kernels apart"


@pytest.mark.parametrize("ydt", [E4M3FN, S8], ids=lambda d: d.name)
def test_products_near_the_float32_range_edges(isa, ydt):
    """Power-of-two scales whose products leave the normal range (below FLT_MIN, above
    FLT_MAX) are not eligible; just inside it they are.  Each equals the definition."""
    rng = np.random.default_rng(7)
    M, N, K = 17, 33, 130
    for sa, sb in ((2.0 ** -60, 2.0 ** -60),   # smallest products subnormal
                   (2.0 ** -54, 2.0 ** -54),   # 2^-9 * 2^-54 squared = 2^-126: normal
                   (2.0 ** 60, 2.0 ** 60),     # 448 * 2^60 squared > FLT_MAX
                   (2.0 ** 55, 2.0 ** 55)):    # just inside: sums may still overflow
        a, b = rand_q(rng, (M, K), E4M3FN), rand_q(rng, (K, N), E4M3FN)
        y_scale = F32(min(sa * sb * 64, 3e38))
        args = (a, F32(sa), zero(E4M3FN), b, F32(sb), zero(E4M3FN), y_scale, zero(ydt))
        want = codes(definition(args))
        out = run_modes(args, modes=(1, 0))
        for mode in (1, 0):
            assert np.array_equal(codes(out[mode]), want), (isa, mode, sa, sb)


@pytest.mark.parametrize("dt", [E4M3FN, E5M2, E5M2FNUZ], ids=lambda d: d.name)
def test_nan_and_infinite_codes_among_eligible_values(isa, dt):
    rng = np.random.default_rng(11)
    M, N, K = 20, 35, 90
    all_codes = np.arange(256, dtype=np.uint8)
    special = all_codes[~np.isfinite(all_codes.view(dt).astype(np.float64))]
    a, b = rand_q(rng, (M, K), dt), rand_q(rng, (K, N), E4M3FN)
    a_codes = a.view(np.uint8).copy()
    a_codes[rng.integers(0, M, 6), rng.integers(0, K, 6)] = rng.choice(special, 6)
    a = a_codes.view(dt)
    for ydt in (E4M3FN, S8):
        args = (a, F32(0.5), zero(dt), b, F32(2.0), zero(E4M3FN), F32(16.0), zero(ydt))
        want = codes(definition(args))
        out = run_modes(args, modes=(1, 0))
        for mode in (1, 0):
            assert np.array_equal(codes(out[mode]), want), (isa, mode, ydt)
