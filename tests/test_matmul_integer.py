"""MatMulInteger (opset 10) against the int64 oracle, on every int8 kernel path.

Spec (DESIGN.md §2): Y = (A - a_zp) @ (B - b_zp), every product exact, the sum in int32
wrapping modulo 2**32; numpy.matmul shapes; per-row zero points for A use element m for
row m; bit-identical results on every ISA path.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracles as o
from conftest import examples
from strategies import (DEEP_K, EDGE_DIMS, batch_shapes, int8_dtypes, layouts, mnk,
                        rand_extreme, rand_int8, relayout)



def _gk():
    import gemmkit
    return gemmkit


U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
SIGN_COMBOS = [(U8, U8), (U8, S8), (S8, U8), (S8, S8)]
COMBO_IDS = ["u8u8", "u8s8", "s8u8", "s8s8"]


def assert_exact(got, want):
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.int32, got.dtype
    assert got.shape == want.shape, (got.shape, want.shape)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        idx = tuple(bad[0])
        raise AssertionError(f"{len(bad)} of {want.size} elements differ; first at {idx}: "
                             f"got {got[idx]}, expected {want[idx]}")


# Zero-point layouts beyond the size-1 ones: mode -> shape from (extent, batch), where
# the extent is M for a (per-row) and N for b (per-column).
_ZP_SHAPES = {
    "row": lambda m, batch: (m,),                       # 1-D [M]
    "row2d": lambda m, batch: (m, 1),                   # [M, 1]
    "rowbatch": lambda m, batch: tuple(batch) + (m, 1),  # [..., M, 1]
    "col": lambda n, batch: (n,),                       # 1-D [N]
    "col2d": lambda n, batch: (1, n),                   # [1, N]
    "colbatch": lambda n, batch: tuple(batch) + (1, n),  # [..., 1, N]
}


def _zp(mode, rng, dt, extent, batch=()):
    """A zero point in one of the spec's layouts (see _ZP_SHAPES and the size-1 modes)."""
    info = np.iinfo(dt)
    v = lambda shape: rng.integers(info.min, info.max + 1, size=shape).astype(dt)  # noqa: E731
    if mode == "none":
        return None
    if mode == "pyint":
        return int(v(()))
    if mode == "npscalar":
        return dt.type(v(()))
    if mode == "0d":
        return v(())
    if mode == "len1":
        return v((1,))
    return v(_ZP_SHAPES[mode](extent, batch))


A_ZP_2D = ["none", "pyint", "npscalar", "0d", "len1", "row", "row2d"]
B_ZP_2D = ["none", "pyint", "npscalar", "0d", "len1", "col", "col2d"]


# ----------------------------------------------------------------------------------------
# properties
# ----------------------------------------------------------------------------------------

@settings(max_examples=examples(150))
@given(dims=mnk(), ta=int8_dtypes(), tb=int8_dtypes(),
       azm=st.sampled_from(A_ZP_2D), bzm=st.sampled_from(B_ZP_2D),
       la=layouts(), lb=layouts(), extreme=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_2d_matches_oracle(isa, dims, ta, tb, azm, bzm, la, lb, extreme, seed):
    m, n, k = dims
    rng = np.random.default_rng(seed)
    gen = rand_extreme if extreme else rand_int8
    a = gen(rng, (m, k), ta)
    b = gen(rng, (k, n), tb)
    azp = _zp(azm, rng, ta, m)
    bzp = _zp(bzm, rng, tb, n)
    want = o.matmul_integer(a, b, azp, bzp)
    got = _gk().matmul_integer(relayout(a, la), relayout(b, lb), azp, bzp)
    assert_exact(got, want)


@settings(max_examples=examples(100))
@given(bs=batch_shapes(), m=st.sampled_from(EDGE_DIMS[:20]), n=st.sampled_from(EDGE_DIMS[:20]),
       k=st.sampled_from(EDGE_DIMS[:22]), ta=int8_dtypes(), tb=int8_dtypes(),
       azm=st.sampled_from(A_ZP_2D + ["rowbatch"]), bzm=st.sampled_from(B_ZP_2D + ["colbatch"]),
       la=layouts(), lb=layouts(), seed=st.integers(0, 2**32 - 1))
def test_batched_broadcast_matches_oracle(isa, bs, m, n, k, ta, tb, azm, bzm, la, lb, seed):
    a_batch, b_batch = bs
    out_batch = np.broadcast_shapes(a_batch, b_batch)
    rng = np.random.default_rng(seed)
    a = rand_int8(rng, a_batch + (m, k), ta)
    b = rand_int8(rng, b_batch + (k, n), tb)
    # Per-batch zero points may carry any batch dims that broadcast to the output's.
    azp = _zp(azm, rng, ta, m, out_batch)
    bzp = _zp(bzm, rng, tb, n, out_batch[len(out_batch) // 2:])
    want = o.matmul_integer(a, b, azp, bzp)
    assert want.shape == out_batch + (m, n)
    got = _gk().matmul_integer(relayout(a, la), relayout(b, lb), azp, bzp)
    assert_exact(got, want)


@settings(max_examples=examples(40))
@given(k=st.sampled_from(DEEP_K + [4096, 4097, 8191]), m=st.sampled_from([1, 2, 3, 5, 8, 17]),
       n=st.sampled_from([1, 2, 4, 7, 16, 33]), ta=int8_dtypes(), tb=int8_dtypes(),
       seed=st.integers(0, 2**32 - 1))
def test_deep_k_extreme_values(isa, k, m, n, ta, tb, seed):
    rng = np.random.default_rng(seed)
    a = rand_extreme(rng, (m, k), ta)
    b = rand_extreme(rng, (k, n), tb)
    azp = _zp("row", rng, ta, m)
    bzp = _zp("col", rng, tb, n)
    assert_exact(_gk().matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp))


# ----------------------------------------------------------------------------------------
# shapes
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ta,tb", SIGN_COMBOS, ids=COMBO_IDS)
@pytest.mark.parametrize("a_shape,b_shape,out_shape", [
    ((5,), (5, 3), (3,)),
    ((4, 5), (5,), (4,)),
    ((5,), (5,), ()),
    ((2, 3, 5), (5,), (2, 3)),
    ((5,), (2, 5, 3), (2, 3)),
    ((1,), (1, 1), (1,)),
])
def test_1d_operands_follow_numpy_matmul(isa, ta, tb, a_shape, b_shape, out_shape):
    rng = np.random.default_rng(1)
    a = rand_int8(rng, a_shape, ta)
    b = rand_int8(rng, b_shape, tb)
    want = o.matmul_integer(a, b, 3, 1)
    assert want.shape == out_shape
    np.testing.assert_array_equal(  # oracle sanity: plain numpy agrees on shapes/values
        want, np.matmul(a.astype(np.int64) - 3, b.astype(np.int64) - 1))
    got = _gk().matmul_integer(a, b, ta.type(3), tb.type(1))
    assert_exact(got, want)


@pytest.mark.parametrize("a_shape,b_shape,out_shape", [
    ((0, 4), (4, 3), (0, 3)),
    ((3, 4), (4, 0), (3, 0)),
    ((3, 0), (0, 5), (3, 5)),
    ((0, 0), (0, 0), (0, 0)),
    ((0, 3, 4), (4, 5), (0, 3, 5)),
    ((2, 3, 0), (1, 0, 5), (2, 3, 5)),
    ((0,), (0,), ()),
    ((0,), (0, 4), (4,)),
])
def test_empty_dims(isa, a_shape, b_shape, out_shape):
    a = np.ones(a_shape, np.uint8)
    b = np.ones(b_shape, np.int8)
    got = _gk().matmul_integer(a, b, np.uint8(7), np.int8(-3))
    assert got.dtype == np.int32 and got.shape == out_shape
    # K = 0 gives 0 whatever the zero points are.
    assert np.all(got == 0)


def test_k0_with_per_row_and_per_col_zero_points(isa):
    a = np.zeros((3, 0), np.int8)
    b = np.zeros((0, 4), np.uint8)
    got = _gk().matmul_integer(a, b, np.array([1, 2, 3], np.int8),
                               np.array([4, 5, 6, 7], np.uint8))
    assert_exact(got, np.zeros((3, 4), np.int32))


# ----------------------------------------------------------------------------------------
# extreme values, exactness, wrap-around
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [4096, 4099, 8192])
@pytest.mark.parametrize("m,n", [(1, 1), (17, 33), (64, 5)])
def test_u8_255_times_s8_minus128_deep_k_exact(isa, k, m, n):
    # The classic vpmaddubsw hazard: 255*-128 + 255*-128 saturates an int16 lane.
    a = np.full((m, k), 255, np.uint8)
    b = np.full((k, n), -128, np.int8)
    got = _gk().matmul_integer(a, b)
    assert_exact(got, np.full((m, n), 255 * -128 * k, np.int32))


@pytest.mark.parametrize("ta,val_a,tb,val_b", [
    (U8, 255, U8, 255),
    (S8, -128, S8, -128),
    (S8, 127, U8, 255),
    (S8, -128, U8, 255),
    (U8, 255, S8, 127),
], ids=["u8u8_255", "s8s8_-128", "s8u8_127x255", "s8u8_-128x255", "u8s8_255x127"])
def test_all_extreme_constant_inputs(isa, ta, val_a, tb, val_b):
    k = 4099
    a = np.full((19, k), val_a, ta)
    b = np.full((k, 35), val_b, tb)
    assert_exact(_gk().matmul_integer(a, b), np.full((19, 35), val_a * val_b * k, np.int32))


@pytest.mark.parametrize("ta,a_val,a_zp,tb,b_val,b_zp", [
    # (255 - 0) * (127 - -128) = 65025 per term -> 2.6e9 over K = 40000: wraps positive->negative
    (U8, 255, 0, S8, 127, -128),
    # (0 - 255) * (255 - 0) = -65025 per term: wraps negative->positive
    (U8, 0, 255, U8, 255, 0),
    # (-128 - 127) * (-128 - 127) = 65025
    (S8, -128, 127, S8, -128, 127),
], ids=["u8s8_pos_wrap", "u8u8_neg_wrap", "s8s8_pos_wrap"])
@pytest.mark.parametrize("m,n", [(3, 5), (17, 17)])
def test_int32_wraparound_k40000(isa, ta, a_val, a_zp, tb, b_val, b_zp, m, n):
    k = 40000
    a = np.full((m, k), a_val, ta)
    b = np.full((k, n), b_val, tb)
    exact = (a_val - a_zp) * (b_val - b_zp) * k
    assert abs(exact) > 2**31  # the test really overflows
    want = np.full((m, n), (exact + 2**31) % 2**32 - 2**31, np.int32)
    got = _gk().matmul_integer(a, b, ta.type(a_zp), tb.type(b_zp))
    assert_exact(got, want)


def test_int32_wraparound_random_near_extreme(isa):
    rng = np.random.default_rng(7)
    k = 40000
    a = rng.integers(245, 256, size=(6, k)).astype(np.uint8)
    b = rng.integers(118, 128, size=(k, 9)).astype(np.int8)
    azp = np.array([0, 1, 2, 3, 4, 5], np.uint8)
    bzp = np.int8(-128)
    want = o.matmul_integer(a, b, azp, bzp)
    acc, _, _ = o.int_acc(a, b, azp, bzp)
    assert np.all(acc > 2**31)  # every element wraps
    assert_exact(_gk().matmul_integer(a, b, azp, bzp), want)


def test_random_matches_across_all_paths():
    """Every path gives bit-identical results (spec); checked directly, path vs path."""
    gk = _gk()
    from gemmkit import _core
    default = gk.cpu_info()["isa"]
    rng = np.random.default_rng(11)
    a = rand_extreme(rng, (2, 33, 1001), U8)
    b = rand_extreme(rng, (2, 1001, 65), S8)
    azp = rand_int8(rng, (2, 33, 1), U8)
    bzp = rand_int8(rng, (65,), S8)
    results = {}
    try:
        for name in gk.cpu_info()["available"]:
            _core._set_isa(name)
            results[name] = gk.matmul_integer(a, b, azp, bzp)
    finally:
        _core._set_isa(default)
    want = o.matmul_integer(a, b, azp, bzp)
    for name, got in results.items():
        assert np.array_equal(got, want), name


# ----------------------------------------------------------------------------------------
# zero-point layouts
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ta", [U8, S8])
def test_per_row_zero_point_is_not_numpy_last_axis_broadcast(isa, ta):
    # Square M == K: a 1-D [M] zero point would silently broadcast along K in NumPy
    # (and in the onnx reference evaluator).  Row m must use element m.
    a = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]], ta)
    b = np.array([[1, 2], [3, 4], [5, 6]], np.int8)
    azp = np.array([1, 2, 3], ta)
    want = np.array([[(10 - 1) * 1 + (20 - 1) * 3 + (30 - 1) * 5,
                      (10 - 1) * 2 + (20 - 1) * 4 + (30 - 1) * 6],
                     [(40 - 2) * 1 + (50 - 2) * 3 + (60 - 2) * 5,
                      (40 - 2) * 2 + (50 - 2) * 4 + (60 - 2) * 6],
                     [(70 - 3) * 1 + (80 - 3) * 3 + (90 - 3) * 5,
                      (70 - 3) * 2 + (80 - 3) * 4 + (90 - 3) * 6]], np.int32)
    misbroadcast = (a.astype(np.int64) - azp.astype(np.int64)) @ b.astype(np.int64)
    assert not np.array_equal(misbroadcast, want)  # the trap is real
    assert_exact(o.matmul_integer(a, b, azp), want)
    assert_exact(_gk().matmul_integer(a, b, azp), want)


def test_per_row_zero_point_batched_3d(isa):
    rng = np.random.default_rng(3)
    a = rand_int8(rng, (2, 4, 4), U8)
    b = rand_int8(rng, (2, 4, 5), S8)
    azp_1d = rand_int8(rng, (4,), U8)  # per-row shared by the batches
    want = np.stack([(a[i].astype(np.int64) - azp_1d[:, None]) @ b[i].astype(np.int64)
                     for i in range(2)]).astype(np.int32)
    assert_exact(_gk().matmul_integer(a, b, azp_1d), want)
    azp_nd = rand_int8(rng, (2, 4, 1), U8)  # per-row per-batch
    want = np.stack([(a[i].astype(np.int64) - azp_nd[i]) @ b[i].astype(np.int64)
                     for i in range(2)]).astype(np.int32)
    assert_exact(_gk().matmul_integer(a, b, azp_nd), want)


def test_per_column_zero_point(isa):
    rng = np.random.default_rng(4)
    a = rand_int8(rng, (5, 6), S8)
    b = rand_int8(rng, (6, 6), U8)
    bzp = rand_int8(rng, (6,), U8)
    want = (a.astype(np.int64) @ (b.astype(np.int64) - bzp[None, :])).astype(np.int32)
    assert_exact(_gk().matmul_integer(a, b, None, bzp), want)
    assert_exact(_gk().matmul_integer(a, b, None, bzp.reshape(1, 6)), want)


def test_per_batch_zero_point_with_broadcast_operand(isa):
    # a has no batch dims, b has 3: a per-batch a_zero_point [3, M, 1] broadcasts to the
    # output's batch dims [3] without enlarging them.
    rng = np.random.default_rng(5)
    a = rand_int8(rng, (4, 7), U8)
    b = rand_int8(rng, (3, 7, 2), S8)
    azp = rand_int8(rng, (3, 4, 1), U8)
    want = np.stack([(a.astype(np.int64) - azp[i]) @ b[i].astype(np.int64)
                     for i in range(3)]).astype(np.int32)
    assert_exact(_gk().matmul_integer(a, b, azp), want)


@pytest.mark.parametrize("ta,tb", SIGN_COMBOS, ids=COMBO_IDS)
def test_python_int_zero_points_equal_array_zero_points(isa, ta, tb):
    rng = np.random.default_rng(6)
    a = rand_int8(rng, (9, 13), ta)
    b = rand_int8(rng, (13, 11), tb)
    za = int(np.iinfo(ta).max)
    zb = int(np.iinfo(tb).min)
    want = o.matmul_integer(a, b, np.array(za, ta), np.array(zb, tb))
    assert_exact(_gk().matmul_integer(a, b, za, zb), want)
    assert_exact(_gk().matmul_integer(a, b, np.array([za], ta), np.array([zb], tb)), want)


# ----------------------------------------------------------------------------------------
# memory layouts
# ----------------------------------------------------------------------------------------

def test_zero_stride_broadcast_views(isa):
    rng = np.random.default_rng(8)
    row = rand_int8(rng, (37,), U8)
    a = np.broadcast_to(row, (19, 37))           # every row the same, stride 0 on M
    b_one = rand_int8(rng, (37, 23), S8)
    b = np.broadcast_to(b_one, (4, 37, 23))      # stride 0 on the batch dim
    azp = np.broadcast_to(np.uint8(5), (19,))    # 0-stride zero point
    want = o.matmul_integer(np.ascontiguousarray(a), np.ascontiguousarray(b),
                            np.ascontiguousarray(azp))
    assert_exact(_gk().matmul_integer(a, b, azp), want)


def test_transposed_and_negative_stride_views(isa):
    rng = np.random.default_rng(9)
    base_a = rand_int8(rng, (65, 130), S8)
    base_b = rand_int8(rng, (66, 129), U8)
    a = base_a[::-2, 3:40].T            # (37, 33) non-contiguous, negative stride
    b = base_b[1::2, ::-3][:, :37].T.T  # (33, 37)
    b = b[:, ::-1]
    want = o.matmul_integer(np.ascontiguousarray(a), np.ascontiguousarray(b), -3, 200)
    assert_exact(_gk().matmul_integer(a, b, np.int8(-3), np.uint8(200)), want)


@pytest.mark.parametrize("m", [1, 4, 9, 33])
def test_operands_with_no_unit_stride(isa, m):
    """A and B views with no unit stride in their last two dims (the driver gathers them
    row-major first), alone, batched over a Fortran-ordered A (a folded batch packed
    matrix by matrix) and against a pre-packed B."""
    rng = np.random.default_rng(10 + m)
    k, n = 300, 70
    base_a = rand_int8(rng, (m, 2 * k), U8)
    base_b = rand_int8(rng, (2 * k, 3 * n), S8)
    a_views = [base_a[:, ::2], np.asfortranarray(base_a[:, :k]), base_a[:, ::-2]]
    b_views = [base_b[::2, ::3], base_b[::-2, ::3], base_b[::2, ::-3]]
    for a in a_views:
        for b in b_views:
            want = o.matmul_integer(np.ascontiguousarray(a), np.ascontiguousarray(b), 7, -3)
            assert_exact(_gk().matmul_integer(a, b, np.uint8(7), np.int8(-3)), want)
            a3 = np.stack([a, a[::-1]])
            want3 = o.matmul_integer(np.ascontiguousarray(a3), np.ascontiguousarray(b), 7, -3)
            assert_exact(_gk().matmul_integer(a3, b, np.uint8(7), np.int8(-3)), want3)
            pb = _gk().pack_b(b, "matmul_integer", b_zero_point=np.int8(-3))
            assert_exact(_gk().matmul_integer(a, pb, np.uint8(7)), want)


@pytest.mark.parametrize("m", [1, 3, 16, 33])
def test_column_major_b_few_rows(isa, m):
    """B column-major (B = W.T, W stored [N, K]: each column's depth contiguous) with few
    rows runs in column blocks of a few panels (gk_qgemm_driver.c, GK_QCOLB_PANELS): N
    across several blocks with a tail, K in one and in several depth blocks, per-column
    and per-tensor zero points, every sign mix; QLinearMatMul with per-column scales and
    zero points; exact against the oracle and equal to the row-major B's result."""
    rng = np.random.default_rng(40 + m)
    for (k, n) in [(77, 300), (2500, 200)]:
        for (adt, bdt) in SIGN_COMBOS:
            a = rand_int8(rng, (m, k), adt)
            w = rand_int8(rng, (n, k), bdt)
            b = w.T
            for bzp in (rand_int8(rng, (n,), bdt), bdt.type(3)):
                azp = adt.type(5)
                want = o.matmul_integer(a, np.ascontiguousarray(b), azp, bzp)
                assert_exact(_gk().matmul_integer(a, b, azp, bzp), want)
        a = rand_int8(rng, (m, k), U8)
        w = rand_int8(rng, (n, k), S8)
        bs = rng.uniform(0.001, 0.01, n).astype(np.float32)
        bz = rand_int8(rng, (n,), S8)
        args = (np.float32(0.02), np.uint8(3), bs, bz, np.float32(0.5), np.uint8(128))
        y = _gk().qlinear_matmul(a, args[0], args[1], w.T, *args[2:])
        want, _ = o.qlinear_matmul(a, args[0], args[1], np.ascontiguousarray(w.T), *args[2:])
        assert y.dtype == np.uint8 and want is not None
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(
            y, _gk().qlinear_matmul(a, args[0], args[1], np.ascontiguousarray(w.T), *args[2:]))


def test_output_is_fresh_and_inputs_untouched(isa):
    rng = np.random.default_rng(10)
    a = rand_int8(rng, (8, 9), U8)
    b = rand_int8(rng, (9, 10), S8)
    azp = rand_int8(rng, (8,), U8)
    copies = [x.copy() for x in (a, b, azp)]
    y1 = _gk().matmul_integer(a, b, azp)
    y2 = _gk().matmul_integer(a, b, azp)
    for x, c in zip((a, b, azp), copies):
        np.testing.assert_array_equal(x, c)
    assert not np.shares_memory(y1, y2)
    assert y1.flags.writeable
    assert_exact(y1, y2)


def test_larger_matrices_exercise_blocking(isa):
    rng = np.random.default_rng(12)
    a = rand_int8(rng, (257, 515), U8)
    b = rand_int8(rng, (515, 300), S8)
    azp = rand_int8(rng, (257,), U8)
    bzp = rand_int8(rng, (300,), S8)
    assert_exact(_gk().matmul_integer(a, b, azp, bzp), o.matmul_integer(a, b, azp, bzp))


@pytest.mark.parametrize("m,k,n,batch", [(70, 33, 1024, ()), (45, 130, 2048, ()),
                                         (33, 64, 1024, (2,)), (17, 65, 4112, ())])
def test_wide_outputs_are_64_byte_aligned_and_exact(isa, m, k, n, batch):
    # Outputs of >= 64K int32 are allocated 64-byte aligned so kernels may store whole
    # cache lines (non-temporal stores); the rows here are wide enough to take that path.
    rng = np.random.default_rng(m * n + k)
    a = rand_int8(rng, batch + (m, k), U8)
    b = rand_int8(rng, (k, n), S8)
    azp = rand_int8(rng, (m,), U8)
    y = _gk().matmul_integer(a, b, azp, np.int8(-5))
    assert y.ctypes.data % 64 == 0
    assert y.flags.c_contiguous and y.flags.writeable
    assert_exact(y, o.matmul_integer(a, b, azp, np.int8(-5)))
