"""Shapes derived from each int8 family's own block sizes (read from the module, not copied):
every tile edge, the small-M limit on both sides, depths around the family's depth step,
on every kernel path, against the exact oracle."""
from __future__ import annotations

import numpy as np
import pytest

import oracles as o
from strategies import rand_extreme

U8, S8 = np.uint8, np.int8


def _info():
    from gemmkit import _core
    return _core._qgemm_family_info()


def _around(x, lo=1):
    return sorted({v for v in (x - 1, x, x + 1) if v >= lo})


def _shapes(f):
    """(M, N, K) triples around the family's mr, nr, kstep and small-M limit."""
    ms = set(_around(f["mr"])) | {2 * f["mr"] + 1, 3}
    if f["smallm_max"]:
        ms |= set(_around(f["smallm_max"]))
    ns = set(_around(f["nr"])) | {2 * f["nr"] + 1, 1}
    ks = set(_around(f["kstep"])) | {4 * f["kstep"] + 1, 1, 67}
    out = []
    for m in sorted(ms):
        for n in sorted(ns):
            for k in sorted(ks):
                out.append((m, n, k))
    return out


def test_family_info_matches_cpu_info(isa):
    import gemmkit
    f = _info()
    from gemmkit import _core
    assert f["isa"] == gemmkit.cpu_info()["engines"]["qgemm"]
    # the most specific int8 family at or below the level: the level's own, or -- for a
    # level without one (avx512 has Gemm families only) -- the best usable one below it
    levels = _core._levels()
    assert levels.index(f["isa"]) <= levels.index(isa)
    if f["isa"] != isa:
        compiled_int8 = {"scalar", "sse41", "avx2", "avxvnni", "avx512vnni", "amx",
                         "neon", "neondot", "i8mm"}
        assert isa not in compiled_int8, (isa, f["isa"])
        below = [lv for lv in gemmkit.cpu_info()["available"]
                 if levels.index(lv) < levels.index(isa) and lv in compiled_int8]
        assert f["isa"] == below[0], (isa, f["isa"], below)
    assert f["mr"] >= 1 and f["nr"] >= 1 and f["kstep"] >= 1
    assert 0 <= f["smallm_max"] <= 64 and f["kchunk"] >= 1024
    assert f["smallm_wide_max"] == 0 or f["smallm_max"] < f["smallm_wide_max"] <= 64


@pytest.mark.parametrize("signs", ["u8s8", "s8u8", "u8u8", "s8s8"])
def test_tile_edges_exact(isa, signs):
    gk = pytest.importorskip("gemmkit")
    ta = U8 if signs[:2] == "u8" else S8
    tb = U8 if signs[2:] == "u8" else S8
    rng = np.random.default_rng(len(isa) * 7 + len(signs))
    for (m, n, k) in _shapes(_info()):
        a = rand_extreme(rng, (m, k), ta)
        b = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (k, n)).astype(tb)
        azp = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, (m,)).astype(ta)
        bzp = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (n,)).astype(tb)
        np.testing.assert_array_equal(gk.matmul_integer(a, b, azp, bzp),
                                      o.matmul_integer(a, b, azp, bzp), err_msg=str((m, n, k)))
        args = (a, np.full((m,), 0.02, np.float32), azp, b,
                rng.uniform(0.01, 0.03, (n,)).astype(np.float32), bzp, np.float32(0.5),
                np.array(3, ta))
        exp, _ = o.qlinear_matmul(*args)
        np.testing.assert_array_equal(gk.qlinear_matmul(*args), exp, err_msg=str((m, n, k)))


def test_depth_around_the_chunk_exact(isa):
    """K just below, at and above the driver's depth chunk, small M/N."""
    gk = pytest.importorskip("gemmkit")
    kc = _info()["kchunk"]
    rng = np.random.default_rng(5)
    for k in (kc - 1, kc, kc + 1):
        a = rng.integers(0, 256, (2, k)).astype(U8)
        b = rng.integers(-128, 128, (k, 3)).astype(S8)
        np.testing.assert_array_equal(gk.matmul_integer(a, b, np.uint8(7), np.int8(-3)),
                                      o.matmul_integer(a, b, np.uint8(7), np.int8(-3)))


@pytest.mark.parametrize("offset", [1, 16, 48, 63])
def test_small_m_b_at_every_alignment(isa, offset):
    """B rows 64-byte multiples long but starting off a cache line: the small-M paths run
    the columns up to the first line boundary as a chunk of their own (all sign mixes,
    with and without zero points, N a multiple of 64 and not)."""
    gk = pytest.importorskip("gemmkit")
    rng = np.random.default_rng(offset)
    for n in (64, 320, 4096 + 64):
        for m in (1, 3, 16):
            for ta, tb in ((U8, S8), (S8, U8)):
                k = 35
                buf = np.empty(k * n + 64, np.uint8)
                start = (-buf.ctypes.data + offset) % 64
                b = buf[start:start + k * n].view(tb).reshape(k, n)
                b[...] = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (k, n))
                assert b.ctypes.data % 64 == offset
                a = rand_extreme(rng, (m, k), ta)
                for zps in ((), (ta(3), tb(-1 if tb == S8 else 200))):
                    np.testing.assert_array_equal(gk.matmul_integer(a, b, *zps),
                                                  o.matmul_integer(a, b, *zps),
                                                  err_msg=str((m, n, offset, zps)))


@pytest.mark.parametrize("n", [2048, 3072, 4096])
def test_small_m_at_cache_set_strides_exact(isa, n):
    """B rows a multiple of 2 KB apart (and 3 KB, not): the pair families' 8-row passes and
    row groups of at most 8 (gk_qsmallm_pair.inc), with per-row zero points, per-row
    QLinearMatMul scales and zero points (each group's epilogue rows), depth tails."""
    gk = pytest.importorskip("gemmkit")
    rng = np.random.default_rng(n)
    for m in (1, 2, 4, 8, 9, 12, 16):
        k = 37
        a = rand_extreme(rng, (m, k), U8)
        b = rng.integers(-128, 128, (k, n)).astype(S8)
        azp = rng.integers(0, 256, (m,)).astype(U8)
        np.testing.assert_array_equal(gk.matmul_integer(a, b, azp, np.int8(-3)),
                                      o.matmul_integer(a, b, azp, np.int8(-3)), err_msg=str(m))
        sa = (rng.random(m) * 0.02 + 0.001).astype(np.float32)
        sy = (rng.random((m, 1)) + 0.5).astype(np.float32)
        yzp = rng.integers(0, 256, (m, 1)).astype(U8)
        args = (a, sa, azp, b, np.float32(0.01), np.int8(2), sy, yzp)
        np.testing.assert_array_equal(gk.qlinear_matmul(*args), o.qlinear_matmul(*args)[0],
                                      err_msg=str(m))


@pytest.mark.parametrize("m", [9, 10, 13, 16, 17, 27, 32, 33])
def test_small_m_with_a_large_b_exact(isa, m):
    """Many rows and K * N >= 1 MiB: the zmm families' staged small-M path (128-row depth
    stages, gk_qsmallm_quad.inc) on either side of its row threshold and up to
    smallm_wide_max, with a depth tail, per-row zero points (the column-sum row), a
    column-major A, and B off a cache line."""
    gk = pytest.importorskip("gemmkit")
    rng = np.random.default_rng(m)
    k, n = 1100 + m, 1030
    for ta, tb in ((U8, S8), (S8, U8), (U8, U8)):
        a = rand_extreme(rng, (m, k), ta)
        b = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (k, n + 1)).astype(tb)[:, 1:]
        azp = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, (m,)).astype(ta)
        bzp = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (n,)).astype(tb)
        for aa in (a, np.asfortranarray(a)):
            for zps in ((), (azp, bzp)):
                with gk.threads(1):  # threads split N: each would see less than 1 MiB of B
                    got = gk.matmul_integer(aa, b, *zps)
                np.testing.assert_array_equal(got, o.matmul_integer(a, b, *zps),
                                              err_msg=str((m, ta, tb, len(zps))))


def _chunked_oracle(a, b, azp, bzp):
    """o.matmul_integer over column blocks (B here is larger than the last-level cache;
    the oracle widens B to 64 bits)."""
    n = b.shape[1]
    out = np.empty((a.shape[0], n), np.int32)
    for j in range(0, n, 1024):
        bz = bzp if np.ndim(bzp) == 0 else bzp[j:j + 1024]
        out[:, j:j + 1024] = o.matmul_integer(a, b[:, j:j + 1024], azp, bz)
    return out


def test_small_m_b_beyond_the_llc_exact(isa):
    """One row (with and without the column-sum row) against a B larger than the last-level
    cache, whole rows on one thread: the zmm families read each 16-row pass linearly
    first (gk_qsmallm_quad.inc, gk_smq_touch_pass); a depth tail, a column tail, B off a
    cache line, int8 and uint8 B."""
    gk = pytest.importorskip("gemmkit")
    llc = gk.cpu_info()["caches"].get("l3") or (32 << 20)
    k = 16 * 64 + 5
    n = llc // k + 77
    rng = np.random.default_rng(41)
    for tb in (S8, U8):
        info = np.iinfo(tb)
        whole = rng.integers(info.min, info.max + 1, (k, n + 1), dtype=np.int16).astype(tb)
        a = rand_extreme(rng, (1, k), U8)
        for b in (whole[:, 1:], whole[:, :n]):
            for zps in ((), (np.uint8(200), tb(7))):
                with gk.threads(1):
                    got = gk.matmul_integer(a, b, *zps)
                want = _chunked_oracle(a, b, *(zps or (None, None)))
                np.testing.assert_array_equal(got, want, err_msg=str((tb, len(zps))))


@pytest.mark.parametrize("m", [7, 8, 16, 31, 32])
def test_small_m_tile_route_exact(isa, m):
    """The amx family's tile route of the small-M path (gk_qsmallm_tiles.inc: 8 to 48 rows
    with the column-sum row, K * N >= 1 MiB) -- on the other paths the staged or 16-row
    routes: chunks of 2048 columns ending inside N, a depth under one 64-deep tile step,
    a last 256-row stage ending inside a step, one to three row tiles (32 rows + the
    column-sum row), QLinearMatMul's per-row requantization, every sign mix."""
    gk = pytest.importorskip("gemmkit")
    rng = np.random.default_rng(100 + m)
    for k, n in ((300, 4200), (40, 26300), (600, 2049)):
        for ta, tb in ((U8, S8), (S8, S8), (U8, U8)):
            a = rand_extreme(rng, (m, k), ta)
            b = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (k, n)).astype(tb)
            azp = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, (m,)).astype(ta)
            bzp = tb(rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1))
            for zps in ((), (azp, bzp)):
                with gk.threads(1):
                    got = gk.matmul_integer(a, b, *zps)
                np.testing.assert_array_equal(got, o.matmul_integer(a, b, *zps),
                                              err_msg=str((m, k, n, ta, tb, len(zps))))
        sa = (rng.random(m) * 0.02 + 0.001).astype(np.float32)
        sy = (rng.random((m, 1)) + 0.5).astype(np.float32)
        yzp = rng.integers(0, 256, (m, 1)).astype(U8)
        a = rand_extreme(rng, (m, k), U8)
        b = rng.integers(-128, 128, (k, n)).astype(S8)
        args = (a, sa, rng.integers(0, 256, (m,)).astype(U8), b, np.float32(0.01), np.int8(2), sy, yzp)
        with gk.threads(1):
            got = gk.qlinear_matmul(*args)
        np.testing.assert_array_equal(got, o.qlinear_matmul(*args)[0], err_msg=str((m, k, n)))
