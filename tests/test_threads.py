"""gemmkit's own thread pool (src/csrc/core/gk_parallel.c) and its Python controls
(gemmkit/_threads.py).

* Results never depend on the thread count: the drivers split the OUTPUT on whole
  mr x nr tiles (never K), so every path and op must give the same bytes for 1..8
  threads.  ``_core._set_work_scale(0)`` removes the least-work-per-thread thresholds so
  that even the small shapes here really split; each group is also checked once against
  an oracle (NumPy / tests/oracles.py), so "all equal but all wrong" fails.
* Pool lifecycle, in fresh subprocesses where counts of threads mean something: no thread
  at import, workers created by the first parallel call, idle workers use no CPU, a
  forked child builds a pool of its own.
* Python threads with different ``with gemmkit.threads(k)`` settings at once.
* The settings API: set_num_threads / threads() / environment / threadpoolctl, and
  ``_core._grid``'s contract.

Every test restores the process thread setting, the work scale and the ISA (fixtures).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading

import ml_dtypes
import numpy as np
import pytest

import gemmkit as gk
from fenv_modes import directed_modes, rounding
import oracles as o
from gemmkit import _core
from strategies import rand_extreme, rand_int8
from test_gemm import assert_float_close, float_oracle, int_oracle

U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
SIGNS = [(U8, S8), (S8, U8), (U8, U8), (S8, S8)]
SIGN_IDS = ["u8s8", "s8u8", "u8u8", "s8s8"]
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
I32, U32, I64, U64 = (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
GEMM_FLOATS = [F16, BF16, F32, F64]
GEMM_INTS = [I32, I64, U32, U64]
E4M3, E5M2, E4M3UZ, E5M2UZ = o.FLOAT8_TYPES
THREAD_COUNTS = range(2, 9)
HAS_FORK = hasattr(os, "fork")
LINUX_PROC = os.path.isdir("/proc/self/task")


# ----------------------------------------------------------------------------- helpers

def _get_work_scale():
    old = _core._set_work_scale(1.0)
    _core._set_work_scale(old)
    return old


@pytest.fixture(autouse=True)
def _restore_thread_state():
    """Safety net: whatever a test does, the process setting, this thread's override and
    the work scale come back as they were (the tests restore them themselves too)."""
    proc = _core._get_process_threads()
    local = _core._get_local_threads()
    scale = _get_work_scale()
    tuning = _core._parallel_tuning()
    try:
        yield
    finally:
        _core._set_process_threads(proc)
        _core._set_local_threads(local)
        _core._set_work_scale(scale)
        _core._parallel_tuning(*tuning)


@contextlib.contextmanager
def work_scale(x):
    old = _core._set_work_scale(x)
    try:
        yield
    finally:
        _core._set_work_scale(old)


def assert_same_bytes(got, want, what=""):
    """Bit-identical arrays (NaN payloads, -0, float8 and bfloat16 codes included)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    gb, wb = got.tobytes(), want.tobytes()
    if gb != wb:
        isz = got.dtype.itemsize
        g = np.frombuffer(gb, np.uint8).reshape(-1, isz)
        w = np.frombuffer(wb, np.uint8).reshape(-1, isz)
        bad = np.flatnonzero((g != w).any(axis=1))
        idx = np.unravel_index(bad[0], got.shape) if got.ndim else ()
        raise AssertionError(
            f"{what}: {len(bad)} of {got.size} elements differ from the 1-thread result; "
            f"first at {tuple(int(i) for i in idx)}: got {got[idx]!r}, 1 thread {want[idx]!r}")


# (share_b, parts_per_thread) of the parallel drivers (_core._parallel_tuning), cycled
# over the thread counts: B' packed once by all threads (the default, 2 parts per thread;
# 1 and 3 parts), and packed by each part itself
TUNINGS = [(True, 2), (False, 1), (True, 1), (True, 3)]


@contextlib.contextmanager
def parallel_tuning(share_b, parts):
    old = _core._parallel_tuning(share_b, parts)
    try:
        yield
    finally:
        _core._parallel_tuning(*old)


def same_for_all_threads(fn, what="", scale=0.0):
    """fn() under threads=1, then threads=2..8 (each with one of the TUNINGS), all with
    work scale ``scale``: every result must be bit-identical to the 1-thread one, which
    is returned."""
    with work_scale(scale):
        with gk.threads(1):
            ref = fn()
        for i, t in enumerate(THREAD_COUNTS):
            tuning = TUNINGS[i % len(TUNINGS)]
            with gk.threads(t), parallel_tuning(*tuning):
                got = fn()
            assert_same_bytes(got, ref, f"{what} threads={t} share_b, parts={tuning}")
    return ref


def _rand(rng, shape, dt):
    """Half the calls uniform, half the range's ends."""
    return rand_extreme(rng, shape, dt) if rng.integers(2) else rand_int8(rng, shape, dt)


def _zp(mode, rng, dt, m, n):
    return {"none": None, "tensor": _rand(rng, (), dt), "row": _rand(rng, (m,), dt),
            "col": _rand(rng, (n,), dt)}[mode]


def _qfam():
    return _core._qgemm_family_info()


# ------------------------------------------------------- 1. identical for 1..8 threads

def _mmi_shapes():
    """(M, N, K) for the int8 family in use: a grid of row and column tiles with tails
    (M, N not multiples of mr / nr) and K past the family's depth block; the small-M path
    (M <= smallm_max, split by columns only); one tile plus one in each direction; past
    smallm_max with K * N >= 2**20 (smallm_wide_max: column parts wide enough for the
    small-M path on few threads, packed row parts on many)."""
    f = _qfam()
    mr, nr, kc, sm = f["mr"], f["nr"], f["kc"], f["smallm_max"]
    shapes = [(3 * mr + 5, 3 * nr + 7, kc + 37), (mr + 1, nr + 1, 3)]
    if sm:
        shapes.append((min(sm, 5), 5 * nr + 3, 70))
        shapes.append((sm, 4 * nr + 1, kc + 3))
    if f["smallm_wide_max"]:
        shapes.append((f["smallm_wide_max"] - 3, 2100, 1030))
    return shapes


@pytest.mark.parametrize("signs", SIGNS, ids=SIGN_IDS)
def test_matmul_integer_same_for_all_thread_counts(isa, signs):
    adt, bdt = signs
    rng = np.random.default_rng(10 + SIGNS.index(signs))
    modes = [("row", "col"), ("tensor", "tensor"), ("none", "col"), ("row", "none")]
    for i, (m, n, k) in enumerate(_mmi_shapes()):
        for j in range(2):
            azm, bzm = modes[(i + 2 * j) % len(modes)]
            a, b = _rand(rng, (m, k), adt), _rand(rng, (k, n), bdt)
            azp, bzp = _zp(azm, rng, adt, m, n), _zp(bzm, rng, bdt, m, n)
            ref = same_for_all_threads(lambda: gk.matmul_integer(a, b, azp, bzp),
                                       f"matmul_integer {isa} {m}x{n}x{k} {azm}/{bzm}")
            assert_same_bytes(ref, o.matmul_integer(a, b, azp, bzp), "oracle")


def _ql_params(rng, mode, adt, bdt, m, n, sdt=F32):
    """(a_scale, a_zp, b_scale, b_zp) for per-tensor / per-row / per-column modes."""
    ash = (m,) if mode in ("row", "both") else ()
    bsh = (n,) if mode in ("col", "both") else ()
    sa = (rng.uniform(0.5, 2.0, ash) / 64).astype(sdt)
    sb = (rng.uniform(0.5, 2.0, bsh) / 64).astype(sdt)
    return sa, _rand(rng, ash, adt), sb, _rand(rng, bsh, bdt)


@pytest.mark.parametrize("signs", SIGNS, ids=SIGN_IDS)
def test_qlinear_matmul_same_for_all_thread_counts(isa, signs):
    adt, bdt = signs
    rng = np.random.default_rng(20 + SIGNS.index(signs))
    shapes = _mmi_shapes()
    cases = [("row", S8, F32, "tensor"), ("col", U8, F32, "tensor"),
             ("both", S8, F16, "row"), ("tensor", U8, F16, "tensor")]
    for i, (m, n, k) in enumerate(shapes):
        mode, ydt, sdt, ymode = cases[i % len(cases)]
        a, b = _rand(rng, (m, k), adt), _rand(rng, (k, n), bdt)
        sa, azp, sb, bzp = _ql_params(rng, mode, adt, bdt, m, n, sdt)
        ysh = (m,) if ymode == "row" else ()
        sy = rng.uniform(1.0, 4.0, ysh).astype(sdt)
        yzp = _rand(rng, ysh, ydt)
        args = (a, sa, azp, b, sb, bzp, sy, yzp)
        ref = same_for_all_threads(lambda: gk.qlinear_matmul(*args),
                                   f"qlinear {isa} {m}x{n}x{k} {mode} y={ydt} s={sdt}")
        o.check_qlinear(ref, *args)


@pytest.mark.parametrize("route", ["f8_in_out", "int8_in_f8_out"])
def test_qlinear_float8_same_for_all_thread_counts(isa, route):
    """float8 inputs run through the Gemm float32 engine (gk_qlinear_f8.c); int8 inputs
    with a float8 output through the int8 driver."""
    rng = np.random.default_rng(30)
    f = _core._gemm_family_info(F32)
    m, n, k = 3 * f["mr"] + 2, 3 * f["nr"] + 5, f["kc"] + 11
    for per_row in (False, True):
        if route == "f8_in_out":
            a = o.f8_from_float(rng.uniform(-4, 4, (m, k)), E4M3)
            b = o.f8_from_float(rng.uniform(-4, 4, (k, n)), E5M2)
            ash = (m,) if per_row else ()
            azp = o.f8_from_float(np.zeros(ash), E4M3)
            bzp = o.f8_from_float(np.zeros((n,)), E5M2)
        else:
            a, b = _rand(rng, (m, k), U8), _rand(rng, (k, n), S8)
            ash = (m,) if per_row else ()
            azp, bzp = _rand(rng, ash, U8), _rand(rng, (n,), S8)
        sa = rng.uniform(0.5, 2.0, ash).astype(np.float32) / 8
        sb = rng.uniform(0.5, 2.0, (n,)).astype(np.float32) / 8
        sy = np.float32(rng.uniform(2.0, 8.0))
        yzp = o.f8_from_float(np.float64(1.0), E4M3UZ if per_row else E4M3)
        args = (a, sa, azp, b, sb, bzp, sy, yzp)
        ref = same_for_all_threads(lambda: gk.qlinear_matmul(*args),
                                   f"qlinear {route} {isa} per_row={per_row}")
        o.check_qlinear(ref, *args)


@pytest.mark.parametrize("scale", [0.0, 1.0], ids=["scale0", "scale1"])
def test_batched_same_for_all_thread_counts(isa, scale):
    """A folded batch (B shared: one product of batch*M rows, split by columns) and a
    batch with a B per matrix (work scale 1: small matrices run one matrix per task;
    work scale 0: each matrix split in turn), for MatMulInteger and QLinearMatMul."""
    rng = np.random.default_rng(40)
    f = _qfam()
    nb, m, n, k = 5, f["mr"] + 3, 2 * f["nr"] + 5, 45
    a = _rand(rng, (nb, m, k), U8)
    azp_b = _rand(rng, (nb, m, 1), U8)
    for bshape in ((k, n), (nb, k, n)):
        b = _rand(rng, bshape, S8)
        bzp = _rand(rng, (n,), S8)
        what = f"batch {isa} B{bshape} scale={scale}"
        ref = same_for_all_threads(lambda: gk.matmul_integer(a, b, azp_b, bzp), what, scale)
        assert_same_bytes(ref, o.matmul_integer(a, b, azp_b, bzp), "oracle " + what)
        sa = rng.uniform(0.5, 2.0, (nb, m, 1)).astype(np.float32) / 64
        sb = rng.uniform(0.5, 2.0, (n,)).astype(np.float32) / 64
        args = (a, sa, azp_b, b, sb, bzp, np.float32(3.0), np.int8(-5))
        ref = same_for_all_threads(lambda: gk.qlinear_matmul(*args), "qlinear " + what, scale)
        o.check_qlinear(ref, *args)
    # float8 batches loop over the matrices in gk_qlinear_run, each through the Gemm engine
    af = o.f8_from_float(rng.uniform(-4, 4, (nb, m, k)), E4M3)
    bf = o.f8_from_float(rng.uniform(-4, 4, (nb, k, n)), E4M3)
    z8 = o.f8_from_float(np.float64(0.0), E4M3)
    args = (af, np.float32(0.25), z8, bf, np.float32(0.5), z8, np.float32(2.0), z8)
    ref = same_for_all_threads(lambda: gk.qlinear_matmul(*args), f"f8 batch {isa}", scale)
    o.check_qlinear(ref, *args)


def _gemm_rand(rng, shape, dt):
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    return rng.uniform(-1, 1, size=shape).astype(dt)


def _c_of(cshape, m, n):
    """C's shape for each of Gemm's unidirectional broadcast forms (None: no C)."""
    return {"none": None, "scalar": (), "1": (1,), "N": (n,), "1N": (1, n), "M1": (m, 1),
            "11": (1, 1), "MN": (m, n)}[cshape]


def _gemm_cases(dt):
    """(M, N, K, transA, transB, C form, alpha, beta) around the family's blocks: the
    packed path with K past kc (K blocks), transposes, the small in-place path, thin A
    (M <= 32: columns only, one and two row panels), tiny shapes."""
    f = _core._gemm_family_info(dt)
    mr, nr, kc = f["mr"], f["nr"], f["kc"]
    ints = dt.kind in "iu"
    al = ((3, -2), (1, 1), (-1, 5), (2, 0), (0.5, 1.5)) if ints else \
        ((0.75, -1.25), (1.0, 1.0), (-0.375, 2.5), (1.5, 0.0), (2.0, 0.5))
    thin = min(mr + 3, 32)
    return [
        (3 * mr + 5, 3 * nr + 7, kc + 37, 0, 1, "MN", *al[0]),
        (3 * mr + 5, 2 * nr + 3, kc + 37, 1, 0, "N", *al[1]),
        (2 * mr + 3, 2 * nr + 5, 23, 1, 1, "M1", *al[2]),
        (2 * mr + 3, 2 * nr + 5, 23, 0, 0, "1N", *al[0]),
        (thin, 7 * nr + 3, kc + 9, 0, 0, "scalar", *al[3]),
        (3, 5 * nr + 1, 2 * kc + 1, 0, 0, "11", *al[1]),
        (mr + 1, nr + 1, 1, 0, 0, "1", *al[0]),
        (2, 3, 4, 1, 0, "none", *al[4]),
    ]


@pytest.mark.parametrize("dt", GEMM_FLOATS + GEMM_INTS, ids=str)
def test_gemm_same_for_all_thread_counts(isa, dt):
    rng = np.random.default_rng(50)
    for i, (m, n, k, ta, tb, cs, alpha, beta) in enumerate(_gemm_cases(dt)):
        A = _gemm_rand(rng, (k, m) if ta else (m, k), dt)
        B = _gemm_rand(rng, (n, k) if tb else (k, n), dt)
        cshape = _c_of(cs, m, n)
        C = None if cshape is None else _gemm_rand(rng, cshape, dt)
        ref = same_for_all_threads(lambda: gk.gemm(A, B, C, alpha, beta, ta, tb),
                                   f"gemm {dt} {isa} {m}x{n}x{k} tA={ta} tB={tb} C={cs}")
        if dt.kind == "f" or dt == BF16:
            if i in (0, 4):  # packed K blocks; thin A with K blocks
                assert_float_close(ref, *float_oracle(A, B, C, alpha, beta, ta, tb))
        elif i in (2, 6):  # exact object-int oracle: kept to the small shapes
            np.testing.assert_array_equal(ref, int_oracle(A, B, C, alpha, beta, ta, tb))


def test_gemm_nan_inf_same_for_all_thread_counts(isa):
    """NaN / inf / -0 propagate identically whatever the split (byte comparison)."""
    rng = np.random.default_rng(55)
    f = _core._gemm_family_info(F32)
    m, n, k = 3 * f["mr"] + 1, 3 * f["nr"] + 1, 40
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    A[1, 3] = np.nan
    A[m - 1, 0] = np.inf
    B[2, n - 1] = -np.inf
    C = np.full((m, n), -0.0, np.float32)
    same_for_all_threads(lambda: gk.gemm(A, B, C, 0.0, 1.0), f"gemm alpha=0 {isa}")
    same_for_all_threads(lambda: gk.gemm(A, B, C, 1.0, 2.0), f"gemm nan/inf {isa}")


@pytest.mark.parametrize("dt", [F32, F64], ids=str)
def test_workers_take_the_callers_rounding_mode(isa, dt):
    """Every worker computes its tiles under the calling thread's floating-point
    environment (here FE_UPWARD, set in the caller only): every thread count gives the
    1-thread bits, which differ from round-to-nearest's (the mode is in effect).  Before
    the pool carried it, a worker kept its own mode and a 2-thread float32 512^3 product
    differed from the 1-thread one in up to half its elements, from run to run."""
    up = directed_modes()[0]  # FE_UPWARD
    rng = np.random.default_rng(61)
    n = 96 if isa == "scalar" else 320
    A = rng.standard_normal((n, n)).astype(dt)
    B = rng.standard_normal((n, n)).astype(dt)
    with gk.threads(1):
        nearest = gk.gemm(A, B)
    with gk.threads(2):
        gk.gemm(A, B)  # the workers exist, started under the default mode
    with rounding(up), work_scale(0.0):
        with gk.threads(1):
            ref = gk.gemm(A, B)
        for t in (2, 3, 4):
            for rep in range(3):  # a worker takes tiles only if it wakes in time
                with gk.threads(t):
                    got = gk.gemm(A, B)
                assert_same_bytes(got, ref, f"gemm {dt} FE_UPWARD threads={t} #{rep}")
    assert not np.array_equal(ref, nearest)
    assert (ref >= nearest).all()  # rounding up never gives less (same k order)


CAST_DSTS = [F16, BF16, E4M3, E5M2, E4M3UZ, E5M2UZ]


def _cast_input(rng, dt):
    base = (rng.standard_normal((2 * 67, 3 * 45)) * 100).astype(dt)
    flat = base.reshape(-1)
    flat[::97] = np.nan
    flat[5::101] = np.inf
    flat[7::103] = -np.inf
    flat[11::89] = -0.0
    flat[13::83] = 1e5
    return base[1::2, ::-3].T  # strided, negative step, transposed: (45, 67)


@pytest.mark.parametrize("src", [F32, F64], ids=str)
def test_cast_same_for_all_thread_counts(isa, src):
    rng = np.random.default_rng(60)
    x = _cast_input(rng, src)
    assert not x.flags.c_contiguous and not x.flags.f_contiguous
    for dst in CAST_DSTS:
        ref = same_for_all_threads(lambda: gk.cast(x, dst), f"cast {src}->{dst} {isa}")
        # strided output too
        def into_strided():
            buf = np.zeros((x.shape[0], 2 * x.shape[1]), dst)
            gk.cast(x, dst, out=buf[:, ::2])
            return buf
        got = same_for_all_threads(into_strided, f"cast out= {src}->{dst} {isa}")
        assert_same_bytes(got[:, ::2], ref, "cast out= vs new array")
        # oracle: NumPy / ml_dtypes (IEEE targets), saturating encoder (float8)
        xd = x.astype(np.float64)
        fin = ~np.isnan(xd)
        assert np.array_equal(np.isnan(ref.astype(np.float64)), ~fin), "NaN positions"
        if dst == F16 or (dst == BF16 and src == F32):
            # NumPy's float64 -> float16 rounds once; float32 -> bfloat16 is exact in
            # ml_dtypes: both bit-exact references for the non-NaN elements
            with np.errstate(over="ignore"):
                want = x.astype(dst)
            assert_same_bytes(ref[fin], want[fin], f"cast oracle {src}->{dst}")
        elif dst == BF16:
            ok = fin & (np.abs(xd) < 1e30)
            np.testing.assert_allclose(ref[ok].astype(np.float64), xd[ok], rtol=2.0 ** -8)
        else:
            want = o.encode_f8_saturate(xd, dst).view(dst)
            assert_same_bytes(o.canonical_f8_codes(ref), o.canonical_f8_codes(want),
                              f"cast oracle {src}->{dst}")


# -------------------------------------------------------------- subprocess helpers

def _run_py(code, env_extra=None, drop=(), timeout=60, prelude=False):
    """Runs code (dedented) in a fresh interpreter, after _PRELUDE when asked."""
    code = (textwrap.dedent(_PRELUDE) if prelude else "") + textwrap.dedent(code)
    env = dict(os.environ)
    for k in ("GEMMKIT_NUM_THREADS", "OMP_NUM_THREADS") + tuple(drop):
        env.pop(k, None)
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.abspath(__file__))] + [p for p in sys.path if p])
    try:
        return subprocess.run([sys.executable, "-c", code], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"subprocess hung (> {timeout} s): stdout {exc.stdout!r} "
                    f"stderr {exc.stderr!r}")


def _ok(r):
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r.stdout


_PRELUDE = """
import os, sys, time, threading, warnings
import numpy as np
import gemmkit as gk
from gemmkit import _core

def mmi_case(seed, m=45, n=200, k=600):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k)).astype(np.uint8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    return a, b

def oracle(a, b):
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int32)
"""


# ------------------------------------------------------ 2. a split really happens

def test_parallel_call_starts_workers():
    out = _ok(_run_py(prelude=True, code="""
    a, b = mmi_case(1)
    assert _core._pool_size() == 0, _core._pool_size()
    with gk.threads(1):
        gk.matmul_integer(a, b)
    assert _core._pool_size() == 0, ("1 thread started workers", _core._pool_size())
    tiny_a, tiny_b = mmi_case(2, 3, 5, 7)
    with gk.threads(4):  # default thresholds: a tiny product stays on one thread
        gk.matmul_integer(tiny_a, tiny_b)
    assert _core._pool_size() == 0, ("tiny product started workers", _core._pool_size())
    old = _core._set_work_scale(0.0)
    try:
        with gk.threads(4):
            y = gk.matmul_integer(a, b)
    finally:
        _core._set_work_scale(old)
    n = _core._pool_size()
    assert 1 <= n <= 3, n
    assert gk.cpu_info()["pool_threads"] == n
    assert threading.active_count() == 1  # workers are not Python threads
    assert np.array_equal(y, oracle(a, b))
    print("POOL", n)
    """))
    assert "POOL" in out


# ----------------------------------------------- 3. Python threads, different settings

def test_concurrent_python_threads_with_own_settings():
    rng = np.random.default_rng(70)
    f = _qfam()
    m, n, k = 3 * f["mr"] + 3, 4 * f["nr"] + 1, 300
    cases = []
    for j in range(8):
        a, b = _rand(rng, (m + j, k), U8), _rand(rng, (k, n - j), S8)
        azp, bzp = _rand(rng, (m + j,), U8), _rand(rng, (n - j,), S8)
        A = rng.uniform(-1, 1, (60 + j, 130)).astype(np.float32)
        B = rng.uniform(-1, 1, (130, 70 - j)).astype(np.float32)
        C = rng.uniform(-1, 1, (70 - j,)).astype(np.float32)
        X = rng.standard_normal((50 + j, 90)).T
        ql = (a, np.float32(0.01), np.uint8(3), b, np.float32(0.02), np.int8(-2),
              np.float32(0.5 + j), np.int8(j))
        cases.append(((a, b, azp, bzp), ql, (A, B, C, 0.5, -1.5, 0, 0), X))

    def ops(case):
        mi, ql, gm, X = case
        return [gk.matmul_integer(*mi), gk.qlinear_matmul(*ql), gk.gemm(*gm),
                gk.cast(X, BF16), gk.gemm(gm[1].T.copy(), gm[0].T.copy(), None, 1.0, 0.0)]

    with gk.threads(1):
        serial = [ops(c) for c in cases]
    for c, s in zip(cases, serial):
        assert_same_bytes(s[0], o.matmul_integer(*c[0]), "oracle")
    process_before = _core._get_process_threads()
    errors, seen = [], {}
    barrier = threading.Barrier(8)

    def worker(j):
        want_k = j % 4 + 1
        try:
            assert gk.get_num_threads() == process_before
            with gk.threads(want_k):
                barrier.wait(timeout=30)
                for it in range(6):
                    assert gk.get_num_threads() == want_k, (j, gk.get_num_threads())
                    for r, w in zip(ops(cases[j]), serial[j]):
                        assert_same_bytes(r, w, f"py-thread {j} threads={want_k} iter {it}")
                seen[j] = gk.get_num_threads()
            assert gk.get_num_threads() == process_before
        except BaseException as exc:  # noqa: BLE001
            errors.append((j, exc))
            barrier.abort()

    with work_scale(0.0):
        ts = [threading.Thread(target=worker, args=(j,)) for j in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=120)
    assert not any(t.is_alive() for t in ts), "a Python thread hung"
    assert not errors, errors
    assert seen == {j: j % 4 + 1 for j in range(8)}
    assert _core._get_process_threads() == process_before
    assert gk.get_num_threads() == process_before


def test_many_concurrent_tiny_calls_never_hang_or_differ():
    """8 Python threads x 400 tiny split calls each: runs take back the jobs of workers
    that have not woken, workers are claimed again at once by other runs; a run that took
    back another run's job (the ABA a claim ticket prevents) would hang both."""
    rng = np.random.default_rng(71)
    a, b = _rand(rng, (40, 70), U8), _rand(rng, (70, 50), S8)
    A = rng.standard_normal((30, 40)).astype(np.float32)
    B = rng.standard_normal((40, 60)).astype(np.float32)
    with gk.threads(1):
        r1, g1 = gk.matmul_integer(a, b), gk.gemm(A, B)
    errors = []

    def worker(j):
        try:
            with gk.threads(j % 4 + 1):
                for _ in range(400):
                    assert_same_bytes(gk.matmul_integer(a, b), r1, f"thread {j}")
                    assert_same_bytes(gk.gemm(A, B), g1, f"thread {j}")
        except BaseException as exc:  # noqa: BLE001
            errors.append((j, exc))

    with work_scale(0.0):
        ts = [threading.Thread(target=worker, args=(j,)) for j in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in ts), "a Python thread hung"
    assert not errors, errors


# ------------------------------------------------------------- 4. fork after a call

@pytest.mark.skipif(not HAS_FORK, reason="os.fork is not available on this platform")
def test_fork_after_parallel_call():
    out = _ok(_run_py(prelude=True, code="""
    warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork with threads
    _core._set_work_scale(0.0)
    a, b = mmi_case(3)
    A = np.random.default_rng(4).uniform(-1, 1, (61, 700)).astype(np.float32)
    B = np.random.default_rng(5).uniform(-1, 1, (700, 83)).astype(np.float32)
    X = np.random.default_rng(6).standard_normal((40, 300)).T
    with gk.threads(4):
        y = gk.matmul_integer(a, b)
        g = gk.gemm(A, B, None)
        c = gk.cast(X, np.float16)
    assert np.array_equal(y, oracle(a, b))
    assert _core._pool_size() >= 1, _core._pool_size()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if _core._pool_size() != 0:
                print("child inherited a pool of", _core._pool_size(), flush=True)
            else:
                ok = True
                for t in (2, 3, 4):
                    with gk.threads(t):
                        ok &= np.array_equal(gk.matmul_integer(a, b), y)
                        ok &= gk.gemm(A, B, None).tobytes() == g.tobytes()
                        ok &= gk.cast(X, np.float16).tobytes() == c.tobytes()
                ok &= _core._pool_size() >= 1
                print("child ok" if ok else "child WRONG", _core._pool_size(), flush=True)
                code = 0 if ok else 1
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print("CHILD HUNG", flush=True)
            sys.exit(3)
        time.sleep(0.01)
    code = os.waitstatus_to_exitcode(status)
    # the parent's own pool still works after the fork
    with gk.threads(4):
        assert np.array_equal(gk.matmul_integer(a, b), y)
    print("CHILD EXIT", code, flush=True)
    sys.exit(0 if code == 0 else 4)
    """, timeout=90))
    assert "child ok" in out and "CHILD EXIT 0" in out, out


# ----------------------------------------------------------- 5. no thread at import

def test_import_starts_no_thread():
    out = _ok(_run_py("""
    import os, sys, threading
    import numpy as np
    def tasks():
        return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
    before = tasks()
    import gemmkit
    from gemmkit import _core
    after = tasks()
    assert threading.active_count() == 1, threading.active_count()
    assert _core._pool_size() == 0, _core._pool_size()
    assert gemmkit.cpu_info()["pool_threads"] == 0
    assert before == after, (before, after)
    print("TASKS", before, after)
    """, env_extra={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                    "MKL_NUM_THREADS": "1"}))
    assert "TASKS" in out


# -------------------------------------------------------------------- 6. idle workers

@pytest.mark.skipif(not LINUX_PROC, reason="needs /proc/self/task (Linux)")
def test_idle_workers_use_no_cpu():
    out = _ok(_run_py(prelude=True, code="""
    def cpu_ticks():
        ticks = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks[int(tid)] = int(fields[11]) + int(fields[12])  # utime + stime
        return ticks
    a, b = mmi_case(7)
    old = _core._set_work_scale(0.0)
    try:
        for t in (2, 4):
            with gk.threads(t):
                for _ in range(20):
                    y = gk.matmul_integer(a, b)
    finally:
        _core._set_work_scale(old)
    assert np.array_equal(y, oracle(a, b))
    workers = _core._pool_size()
    assert workers >= 1, workers
    time.sleep(0.3)
    t0 = cpu_ticks()
    time.sleep(0.2)
    t1 = cpu_ticks()
    main = threading.get_native_id()
    gained = {tid: t1[tid] - t0[tid] for tid in t1 if tid in t0 and tid != main}
    hz = os.sysconf("SC_CLK_TCK")
    limit = max(1, 5 * hz // 100)  # 50 ms of CPU in 200 ms
    busy = {tid: g for tid, g in gained.items() if g > limit}
    assert len(t1) >= workers + 1, (len(t1), workers)
    assert not busy, ("idle workers burn CPU (ticks in 0.2 s)", busy, hz)
    print("IDLE", workers, gained)
    """))
    assert "IDLE" in out


# ------------------------------------------------------------------ 7. threadpoolctl

def test_threadpoolctl_controls_gemmkit():
    threadpoolctl = pytest.importorskip(
        "threadpoolctl", reason="threadpoolctl is not installed (optional: test extras)")
    if not hasattr(threadpoolctl, "register"):
        pytest.skip("threadpoolctl < 3.2 has no register(): gemmkit registers no controller")
    old = gk.set_num_threads(2)
    try:
        ours = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "gemmkit"]
        assert len(ours) == 1, ours
        assert ours[0]["internal_api"] == "gemmkit"
        assert ours[0]["num_threads"] == gk.get_num_threads() == 2
        assert ours[0]["version"] == gk.__version__
        with threadpoolctl.threadpool_limits(1):
            assert gk.get_num_threads() == 1
            assert gk.cpu_info()["num_threads_process"] == 1
        assert gk.get_num_threads() == 2
        with threadpoolctl.threadpool_limits(limits=3, user_api="gemmkit"):
            assert gk.get_num_threads() == 3
            with gk.threads(5):  # a per-thread override still wins inside
                assert gk.get_num_threads() == 5
            assert gk.get_num_threads() == 3
        assert gk.get_num_threads() == 2
        with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
            assert gk.get_num_threads() == 2  # not ours
    finally:
        gk.set_num_threads(old)
    assert gk.get_num_threads() == old


# ---------------------------------------------------------------- 8. settings API

def test_set_num_threads_returns_previous_and_validates():
    old = gk.set_num_threads(3)
    try:
        assert gk.get_num_threads() == 3
        assert gk.set_num_threads(5) == 3
        assert gk.set_num_threads(np.int64(2)) == 5  # integer-like (__index__) accepted
        assert gk.get_num_threads() == 2
        for bad in (1.5, True, False, "2", None, 2.0, np.array([2]), np.array([1, 2])):
            with pytest.raises(TypeError, match=r"set_num_threads\(n\): expected an int"):
                gk.set_num_threads(bad)
            with pytest.raises(TypeError, match=r"threads\(n\): expected an int"):
                with gk.threads(bad):
                    pass
        for bad in (0, -1, _core._MAX_THREADS + 1):
            with pytest.raises(ValueError):
                gk.set_num_threads(bad)
            with pytest.raises(ValueError):
                with gk.threads(bad):
                    pass
        assert gk.get_num_threads() == 2  # rejected values changed nothing
        assert gk.set_num_threads(_core._MAX_THREADS) == 2
    finally:
        gk.set_num_threads(old)
    assert gk.get_num_threads() == old


def test_threads_context_nests_and_restores():
    old = gk.set_num_threads(2)
    try:
        with gk.threads(4) as n4:
            assert n4 == 4 and gk.get_num_threads() == 4
            with gk.threads(1):
                assert gk.get_num_threads() == 1
                assert gk.cpu_info()["num_threads"] == 1
                assert gk.cpu_info()["num_threads_process"] == 2
            assert gk.get_num_threads() == 4
            gk.set_num_threads(6)  # the process setting does not override the block
            assert gk.get_num_threads() == 4
        assert gk.get_num_threads() == 6
        with pytest.raises(RuntimeError):
            with gk.threads(3):
                raise RuntimeError("boom")
        assert gk.get_num_threads() == 6  # restored on an exception too
        # another Python thread does not see this thread's block
        seen = []
        with gk.threads(7):
            t = threading.Thread(target=lambda: seen.append(gk.get_num_threads()))
            t.start()
            t.join()
        assert seen == [6]
    finally:
        gk.set_num_threads(old)


_ENV_PROBE = """
import gemmkit as gk
i = gk.cpu_info()
print(gk.get_num_threads(), i["num_threads_source"], i["usable_cpus"])
"""


def _env_threads(**env):
    out = _ok(_run_py(_ENV_PROBE, env_extra=env)).split()
    return int(out[0]), out[1], int(out[2])


def test_env_gemmkit_num_threads():
    assert _env_threads(GEMMKIT_NUM_THREADS="3") == (3, "GEMMKIT_NUM_THREADS",
                                                      _env_threads()[2])
    n, src, _ = _env_threads(GEMMKIT_NUM_THREADS=" 5 ", OMP_NUM_THREADS="2")
    assert (n, src) == (5, "GEMMKIT_NUM_THREADS")  # GEMMKIT_ wins over OMP_


def test_env_omp_num_threads():
    n, src, _ = _env_threads(OMP_NUM_THREADS="2,1")
    assert (n, src) == (2, "OMP_NUM_THREADS")
    n, src, usable = _env_threads(OMP_NUM_THREADS="abc")  # invalid: ignored
    assert (n, src) == (usable, "cpus")
    n, src, usable = _env_threads(OMP_NUM_THREADS="0")
    assert (n, src) == (usable, "cpus")


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_env_gemmkit_num_threads_invalid_raises(value):
    r = _run_py("import gemmkit", env_extra={"GEMMKIT_NUM_THREADS": value})
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "GEMMKIT_NUM_THREADS" in r.stderr, r.stderr


def test_env_default_is_usable_cpus():
    n, src, usable = _env_threads()
    assert src == "cpus" and n == usable >= 1
    if hasattr(os, "sched_getaffinity"):
        assert n <= len(os.sched_getaffinity(0))
        # a narrower affinity mask is honoured (not the host's CPU count)
        out = _ok(_run_py("""
        import os
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        import gemmkit as gk
        print(gk.get_num_threads(), gk.cpu_info()["usable_cpus"])
        """)).split()
        assert out == ["1", "1"], out


def test_grid_contract():
    def cdiv(a, b):
        return -(-a // b)

    with work_scale(1.0):
        rng = np.random.default_rng(80)
        for _ in range(400):
            m, n, k = (int(x) for x in rng.integers(1, 3000, 3))
            mr, nr = int(rng.choice([1, 4, 6, 8, 14])), int(rng.choice([4, 8, 16, 32]))
            min_work = float(rng.choice([0.0, 1e3, 1e5, 2.0 ** 20, 2.0 ** 22]))
            threads = int(rng.integers(1, 17))
            rows_too = bool(rng.integers(2))
            t, tm, tn = _core._grid(m, n, k, mr, nr, min_work, threads, rows_too)
            mt, nt = (cdiv(m, mr) if rows_too else 1), cdiv(n, nr)
            ctx = (m, n, k, mr, nr, min_work, threads, rows_too, t, tm, tn)
            assert t == tm * tn and 1 <= t <= threads, ctx
            assert 1 <= tm <= mt and 1 <= tn <= nt, ctx  # never more parts than tiles
            work = m * n * k
            if min_work > 0 and work < 2 * min_work:
                assert t == 1, ctx
            if t > 1 and min_work > 0:
                assert work >= t * min_work, ctx  # each part is worth its thread
        # enough work and tiles: every thread is used
        assert _core._grid(4096, 4096, 4096, 8, 32, 2.0 ** 20, 8, True)[0] == 8
        assert _core._grid(8, 4096, 4096, 8, 32, 2.0 ** 20, 8, False)[1:] == (1, 8)
        assert _core._grid(1, 1, 1, 8, 32, 0.0, 8, True) == (1, 1, 1)
    # B' shared by every part (flags GK_GRID_B_SHARED): a part reads its columns of B'
    # (half a packing) and packs its rows of A, so of two grids with equal parts the one
    # with more row parts wins; packed per part, the tie goes to more column parts
    with work_scale(1.0):
        assert _core._grid(2048, 2048, 2048, 16, 32, 2.0 ** 20, 8, True, True) == (8, 4, 2)
        assert _core._grid(2048, 2048, 2048, 16, 32, 2.0 ** 20, 8, True, False) == (8, 2, 4)
    # the work scale multiplies min_work: 0 lets even a tiny product split
    with work_scale(0.0):
        t, tm, tn = _core._grid(40, 100, 3, 8, 32, 2.0 ** 22, 8, True)
        assert t > 1 and tm * tn == t and tm <= 5 and tn <= 4
    with work_scale(1.0):
        assert _core._grid(40, 100, 3, 8, 32, 2.0 ** 22, 8, True)[0] == 1
