"""Depth blocks against the exact oracles, on every int8 kernel path.

A packed product deeper than 3/2 of the family's kc (``_core._qgemm_family_info()["kc"]``;
up to that depth one block) runs in nearly equal depth blocks of at most kc
(gk_qgemm_driver.c, k_blocks): each micro-kernel call
sees one block, the first stores its int32 sums (in a scratch, for every output kind),
the middle ones add to them, the last one adds them and
finishes the tile with the whole depth's row / column sums.  These tests put K just below,
at and above one, two and three blocks, at the int32 wrap (K = 40000, 70000 with the
extreme values), with per-tensor zero points (the separable correction) and per-row /
per-column ones, for MatMulInteger and QLinearMatMul, in products wide enough for several
column blocks and tall enough for several row groups of the scratch, and
through the batch routes (fold, gathered fold, B cache).  M stays above the small-M limit
so that the packed path runs.  Every test runs with both block sizes of the packed path:
the default ones and those of a CPU with a slow L3 (Intel's: a fraction of L2 each, for
the families that set slow_l3_block_div), whichever this CPU takes.
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


def _info():
    from gemmkit import _core
    return _core._qgemm_family_info()


@pytest.fixture(autouse=True, params=[0, 1], ids=["l3_fast", "l3_slow"])
def l3_slow(request):
    """The blocks of a CPU with a fast (0) or a slow (1) L3, forced on any CPU."""
    from gemmkit import _core
    old = _core._qgemm_slow_l3_mode(request.param)
    try:
        yield request.param
    finally:
        _core._qgemm_slow_l3_mode(old)


def _blocking(m, n, k, cached=False):
    from gemmkit import _core
    return _core._qgemm_blocking(m, n, k, cached)


def _rand(rng, shape, dt):
    """Half uniform, half the range's ends."""
    dt = np.dtype(dt)
    if rng.integers(2):
        return rand_extreme(rng, shape, dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dt)


def _assert_same(got, want, what=""):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        idx = tuple(bad[0])
        raise AssertionError(f"{what}: {len(bad)} of {want.size} differ; first at {idx}: "
                             f"got {got[idx]}, expected {want[idx]}")


def _packed_m(f):
    """A row count the packed path runs (above the small-M limit), not a multiple of mr."""
    return max(f["smallm_max"] + 1, 2 * f["mr"]) + 1


def _depths(f):
    """K around one, two and three blocks, one k-step past a block and around the deepest
    single block (3/2 kc)."""
    kc, ks = f["kc"], f["kstep"]
    return sorted({kc - 1, kc, kc + 1, kc + ks, kc + kc // 2, kc + kc // 2 + 1,
                   2 * kc - 1, 2 * kc, 2 * kc + 3, 3 * kc + 1})


def test_family_info_has_a_depth_block(isa):
    f = _info()
    assert f["kc"] % f["kstep"] == 0 and f["kc"] >= f["kstep"]
    assert f["kc"] < f["kchunk"]


def test_slow_l3_is_intels():
    """By default the slow-L3 blocks are an Intel CPU's (what the vendor string says)."""
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        assert not _info()["l3_slow"]
        return
    try:
        with open("/proc/cpuinfo") as fh:
            vendor = next(ln.split(":")[1].strip() for ln in fh if ln.startswith("vendor_id"))
    except (OSError, StopIteration):
        pytest.skip("no /proc/cpuinfo vendor_id to compare with")
    assert _info()["l3_slow"] == (vendor == "GenuineIntel"), vendor


def test_slow_l3_blocks_take_a_fraction_of_l2(isa, l3_slow):
    """With slow-L3 blocks a family with slow_l3_block_div keeps its packed A block and
    its B block each within L2 / div (also for few rows, whose B block is otherwise up to
    1 MiB); without them, or for a family without the field, the A block takes half of L2
    and the B block L2 (1 MiB for few rows)."""
    import gemmkit
    f = _info()
    l2 = gemmkit.cpu_info()["caches"]["l2"]
    if not 128 << 10 <= l2 <= 64 << 20:
        l2 = 1 << 20  # the driver's default for an unreported L2
    div = f["slow_l3_block_div"] if l3_slow else 0
    for m, k in ((4096, 2 * f["kc"] + 3), (4096, f["kc"]), (100, 3 * f["kc"])):
        if m <= f["smallm_max"]:
            continue
        bl = _blocking(m, 1 << 16, k)
        kbp = -(-bl["kcb"] // f["kstep"]) * f["kstep"]
        a_cap = l2 // (div or 2) // (kbp * f["a_elem_bytes"]) // f["mr"] * f["mr"]
        b_max = l2 // div if div else (min(l2, 1 << 20) if m <= 128 else l2)
        b_cap = b_max // (kbp * f["b_elem_bytes"]) // f["nr"] * f["nr"]
        assert bl["mc"] == max(min(m, a_cap), f["mr"]), (m, k, bl, div)
        assert bl["nc"] == max(b_cap, f["nr"]), (m, k, bl, div)


@pytest.mark.parametrize("signs", SIGNS, ids=SIGN_IDS)
def test_matmul_integer_around_kc(isa, signs):
    """MatMulInteger at depths around the blocks, per-tensor zero points (the separable
    correction) and per-row / per-column ones, whole and partial tiles."""
    gk = _gk()
    f = _info()
    ta, tb = signs
    rng = np.random.default_rng(11 + f["kc"])
    m, n = _packed_m(f), 2 * f["nr"] + 3
    for k in _depths(f):
        a = _rand(rng, (m, k), ta)
        b = _rand(rng, (k, n), tb)
        for azp, bzp in ((None, None), (_rand(rng, (), ta), _rand(rng, (), tb)),
                         (_rand(rng, (m,), ta), _rand(rng, (n,), tb))):
            _assert_same(gk.matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp),
                         f"K={k}")


@pytest.mark.parametrize("ydt", [U8, S8], ids=["y_u8", "y_s8"])
def test_qlinear_matmul_around_kc(isa, ydt):
    """QLinearMatMul (the partial sums in a scratch) at depths around the blocks: scales
    and zero points per tensor, per row / per column, and a multiplier grid."""
    gk = _gk()
    f = _info()
    rng = np.random.default_rng(23 + f["kc"])
    m, n = _packed_m(f), 2 * f["nr"] + 3
    for i, k in enumerate(_depths(f)):
        ta, tb = SIGNS[i % 4]
        a = _rand(rng, (m, k), ta)
        b = _rand(rng, (k, n), tb)
        if i % 2:
            azp, sa = _rand(rng, (m,), ta), rng.uniform(0.5, 2, (m,)).astype(np.float32)
            bzp, sb = _rand(rng, (n,), tb), rng.uniform(0.5, 2, (n,)).astype(np.float32)
        else:
            azp, sa = _rand(rng, (), ta), np.float32(1.25)
            bzp, sb = _rand(rng, (), tb), np.float32(0.75)
        sy = np.float32(k * 40)
        yzp = _rand(rng, (), ydt)
        got = gk.qlinear_matmul(a, sa, azp, b, sb, bzp, sy, yzp)
        o.check_qlinear(got, a, sa, azp, b, sb, bzp, sy, yzp)


@pytest.mark.parametrize("k", [40000, 70000])
def test_int32_wrap_in_blocks(isa, k):
    """The int32 wrap across blocks: A = 255 / -128 and B = -128 everywhere (every partial
    sum and the total wrap), per-tensor and per-row / per-column zero points, int32 and
    requantized outputs."""
    gk = _gk()
    f = _info()
    m, n = _packed_m(f), f["nr"] + 1
    rng = np.random.default_rng(k)
    for ta, tb in SIGNS:
        a = np.full((m, k), np.iinfo(ta).max if ta == U8 else np.iinfo(ta).min, ta)
        b = np.full((k, n), np.iinfo(tb).min, tb)
        a[1, ::3] = 0  # one row that differs
        for azp, bzp in ((None, None), (_rand(rng, (m,), ta), _rand(rng, (n,), tb))):
            _assert_same(gk.matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp),
                         f"K={k} {ta}{tb}")
        azp, bzp = _rand(rng, (), ta), _rand(rng, (), tb)
        args = (a, np.float32(1e-9), azp, b, np.float32(3.0), bzp, np.float32(0.5),
                np.array(7, U8))
        o.check_qlinear(gk.qlinear_matmul(*args), *args)


def _row_sample(m, group):
    """Rows at the edges of every group of `group` rows, and the last ones."""
    rows = {0, 1, m - 2, m - 1}
    for g in range(group, m, group):
        rows |= {g - 1, g, g + 1}
    return np.array(sorted(r for r in rows if 0 <= r < m))


def test_few_rows_pack_smaller_b_blocks(isa):
    """Up to 128 rows a B block holds at most 1 MiB (or the whole L2 where that is
    smaller); past 128 rows, L2.  Both sides of that edge, with two column blocks, are
    exact."""
    gk = _gk()
    f = _info()
    k = 768
    bl_few = _blocking(128, 1 << 20, k)
    few, many = bl_few["nc"], _blocking(129, 1 << 20, k)["nc"]
    kbp = -(-bl_few["kcb"] // f["kstep"]) * f["kstep"]  # the packed depth of a B block
    assert few <= many and (few == many or few * kbp * f["b_elem_bytes"] <= 1 << 20), (few, many)
    rng = np.random.default_rng(11)
    for m in (f["smallm_wide_max"] + 1, 128, 129):
        if m <= f["smallm_max"]:
            continue
        nc = _blocking(m, 1 << 20, k)["nc"]
        n = nc + f["nr"] + 5  # two column blocks
        bl = _blocking(m, n, k)
        assert bl["nc"] == nc < n, bl
        a = _rand(rng, (m, k), U8)
        b = _rand(rng, (k, n), S8)
        azp, bzp = _rand(rng, (), U8), _rand(rng, (n,), S8)
        _assert_same(gk.matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp),
                     f"MatMulInteger {m}x{k}x{n}")


def test_wide_and_tall_products_in_blocks(isa):
    """Several column blocks (N past the B block) and several row groups of the
    partial-sum scratch (M * nc * 4 bytes past its budget; int32 and requantized outputs
    alike): the scratch origin moves with both.  Checked on a sample of rows around every
    group edge."""
    gk = _gk()
    f = _info()
    # a product this large takes kc_deep blocks where the family has them (amx)
    k = 2 * (f["kc_deep"] or f["kc"])
    nc = _blocking(4096, 1 << 20, k)["nc"]
    n = nc + f["nr"] + 5  # two column blocks
    ms = _blocking(1 << 20, n, k)["ms"]
    m = 2 * ms + 3 * f["mr"] + 1  # three row groups of the scratch (ms is rounded down)
    bl = _blocking(m, n, k)
    assert bl["nblk"] == 2 and bl["nc"] == nc and bl["ms"] == ms < m, bl
    if m * n * k > 3e9 and isa in ("scalar", "sse41"):
        pytest.skip("a product this size takes too long on this path")
    rng = np.random.default_rng(5)
    a = _rand(rng, (m, k), U8)
    b = _rand(rng, (k, n), S8)
    rows = _row_sample(m, ms)
    azp, bzp = _rand(rng, (m,), U8), _rand(rng, (), S8)
    got = gk.matmul_integer(a, b, azp, bzp)
    _assert_same(got[rows], o.matmul_integer(a[rows], b, azp[rows], bzp), "MatMulInteger")
    bzp, sb = _rand(rng, (n,), S8), rng.uniform(0.5, 2, (n,)).astype(np.float32) / 64
    for shape in ((), (m,)):
        azp, sa = _rand(rng, shape, U8), rng.uniform(0.5, 2, shape).astype(np.float32) / 64
        zr, sr = (azp, sa) if not shape else (azp[rows], sa[rows])
        args = (a, sa, azp, b, sb, bzp, np.float32(k / 8), np.array(-3, S8))
        got = gk.qlinear_matmul(*args)
        exp, _ = o.qlinear_matmul(a[rows], sr, zr, b, sb, bzp, np.float32(k / 8),
                                  np.array(-3, S8))
        _assert_same(got[rows], exp, "QLinearMatMul")


def test_deep_blocks(isa):
    """A family with kc_deep (amx) takes blocks of kc_deep where the partial sums one
    depth block passes over (ms rows x nc int32) exceed half of L2, and blocks of kc
    below that or where B comes from a cache (pack_b) laid out in blocks of kc.  Both
    against the oracle at the same shape, K past one and two deep blocks."""
    gk = _gk()
    f = _info()
    kc, kd = f["kc"], f["kc_deep"]
    m = 8 * f["mr"] + 1
    if not kd:  # then no product, however large its output, takes deeper blocks
        for k in (2 * kc + 3, 8 * kc + 1):
            assert _blocking(1 << 14, 1 << 14, k)["kcb"] <= kc
        return
    small = _blocking(m, f["nr"] + 1, 2 * kd + 3)
    assert small["kcb"] <= kc and small["nblk"] > 2, small
    n = next(n for n in range(f["nr"], 1 << 16, f["nr"])
             if _blocking(m, n, 2 * kd + 3)["kcb"] > kc)
    rng = np.random.default_rng(8)
    for k in (kd + kd // 2 + 1, 2 * kd + 3):
        bl = _blocking(m, n, k)
        assert kc < bl["kcb"] <= kd and bl["nblk"] >= 2, bl
        assert _blocking(m, n, k, cached=True)["kcb"] <= kc
        a = _rand(rng, (m, k), U8)
        b = _rand(rng, (k, n), S8)
        azp, bzp = _rand(rng, (m,), U8), _rand(rng, (n,), S8)
        want = o.matmul_integer(a, b, azp, bzp)
        _assert_same(gk.matmul_integer(a, b, azp, bzp), want, f"deep K={k}")
        pb = gk.pack_b(b, "matmul_integer", b_zero_point=bzp)
        _assert_same(gk.matmul_integer(a, pb, azp), want, f"pack_b K={k}")
        sa = rng.uniform(0.5, 2, (m,)).astype(np.float32) / 64
        sb = rng.uniform(0.5, 2, (n,)).astype(np.float32) / 64
        args = (a, sa, azp, b, sb, bzp, np.float32(k / 8), np.array(7, U8))
        o.check_qlinear(gk.qlinear_matmul(*args), *args)


@pytest.mark.parametrize("k", [700, 1100, 2100])
def test_tile_columns(isa, k):
    """Columns of many whole tiles, as a family with a column entry (ucolumn: amx) runs
    them: each tile's epilogue while the next one computes (inside its k-loop from 12
    tiles on), a depth past 1024 in sub-blocks whose sums wait in a scratch, the last
    partial tile and partial column on the micro-kernel.  int32 output with rows of 512
    (the non-temporal stores), per-row / per-column zero points and requantized outputs,
    against the oracles; on the other families, more whole-tile shapes."""
    gk = _gk()
    f = _info()
    m = 12 * f["mr"] + 5
    rng = np.random.default_rng(k)
    for n in (512, 70):
        a = _rand(rng, (m, k), U8)
        b = _rand(rng, (k, n), S8)
        _assert_same(gk.matmul_integer(a, b), o.matmul_integer(a, b), f"K={k} N={n}")
        azp, bzp = _rand(rng, (m,), U8), _rand(rng, (n,), S8)
        _assert_same(gk.matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp),
                     f"zero points K={k} N={n}")
        sb = rng.uniform(0.5, 2, (n,)).astype(np.float32) / 64
        args = (a, np.float32(0.02), np.uint8(3), b, sb, np.full(n, 1, S8), np.float32(k / 8),
                np.array(7, U8))
        o.check_qlinear(gk.qlinear_matmul(*args), *args)


def test_a_packed_once(isa):
    """One depth block, all rows in one A block, several column blocks: the driver packs
    A (and its row sums) for the first column block only and reuses it for the others;
    with several depth blocks it packs each block's A again in every column block.
    Per-row zero points make every row sum count; against the oracles."""
    gk = _gk()
    f = _info()
    m = max(2 * f["mr"] + 3, f["smallm_max"] + 1, f["smallm_wide_max"] + 1)  # packed
    rng = np.random.default_rng(11)
    for k, one_block in ((min(f["kc"], 600), True), (2 * f["kc"] + 3, False)):
        bl = _blocking(m, 1 << 14, k)
        assert (bl["nblk"] == 1) == one_block and bl["mc"] >= m, bl
        n = bl["nc"] + f["nr"] + 5
        assert _blocking(m, n, k)["nc"] < n
        a = rng.integers(0, 256, (m, k)).astype(U8)  # depth blocks differ everywhere
        b = _rand(rng, (k, n), S8)
        azp, bzp = _rand(rng, (m,), U8), _rand(rng, (n,), S8)
        sa = rng.uniform(0.5, 2, (m,)).astype(np.float32) / 64
        args = (a, sa, azp, b, np.float32(1 / 64), np.int8(2), np.float32(k / 8),
                np.array(7, U8))
        with gk.threads(1):  # more threads split the columns: one block each
            _assert_same(gk.matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp),
                         f"M={m} K={k} N={n}")
            o.check_qlinear(gk.qlinear_matmul(*args), *args)


@pytest.mark.parametrize("route", ["fold", "fold_gather", "bcache"])
def test_batches_in_blocks(isa, route):
    """Depth blocks through the batch routes: a folded product (B shared, A contiguous
    or gathered) and matrix by matrix with B packed once into the cache, whose layout is
    depth block after depth block."""
    gk = _gk()
    f = _info()
    rng = np.random.default_rng(len(route))
    m, n = _packed_m(f), f["nr"] + 3
    for k in (f["kc"] + 1, 2 * f["kc"] + 3):
        if route == "bcache":
            # B varies along the outer batch dim and is shared along the inner one
            a = _rand(rng, (2, 3, m, k), U8)
            b = _rand(rng, (2, 1, k, n), S8)
            azp = _rand(rng, (2, 3, m, 1), U8)
        else:
            a = _rand(rng, (3, m, k), S8)
            if route == "fold_gather":
                a = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
            b = _rand(rng, (k, n), U8)
            azp = _rand(rng, (3, m, 1), S8)
        bzp = _rand(rng, (n,), b.dtype)
        _assert_same(gk.matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp),
                     f"{route} K={k}")
        sa = rng.uniform(0.5, 2, azp.shape).astype(np.float32) / 64
        sb = rng.uniform(0.5, 2, (n,)).astype(np.float32)
        args = (a, sa, azp, b, sb, bzp, np.float32(k / 4), np.array(100, U8))
        o.check_qlinear(gk.qlinear_matmul(*args), *args)


def test_blocks_inside_depth_chunks(isa):
    """K past the driver's depth chunk, packed: every chunk runs in depth blocks."""
    gk = _gk()
    f = _info()
    k = f["kchunk"] + 2 * f["kc"] + 1
    m = _packed_m(f)
    rng = np.random.default_rng(3)
    a = _rand(rng, (m, k), U8)
    b = _rand(rng, (k, 3), S8)
    _assert_same(gk.matmul_integer(a, b, np.uint8(200), np.int8(-7)),
                 o.matmul_integer(a, b, np.uint8(200), np.int8(-7)), "chunked")
