"""The int8 tall route (many rows against a small B, A read in place: gk_qgemm_tall_fn;
gk_qtall_zmm.inc's vpdpbusd variant on avx512vnni and amx, amx's tile variant past K = 48,
gk_qtall_pair.inc's vpmaddwd variant on avx2) against the oracle and against the packed
path, on every int8 path.

The route is forced on (mode 2: every shape where A's rows are contiguous) and off (mode
0) through gemmkit._core._qgemm_tall_mode, so its row blocks (zmm: 12 / 8 / 5 / 4 rows by
strip width; avx2: 12 / 6 / 4 / 3; 32 for the tiles) and their tails, depth tails (K % 4,
K % 64), column strips of 1..4 vectors (16 or 4 columns each) and their tails, every sign
mix, zero-point and scale layout and output type are covered at small sizes; families
without the route run the packed path in both modes (the results must match all the
same).
"""
from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

import oracles as o
from strategies import rand_int8

U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
SIGN_COMBOS = [(U8, U8), (U8, S8), (S8, U8), (S8, S8)]


def _gk():
    import gemmkit
    return gemmkit


@pytest.fixture
def tall_mode():
    """Sets the tall-route mode for a test and restores the default (1) afterwards."""
    from gemmkit import _core
    old = _core._qgemm_tall_mode(1)
    yield _core._qgemm_tall_mode
    _core._qgemm_tall_mode(old)


def _both(tall_mode, fn):
    """fn() with the tall route forced on and off: the two results, which must agree."""
    tall_mode(2)
    on = fn()
    tall_mode(0)
    off = fn()
    tall_mode(1)
    np.testing.assert_array_equal(on, off)
    return on


# rows: the vpdpbusd variant's 12-row blocks (one 16-column vector), 8 (two), 5 (three),
# 4 (four), the vpmaddwd variant's 12 / 6 / 4 / 3 (one to four 4-column vectors) and the
# tile variant's 32-row blocks (amx, K > 48), and their tails; depths with every K % 4,
# whole and partial 64-deep tile chunks, a deep one; columns across 1..4 vectors, strips /
# 32-column panels and their tails
ROWS = [1, 4, 5, 7, 12, 13, 25, 64, 131]
DEPTHS = [1, 2, 3, 4, 5, 27, 32, 49, 63, 64, 65, 100, 128, 300]
COLS = [1, 12, 15, 16, 17, 28, 40, 48, 64, 65, 100, 200]


@pytest.mark.parametrize("adt,bdt", SIGN_COMBOS, ids=["u8u8", "u8s8", "s8u8", "s8s8"])
def test_tall_exact_every_shape(isa, tall_mode, adt, bdt):
    rng = np.random.default_rng(7)
    for m in ROWS:
        for k in DEPTHS[:: 2 if m > 25 else 1]:
            for n in COLS[:: 3 if k > 64 else 1]:
                a = rand_int8(rng, (m, k), adt)
                b = rand_int8(rng, (k, n), bdt)
                for azp, bzp in [(None, None), (adt.type(3), bdt.type(-1 if bdt == S8 else 200)),
                                 (rand_int8(rng, (m,), adt), rand_int8(rng, (n,), bdt))]:
                    got = _both(tall_mode, lambda: _gk().matmul_integer(a, b, azp, bzp))
                    want = o.matmul_integer(a, b, azp, bzp)
                    assert got.dtype == np.int32
                    np.testing.assert_array_equal(got, want, err_msg=f"{m}x{k}x{n} {adt}{bdt}")


def test_tall_operand_layouts(isa, tall_mode):
    """A rows apart from their length (a slice of a wider array), in reverse order; B
    column-major and strided; a folded batch sharing B; extreme values."""
    rng = np.random.default_rng(8)
    for (m, k, n) in [(150, 27, 32), (64, 33, 16), (40, 6, 70)]:
        wide = rand_int8(rng, (m, k + 13), U8)
        b = rand_int8(rng, (k, n), S8)
        for a in (wide[:, :k], wide[::-1, 5:5 + k], np.full((m, k), 255, np.uint8)):
            for bb in (b, np.asfortranarray(b), np.full((k, n), -128, np.int8)):
                want = o.matmul_integer(np.ascontiguousarray(a), np.ascontiguousarray(bb), 1, -2)
                got = _both(tall_mode, lambda: _gk().matmul_integer(a, bb, np.uint8(1), np.int8(-2)))
                np.testing.assert_array_equal(got, want)
        a3 = rand_int8(rng, (3, m, k), S8)
        want = o.matmul_integer(a3, b, None, None)
        np.testing.assert_array_equal(_both(tall_mode, lambda: _gk().matmul_integer(a3, b)), want)


@pytest.mark.parametrize("out", [U8, S8])
def test_tall_qlinear(isa, tall_mode, out):
    """QLinearMatMul through the route: per-tensor and per-column b scale / zero point,
    per-row a scale / zero point, both output types (the vector requantization)."""
    rng = np.random.default_rng(9)
    for (m, k, n) in [(131, 27, 40), (70, 64, 16), (13, 3, 65)]:
        a = rand_int8(rng, (m, k), U8)
        b = rand_int8(rng, (k, n), S8)
        yz = out.type(rng.integers(0, 100))
        for a_s, a_z, b_s, b_z in [
            (np.float32(0.02), np.uint8(3), np.float32(0.01), np.int8(1)),
            (rng.uniform(0.01, 0.03, (m, 1)).astype(np.float32), rand_int8(rng, (m, 1), U8),
             rng.uniform(0.001, 0.01, n).astype(np.float32), rand_int8(rng, (n,), S8)),
        ]:
            args = (a, a_s, a_z, b, b_s, b_z, np.float32(0.4), yz)
            want, _ = o.qlinear_matmul(*args)
            got = _both(tall_mode, lambda: _gk().qlinear_matmul(*args))
            assert got.dtype == out and want is not None
            np.testing.assert_array_equal(got, want)


def test_tall_default_rule_and_threads(isa):
    """Shapes the default rule gives the route (conv-as-GEMM) on 1 and 2 threads: exact
    and identical."""
    gk = _gk()
    rng = np.random.default_rng(10)
    for (m, k, n) in [(3136, 27, 32), (1000, 48, 96), (784, 192, 64)]:
        a = rand_int8(rng, (m, k), U8)
        b = rand_int8(rng, (k, n), S8)
        want = o.matmul_integer(a, b, 128, None)
        outs = []
        for t in (1, 2):
            with gk.threads(t):
                outs.append(gk.matmul_integer(a, b, np.uint8(128)))
        for got in outs:
            np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(sys.platform != "linux", reason="guard page through libc mprotect")
def test_tall_reads_nothing_past_a(isa, tall_mode):
    """A's last row ends where an inaccessible page begins: the route's 4-byte broadcasts
    and its partial last depth group must not touch it (a read there kills the process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    buf = mmap.mmap(-1, 2 * page)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    rng = np.random.default_rng(11)
    try:
        for (m, k) in [(13, 27), (100, 3), (64, 33), (40, 100), (37, 64), (31, 130)]:
            whole = np.frombuffer(buf, np.uint8, count=page)
            a = whole[page - m * k:].reshape(m, k)
            a[...] = rand_int8(rng, (m, k), U8)
            b = rand_int8(rng, (k, 20), S8)
            want = o.matmul_integer(a.copy(), b, None, None)
            assert libc.mprotect(ctypes.c_void_p(addr + page), ctypes.c_size_t(page), 0) == 0  # PROT_NONE
            try:
                tall_mode(2)
                got = _gk().matmul_integer(a, b)
            finally:
                libc.mprotect(ctypes.c_void_p(addr + page), ctypes.c_size_t(page), 3)  # READ | WRITE
                tall_mode(1)
            np.testing.assert_array_equal(got, want)
            del whole, a
    finally:
        libc.mprotect(ctypes.c_void_p(addr + page), ctypes.c_size_t(page), 3)
