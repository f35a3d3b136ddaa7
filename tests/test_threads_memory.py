"""Thread safety (the GIL is released while kernels run) and absence of memory leaks."""
from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest

import oracles as o
from strategies import rand_int8


def _gk():
    import gemmkit
    return gemmkit


N_THREADS = 8


def _mmi_case(i):
    rng = np.random.default_rng(100 + i)
    m, n, k = 17 + i, 33 - i, 129 + 7 * i
    a = rand_int8(rng, (m, k), np.uint8)
    b = rand_int8(rng, (k, n), np.int8)
    azp = rand_int8(rng, (m,), np.uint8)
    bzp = rand_int8(rng, (n,), np.int8)
    return (a, b, azp, bzp)


def _ql_case(i):
    rng = np.random.default_rng(200 + i)
    m, n, k = 9 + i, 40 - i, 65 + 3 * i
    a = rand_int8(rng, (m, k), np.int8)
    b = rand_int8(rng, (k, n), np.uint8)
    return (a, np.float32(0.01 + 0.001 * i), np.int8(i), b, np.float32(0.02), np.uint8(128 - i),
            np.float32(0.3 + 0.05 * i), np.int8(-i))


def _gemm_case(i):
    rng = np.random.default_rng(300 + i)
    m, n, k = 20 + i, 30 - i, 50 + 5 * i
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal((n,)).astype(np.float32)
    return (a, b, c, 0.5 + i, 2.0 - i * 0.1)


def _run_concurrently(fn, cases, iters):
    """Runs fn(case) ``iters`` times in each of len(cases) threads, all started together."""
    results = [None] * len(cases)
    errors = []
    barrier = threading.Barrier(len(cases))

    def worker(j):
        try:
            barrier.wait()
            out = []
            for _ in range(iters):
                out.append(fn(*cases[j]))
            results[j] = out
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(j,)) for j in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return results


def test_matmul_integer_concurrent_threads(isa):
    gk = _gk()
    cases = [_mmi_case(i) for i in range(N_THREADS)]
    single = [gk.matmul_integer(*c) for c in cases]
    for c, s in zip(cases, single):
        np.testing.assert_array_equal(s, o.matmul_integer(*c))
    results = _run_concurrently(gk.matmul_integer, cases, iters=20)
    for j, outs in enumerate(results):
        for out in outs:
            np.testing.assert_array_equal(out, single[j])


def test_qlinear_matmul_concurrent_threads(isa):
    gk = _gk()
    cases = [_ql_case(i) for i in range(N_THREADS)]
    single = [gk.qlinear_matmul(*c) for c in cases]
    for c, s in zip(cases, single):
        o.check_qlinear(s, *c)
    results = _run_concurrently(gk.qlinear_matmul, cases, iters=20)
    for j, outs in enumerate(results):
        for out in outs:
            np.testing.assert_array_equal(out, single[j])


def test_gemm_concurrent_threads():
    gk = _gk()
    cases = [_gemm_case(i) for i in range(N_THREADS)]
    single = [gk.gemm(*c) for c in cases]
    for (a, b, c, alpha, beta), s in zip(cases, single):
        want = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * c
        np.testing.assert_allclose(s, want, rtol=1e-4, atol=1e-4)
    results = _run_concurrently(gk.gemm, cases, iters=20)
    for j, outs in enumerate(results):
        for out in outs:
            np.testing.assert_array_equal(out, single[j])


def test_mixed_ops_concurrent_threads(isa):
    """Different ops at the same time (shared dispatch state, scratch buffers)."""
    gk = _gk()
    mmi = [_mmi_case(i) for i in range(N_THREADS // 2)]
    qls = [_ql_case(i) for i in range(N_THREADS // 2)]
    want_m = [gk.matmul_integer(*c) for c in mmi]
    want_q = [gk.qlinear_matmul(*c) for c in qls]
    cases = [("m", c) for c in mmi] + [("q", c) for c in qls]

    def call(kind, args):
        return gk.matmul_integer(*args) if kind == "m" else gk.qlinear_matmul(*args)

    results = _run_concurrently(call, cases, iters=15)
    for j, outs in enumerate(results):
        want = want_m[j] if j < len(mmi) else want_q[j - len(mmi)]
        for out in outs:
            np.testing.assert_array_equal(out, want)


# ----------------------------------------------------------------------------------------
# memory
# ----------------------------------------------------------------------------------------

def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


pytestmark_linux = pytest.mark.skipif(not os.path.exists("/proc/self/statm"),
                                      reason="needs /proc/self/statm (Linux)")


def _leak_check(fn, calls=1000, slack=6 * 2**20):
    for _ in range(200):  # warm-up: lazily allocated pools, caches, first-touch pages
        fn()
    gc.collect()
    before = _rss_bytes()
    for _ in range(calls):
        fn()
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < slack, f"RSS grew by {grown / 2**20:.1f} MiB over {calls} calls"


@pytestmark_linux
def test_no_memory_growth_matmul_integer(isa):
    gk = _gk()
    # (51 x 258) @ (258 x 66): ~13-17 KiB packed per operand and 13 KiB of output per
    # call, so leaking any one of these buffers shows as >= 12 MiB over 1000 calls.
    a, b, azp, bzp = _mmi_case(0)
    a = np.asfortranarray(np.tile(a, (3, 2)))
    b = np.tile(b, (2, 2))[:, ::-1]
    azp = np.tile(azp, 3)
    bzp = np.tile(bzp, 2)[::-1]
    _leak_check(lambda: gk.matmul_integer(a, b, azp, bzp))


@pytestmark_linux
def test_no_memory_growth_qlinear_matmul(isa):
    gk = _gk()
    rng = np.random.default_rng(1)
    # 48 x 64 uint8 output (3 KiB) but an int32 accumulator / multiplier grid of 12 KiB
    # and ~10-13 KiB packed operands per call.
    a = rand_int8(rng, (48, 200), np.int8)
    b = rand_int8(rng, (200, 64), np.uint8)
    a_scale = np.full((48,), 0.01, np.float32)
    a_zp = rand_int8(rng, (48,), np.int8)
    b_scale = np.full((64,), 0.02, np.float32)
    b_zp = rand_int8(rng, (64,), np.uint8)
    _leak_check(lambda: gk.qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp,
                                          np.float32(0.5), np.uint8(3)))


@pytestmark_linux
def test_no_memory_growth_qlinear_matmul_float8():
    gk = _gk()
    f8 = o.FLOAT8_TYPES[0]
    rng = np.random.default_rng(2)
    a = o.f8_from_float(rng.standard_normal((48, 200)), f8)
    b = rand_int8(rng, (200, 64), np.int8)
    _leak_check(lambda: gk.qlinear_matmul(a, np.float32(0.1), np.zeros((), f8), b,
                                          np.float32(0.02), np.int8(0), np.float32(0.5),
                                          np.zeros((), o.FLOAT8_TYPES[2])))


@pytestmark_linux
def test_no_memory_growth_on_error_paths():
    gk = _gk()
    a = np.ones((64, 300), np.uint8)
    b = np.ones((301, 64), np.int8)  # inner-dim mismatch

    def bad_calls():
        for args in ((a, b), (a.astype(np.float32), b[:300]),
                     (a, b[:300], np.zeros((3,), np.uint8))):
            try:
                gk.matmul_integer(*args)
            except (TypeError, ValueError):
                pass
            else:  # pragma: no cover
                raise AssertionError("expected an error")
        try:
            gk.qlinear_matmul(a, np.float32(1), np.uint8(0), b[:300], np.float32(1),
                              np.int8(0), np.float32(0), np.uint8(0))
        except ValueError:
            pass
        else:  # pragma: no cover
            raise AssertionError("expected an error")

    _leak_check(bad_calls, calls=1000, slack=4 * 2**20)


@pytestmark_linux
def test_no_memory_growth_gemm():
    gk = _gk()
    a, b, c, alpha, beta = _gemm_case(3)
    _leak_check(lambda: gk.gemm(a, b, c, alpha, beta, 0, 0))
