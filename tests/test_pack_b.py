"""gemmkit.pack_b: a PackedB gives bit for bit the results of the unpacked call, on every
path, thread count, pickle round trip and path switch; wrong uses raise clearly."""
from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

import oracles as o
from strategies import rand_int8


def _gk():
    import gemmkit
    return gemmkit


@pytest.fixture
def split_everything():
    """Every product splits over the threads it is given (tiny shapes included)."""
    from gemmkit import _core
    old = _core._set_work_scale(0.0)
    try:
        yield
    finally:
        _core._set_work_scale(old)


def _int8(rng, shape, dt):
    return rand_int8(rng, shape, dt)


# M: small M (families with row-count kernels read the packed B from 1 row, the others
# run the small-M path below 8 rows), a few panels; K past the int8 kc (depth blocks,
# small M included); N not a multiple of any nr
_INT8_SHAPES = [(1, 70, 33), (1, 1500, 100), (3, 1100, 70), (5, 600, 200), (7, 300, 65),
                (8, 300, 65), (40, 1000, 100), (130, 2100, 129)]


@pytest.mark.parametrize("sa,sb", [(np.uint8, np.int8), (np.uint8, np.uint8),
                                   (np.int8, np.int8), (np.int8, np.uint8)])
def test_matmul_integer_packed_equals_unpacked(isa, sa, sb, split_everything):
    gk = _gk()
    rng = np.random.default_rng(11)
    for (m, k, n) in _INT8_SHAPES:
        a = _int8(rng, (m, k), sa)
        b = _int8(rng, (k, n), sb)
        azp = _int8(rng, (m,), sa)
        bzp = _int8(rng, (n,), sb)
        want = o.matmul_integer(a, b, azp, bzp)
        pb = gk.pack_b(b, "matmul_integer", b_zero_point=bzp)
        from gemmkit import _core
        assert pb.packed and pb.isa == _core._qgemm_family_info()["isa"]
        for t in (1, 2, 3, 8):
            with gk.threads(t):
                got = gk.matmul_integer(a, pb, azp)
            np.testing.assert_array_equal(got, want, err_msg=f"{m}x{k}x{n} threads={t}")
        # a batch of A matrices sharing the packed B (folded, and one by one)
        a3 = _int8(rng, (3, m, k), sa)
        np.testing.assert_array_equal(gk.matmul_integer(a3, pb),
                                      gk.matmul_integer(a3, b, None, bzp))
        np.testing.assert_array_equal(gk.matmul_integer(a3[:, ::-1], pb),
                                      gk.matmul_integer(a3[:, ::-1], b, None, bzp))


def test_qlinear_packed_equals_unpacked(isa, split_everything):
    gk = _gk()
    rng = np.random.default_rng(12)
    for (m, k, n) in _INT8_SHAPES:
        a = _int8(rng, (m, k), np.uint8)
        b = _int8(rng, (k, n), np.int8)
        asc = rng.uniform(0.005, 0.02, m).astype(np.float32)
        azp = _int8(rng, (m,), np.uint8)
        bsc = rng.uniform(0.005, 0.02, n).astype(np.float32)
        bzp = _int8(rng, (n,), np.int8)
        ys, yzp = np.float32(0.3), np.int8(-3)
        want = gk.qlinear_matmul(a, asc, azp, b, bsc, bzp, ys, yzp)
        np.testing.assert_array_equal(
            want, o.qlinear_matmul(a, asc, azp, b, bsc, bzp, ys, yzp)[0])
        pb = gk.pack_b(b, "qlinear_matmul", b_zero_point=bzp, b_scale=bsc)
        for t in (1, 2, 5):
            with gk.threads(t):
                got = gk.qlinear_matmul(a, asc, azp, pb, None, None, ys, yzp)
            np.testing.assert_array_equal(got, want)


_GEMM_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32, np.uint32,
                np.int64, np.uint64]


def _gemm_paths(gk):
    return gk.cpu_info()["available"]


@pytest.mark.parametrize("dt", _GEMM_DTYPES, ids=lambda d: np.dtype(d).name)
def test_gemm_packed_equals_unpacked(dt, split_everything):
    gk = _gk()
    from gemmkit import _core
    rng = np.random.default_rng(13)
    default = gk.cpu_info()["isa"]
    try:
        for path in _gemm_paths(gk):
            _core._set_isa(path)
            # thin (in-place path when unpacked; packed: 1-3 rows run the family's strip
            # kernel over the panels, several tiles side by side, then the column tail),
            # K past the float kc, odd edges
            for (m, k, n) in [(1, 70, 33), (2, 1100, 231), (3, 530, 200), (5, 600, 40),
                              (40, 1100, 100), (70, 130, 129)]:
                for tb in (0, 1):
                    if np.dtype(dt).kind in "iu":
                        a = rng.integers(0, 60, (m, k)).astype(dt)
                        b = rng.integers(0, 60, (k, n)).astype(dt)
                        c = rng.integers(0, 60, (n,)).astype(dt)
                    else:
                        a = rng.standard_normal((m, k)).astype(dt)
                        b = rng.standard_normal((k, n)).astype(dt)
                        c = rng.standard_normal((n,)).astype(dt)
                    bb = np.ascontiguousarray(b.T) if tb else b
                    want = gk.gemm(a, bb, c, 2, 3, transB=tb)
                    pb = gk.pack_b(bb, "gemm", transB=tb)
                    assert pb.packed and pb.transB == tb
                    for t in (1, 2, 4):
                        with gk.threads(t):
                            got = gk.gemm(a, pb, c, 2, 3, transB=tb)
                        assert got.tobytes() == want.tobytes(), (path, m, k, n, tb, t)
            if np.dtype(dt) == np.float32:  # the unpacked result is right, too
                a = rng.standard_normal((9, 50)).astype(dt)
                b = rng.standard_normal((50, 20)).astype(dt)
                np.testing.assert_allclose(gk.gemm(a, gk.pack_b(b, "gemm")), a @ b,
                                           rtol=1e-5, atol=1e-5)
    finally:
        _core._set_isa(default)


def test_pickle_round_trip_and_immutability():
    gk = _gk()
    rng = np.random.default_rng(14)
    a = _int8(rng, (20, 300), np.uint8)
    b = _int8(rng, (300, 50), np.int8)
    bzp = _int8(rng, (50,), np.int8)
    pb = gk.pack_b(b, "matmul_integer", b_zero_point=bzp)
    pb2 = pickle.loads(pickle.dumps(pb))
    assert pb2.op == pb.op and pb2.isa == pb.isa and pb2.nbytes == pb.nbytes
    np.testing.assert_array_equal(gk.matmul_integer(a, pb2), gk.matmul_integer(a, b, None, bzp))
    # the pack owns copies: changing the caller's arrays changes nothing
    want = gk.matmul_integer(a, pb)
    b[:] = 0
    bzp[:] = 0
    np.testing.assert_array_equal(gk.matmul_integer(a, pb), want)
    assert not pb.b.flags.writeable
    with pytest.raises(AttributeError):
        pb.op = "gemm"
    # nbytes: the canonical copies plus the packed block (at least B again)
    assert pb.nbytes >= 2 * b.nbytes
    g = gk.pack_b(np.ones((30, 40), np.float32), "gemm", transB=1)
    g2 = pickle.loads(pickle.dumps(g))
    assert g2.transB == 1
    x = np.ones((5, 40), np.float32)
    np.testing.assert_array_equal(gk.gemm(x, g2, transB=1), gk.gemm(x, np.ones((30, 40), np.float32), transB=1))
    with pytest.raises(TypeError):
        gk.PackedB()


def test_pack_made_on_another_path_still_exact():
    """A pack made under one path, used under another (the call packs B as usual)."""
    gk = _gk()
    from gemmkit import _core
    rng = np.random.default_rng(15)
    a = _int8(rng, (33, 500), np.uint8)
    b = _int8(rng, (500, 70), np.int8)
    want = o.matmul_integer(a, b, None, None)
    af = rng.standard_normal((33, 500)).astype(np.float32)
    bf = rng.standard_normal((500, 70)).astype(np.float32)
    default = gk.cpu_info()["isa"]
    paths = gk.cpu_info()["available"]
    try:
        for made in paths:
            _core._set_isa(made)
            pb = gk.pack_b(b, "matmul_integer")
            pg = gk.pack_b(bf, "gemm")
            for used in paths:
                _core._set_isa(used)
                np.testing.assert_array_equal(gk.matmul_integer(a, pb), want)
                assert gk.gemm(af, pg).tobytes() == gk.gemm(af, bf).tobytes()
    finally:
        _core._set_isa(default)


@pytest.mark.parametrize("m", [1, 3, 8, 37])
def test_batched_b_packs_each_matrix(isa, m, split_everything):
    """A batched B packs every matrix; each matrix of the product reads its own packing,
    with B's batch dims broadcast against A's (and per-batch zero points and scales)."""
    gk = _gk()
    rng = np.random.default_rng(17 + m)
    k, n = 600, 70  # past the int8 kc: depth blocks
    b4 = _int8(rng, (2, 3, k, n), np.uint8)
    bzp = _int8(rng, (2, 3, 1, n), np.uint8)
    pb = gk.pack_b(b4, "matmul_integer", b_zero_point=bzp)
    assert pb.packed and pb.nbytes >= 2 * b4.nbytes
    for a in (_int8(rng, (2, 3, m, k), np.int8),     # one A per B
              _int8(rng, (4, 2, 1, m, k), np.int8),  # A broadcast over B's batch dims
              _int8(rng, (m, k), np.int8)):          # one A for every B
        want = o.matmul_integer(a, b4, None, bzp)
        for t in (1, 2, 3):
            with gk.threads(t):
                np.testing.assert_array_equal(gk.matmul_integer(a, pb), want,
                                              err_msg=f"A {a.shape} threads={t}")
    # QLinearMatMul: per-batch, per-column b scales and zero points
    b3 = _int8(rng, (3, k, n), np.int8)
    bs = rng.uniform(0.002, 0.01, (3, 1, n)).astype(np.float32)
    bz = _int8(rng, (3, 1, n), np.int8)
    a = _int8(rng, (3, m, k), np.uint8)
    args = (np.float32(0.02), np.uint8(100))
    ys, yz = np.float32(0.7), np.int8(5)
    pq = gk.pack_b(b3, "qlinear_matmul", b_scale=bs, b_zero_point=bz)
    assert pq.packed
    want = o.qlinear_matmul(a, *args, b3, bs, bz, ys, yz)[0]
    np.testing.assert_array_equal(gk.qlinear_matmul(a, *args, pq, None, None, ys, yz), want)
    # pickled to another process, it packs again and gives the same bits
    np.testing.assert_array_equal(
        gk.qlinear_matmul(a, *args, pickle.loads(pickle.dumps(pq)), None, None, ys, yz), want)


def test_unpackable_arguments_are_held_and_exact():
    gk = _gk()
    rng = np.random.default_rng(16)
    a3 = _int8(rng, (2, 5, 40), np.uint8)
    # 1-D B: held unpacked, same results
    b1 = _int8(rng, (40,), np.int8)
    np.testing.assert_array_equal(gk.matmul_integer(a3, gk.pack_b(b1, "matmul_integer")),
                                  gk.matmul_integer(a3, b1))
    # float8 b for QLinearMatMul
    bf8 = rng.standard_normal((40, 30)).astype(ml_dtypes.float8_e4m3fn)
    a = _int8(rng, (5, 40), np.uint8)
    args = (np.float32(0.1), np.uint8(3))
    bs, bz = np.float32(0.5), ml_dtypes.float8_e4m3fn(0)
    pq = gk.pack_b(bf8, "qlinear_matmul", b_scale=bs, b_zero_point=bz)
    assert not pq.packed
    got = gk.qlinear_matmul(a, *args, pq, None, None, np.float32(0.2), np.uint8(7))
    want = gk.qlinear_matmul(a, *args, bf8, bs, bz, np.float32(0.2), np.uint8(7))
    np.testing.assert_array_equal(got, want)


def test_python_number_zero_point_and_scale():
    """The ops take a Python int zero point and a Python float / int scale; a pack made
    with them must give the same products, pickled or not (they were stored as int64 /
    float64 arrays, which every call then rejected)."""
    gk = _gk()
    rng = np.random.default_rng(17)
    b = _int8(rng, (40, 12), np.int8)
    a = _int8(rng, (5, 40), np.uint8)
    pb = gk.pack_b(b, "matmul_integer", b_zero_point=3)
    want = gk.matmul_integer(a, b, None, 3)
    np.testing.assert_array_equal(want, o.matmul_integer(a, b, None, np.int8(3)))
    for p in (pb, pickle.loads(pickle.dumps(pb))):
        assert p.b_zero_point == 3
        np.testing.assert_array_equal(gk.matmul_integer(a, p), want)
    head = (np.float32(0.02), np.uint8(3))
    tail = (np.float32(0.5), np.uint8(128))
    for bzp, bs in ((np.int8(-2), 0.25), (-2, 0.25), (np.array([-2], np.int8), 0.25),
                    (-2, np.float32(0.25)), (-2, 1)):
        want = gk.qlinear_matmul(a, *head, b, bs, bzp, *tail)
        pq = gk.pack_b(b, "qlinear_matmul", b_zero_point=bzp, b_scale=bs)
        for p in (pq, pickle.loads(pickle.dumps(pq))):
            np.testing.assert_array_equal(gk.qlinear_matmul(a, *head, p, None, None, *tail),
                                          want)
    # the op's own range rule still holds
    with pytest.raises(ValueError, match="out of range"):
        gk.pack_b(b, "matmul_integer", b_zero_point=300)


def test_canonical_copies_cannot_be_made_writeable():
    """PackedB is immutable: its B (and zero point, scale) cannot be switched back to
    writeable, so the packed block and the canonical B (what pickles) never disagree."""
    gk = _gk()
    pb = gk.pack_b(np.ones((16, 8), np.int8), "matmul_integer",
                   b_zero_point=np.zeros(8, np.int8))
    for arr in (pb.b, pb.b_zero_point):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr.flags.writeable = True
        base = arr
        while isinstance(base, np.ndarray):
            with pytest.raises(ValueError):
                base.flags.writeable = True
            base = base.base


def test_deep_batched_zero_point():
    """A b_zero_point of 35+ dims (NumPy allows 64; np.broadcast_shapes stops at 32)."""
    gk = _gk()
    b = np.ones((4, 3), np.int8)
    bzp = np.zeros((1,) * 34 + (2, 1, 3), np.int8)
    a = np.ones((1,) * 34 + (2, 5, 4), np.uint8)
    pb = gk.pack_b(b, "matmul_integer", b_zero_point=bzp)
    np.testing.assert_array_equal(gk.matmul_integer(a, pb), gk.matmul_integer(a, b, None, bzp))


def test_errors():
    gk = _gk()
    b = np.ones((10, 4), np.int8)
    a = np.ones((3, 10), np.uint8)
    with pytest.raises(ValueError, match="op must be one of"):
        gk.pack_b(b, "matmul")
    # only pack_b makes one: a PackedB with no B behind it is never built
    for make in (lambda: gk.PackedB(), lambda: gk.PackedB.__new__(gk.PackedB),
                 lambda: gk.PackedB.__new__(gk.PackedB, object())):
        with pytest.raises(TypeError, match="made by gemmkit.pack_b"):
            make()
    with pytest.raises(TypeError, match="B must be"):
        gk.pack_b(np.ones((10, 4), np.float32), "matmul_integer")
    with pytest.raises(ValueError, match="b_scale"):
        gk.pack_b(b, "qlinear_matmul", b_zero_point=np.int8(0))
    with pytest.raises(ValueError, match="b_scale"):
        gk.pack_b(b, "matmul_integer", b_scale=np.float32(1))
    # a shape the op rejects: the message shows B, not pack_b's internal one-row A
    with pytest.raises(ValueError, match=r"^pack_b: b_zero_point has shape \(5,\); .* "
                       r"for B \(10, 4\)$"):
        gk.pack_b(b, "matmul_integer", b_zero_point=np.zeros(5, np.int8))
    # any transB but 0 on an int8 op names pack_b and the op, not gemm's own check
    for tb in (1, 2, "x", True):
        with pytest.raises(ValueError, match="transB is a gemm argument; matmul_integer"):
            gk.pack_b(b, "matmul_integer", transB=tb)
    with pytest.raises(ValueError, match="gemm has no"):
        gk.pack_b(np.ones((3, 3), np.float32), "gemm", b_zero_point=np.float32(0))
    with pytest.raises(ValueError, match="2-D"):
        gk.pack_b(np.ones((2, 3, 3), np.float32), "gemm")
    pb = gk.pack_b(b, "matmul_integer", b_zero_point=np.int8(1))
    with pytest.raises(ValueError, match="b_zero_point must be left unset"):
        gk.matmul_integer(a, pb, None, np.int8(1))
    with pytest.raises(ValueError, match="made for matmul_integer"):
        gk.gemm(np.ones((3, 10), np.float32), pb)
    with pytest.raises(ValueError, match="made for matmul_integer"):
        gk.qlinear_matmul(a, np.float32(1), np.uint8(0), pb, None, None, np.float32(1),
                          np.uint8(0))
    # shape mismatch with A: the op's own message, naming both
    with pytest.raises(ValueError):
        gk.matmul_integer(np.ones((3, 11), np.uint8), pb)
    pg = gk.pack_b(np.ones((10, 4), np.float32), "gemm")
    with pytest.raises(TypeError):
        gk.gemm(np.ones((3, 10), np.float64), pg)
    with pytest.raises(ValueError, match="transB=0"):
        gk.gemm(np.ones((3, 4), np.float32), pg, transB=1)


@pytest.mark.parametrize("op", ["matmul_integer", "qlinear_matmul"])
def test_batched_zero_point_and_scale_accepted_as_by_the_op(op):
    """A b_zero_point (and b_scale) with batch dims of its own: the op accepts it with a
    batched A, so pack_b must too, and the pack gives the op's result."""
    gk = _gk()
    rng = np.random.default_rng(7)
    b = rng.integers(-128, 128, (3, 4), dtype=np.int8)
    a = rng.integers(0, 256, (2, 2, 3), dtype=np.uint8)
    bzp = rng.integers(-128, 128, (2, 1, 4), dtype=np.int8)
    if op == "matmul_integer":
        want = gk.matmul_integer(a, b, None, bzp)
        assert np.array_equal(want, o.matmul_integer(a, b, None, bzp))
        pb = gk.pack_b(b, op, b_zero_point=bzp)
        got = gk.matmul_integer(a, pb)
    else:
        bs = (rng.random((2, 1, 4)) + 0.5).astype(np.float32) * 0.01
        args = (np.float32(0.02), np.uint8(3))
        tail = (np.float32(0.5), np.uint8(128))
        want = gk.qlinear_matmul(a, *args, b, bs, bzp, *tail)
        assert np.array_equal(want, o.qlinear_matmul(a, *args, b, bs, bzp, *tail)[0])
        pb = gk.pack_b(b, op, b_zero_point=bzp, b_scale=bs)
        got = gk.qlinear_matmul(a, *args, pb, None, None, *tail)
    assert got.shape == (2, 2, 4)
    assert np.array_equal(got, want)
    # a zero point the op rejects still raises
    with pytest.raises(ValueError, match="b_zero_point"):
        gk.pack_b(b, "matmul_integer", b_zero_point=np.zeros((2, 3, 4), np.int8))
