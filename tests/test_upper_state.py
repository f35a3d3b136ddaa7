"""Every entry point returns with the ymm/zmm upper halves clear (x86).

A kernel that leaves them in use (an asm loop on ymm/zmm without a closing vzeroupper:
the compiler does not add one for registers it only sees as clobbers) slows every
legacy-SSE instruction the caller's thread runs next: CPython's and NumPy's baseline code,
or gemmkit's own forced sse41 path.  Measured on Zen 5 with the benchmarks' peak loops,
which had exactly that defect: the SSE4.1 multiply-add loop ran at 13 GOP/s after the ymm
loop against 117 before.  The state is read with XGETBV(1) (XINUSE) right after each call
on the calling thread, which runs a part of every split product.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from gemmkit import _core

pytestmark = pytest.mark.skipif(
    _core._avx_upper_in_use() is None,
    reason="this CPU cannot report its ymm/zmm upper state (not x86 with AVX and XGETBV(1))")

# small-M, tall, blocked and K-blocked int8 routes; thin, blocked and transB Gemm
SHAPES = [(1, 64, 64), (3, 200, 300), (16, 256, 256), (64, 64, 64), (200, 300, 100),
          (40, 1100, 70)]
INT8_MIXES = [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8), (np.int8, np.uint8)]
GEMM_DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64,
               np.uint32, np.uint64]


def _calls(rng):
    """(name, thunk) for every op, type family and route, on inputs made up front."""
    out = []
    for M, K, N in SHAPES:
        for ta, tb in INT8_MIXES:
            a = rng.integers(0, 100, (M, K)).astype(ta)
            b = rng.integers(0, 100, (K, N)).astype(tb)
            tag = f"{M}x{K}x{N} {np.dtype(ta).name}x{np.dtype(tb).name}"
            out.append((f"matmul_integer {tag}",
                        lambda a=a, b=b, ta=ta, tb=tb: _core.matmul_integer(a, b, ta(3), tb(5))))
            col = rng.random(N).astype(np.float32) + 0.5  # per-column b scale and zero point
            zcol = np.full(N, 2, tb)
            out.append((f"qlinear_matmul {tag}",
                        lambda a=a, b=b, ta=ta, col=col, zcol=zcol: _core.qlinear_matmul(
                            a, np.float32(0.1), ta(1), b, col, zcol, np.float32(3.0),
                            np.uint8(5))))
        for dt in GEMM_DTYPES:
            a = rng.integers(0, 5, (M, K)).astype(dt)
            b = rng.integers(0, 5, (K, N)).astype(dt)
            c = rng.integers(0, 5, (N,)).astype(dt)
            bt = np.ascontiguousarray(b.T)
            tag = f"{M}x{K}x{N} {np.dtype(dt).name}"
            out.append((f"gemm {tag}", lambda a=a, b=b, c=c: _core.gemm(a, b, c, 2.0, 1.0)))
            out.append((f"gemm transB {tag}", lambda a=a, bt=bt: _core.gemm(a, bt, transB=1)))
    for f8 in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        a = rng.standard_normal((20, 70)).astype(f8)
        b = rng.standard_normal((70, 30)).astype(f8)
        out.append((f"qlinear_matmul {np.dtype(f8).name}",
                    lambda a=a, b=b, f8=f8: _core.qlinear_matmul(
                        a, np.float32(0.1), f8(0), b, np.float32(0.1), f8(0), np.float32(3.0),
                        f8(0))))
    x = rng.standard_normal(5000).astype(np.float32)
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2fnuz, np.float16,
               ml_dtypes.bfloat16):
        y = x.astype(dt)
        out.append((f"cast float32->{np.dtype(dt).name}", lambda dt=dt: _core.cast(x, dt)))
        out.append((f"cast {np.dtype(dt).name}->float32",
                    lambda y=y: _core.cast(y, np.float32)))
    w8 = rng.integers(-128, 128, (300, 200)).astype(np.int8)
    a8 = rng.integers(0, 256, (5, 300)).astype(np.uint8)
    p8 = _core.pack_b(w8, "matmul_integer")
    out.append(("matmul_integer pack_b", lambda: _core.matmul_integer(a8, p8)))
    wf = rng.standard_normal((300, 200)).astype(np.float32)
    af = rng.standard_normal((50, 300)).astype(np.float32)
    pf = _core.pack_b(wf, "gemm")
    out.append(("gemm pack_b", lambda: _core.gemm(af, pf)))
    return out


def test_every_call_leaves_the_upper_halves_clear(isa):
    rng = np.random.default_rng(7)
    calls = _calls(rng)
    dirty = []
    for name, call in calls:
        # gemmkit cleared them after the last call; a dirty state here is not its doing
        assert _core._avx_upper_in_use() is False, f"dirty before {name}"
        call()
        if _core._avx_upper_in_use():
            dirty.append(name)
    assert not dirty, f"{isa}: returned with ymm/zmm upper halves in use: {dirty}"


# The benchmarks' peak loops (benchmarks/c/bench_peak_x86.c, asm) had the defect; each
# runs before a row of the tables, so one left dirty slowed the next legacy-SSE row.
PEAK_LOOPS = {
    "gk_peak_dpbusd_zmm": {"avx512vnni"}, "gk_peak_dpbusd_ymm_evex": {"avx512vnni", "avx512vl"},
    "gk_peak_dpbusd_ymm_vex": {"avxvnni"}, "gk_peak_maddwd_zmm": {"avx512bw"},
    "gk_peak_maddwd_ymm": {"avx2"}, "gk_peak_fma_ps_zmm": {"avx512f"},
    "gk_peak_fma_pd_zmm": {"avx512f"}, "gk_peak_fma_ps_ymm": {"fma"},
    "gk_peak_fma_pd_ymm": {"fma"}, "gk_peak_mulld_zmm": {"avx512f"},
    "gk_peak_mulld_ymm": {"avx2"}, "gk_peak_mullq_zmm": {"avx512dq"},
    "gk_peak_mullq_ymm": {"avx512dq", "avx512vl"}, "gk_peak_muludq_ymm": {"avx2"},
    "gk_peak_dpbf16_zmm": {"avx512bf16"},
}


def test_benchmark_peak_loops_leave_the_upper_halves_clear():
    import ctypes
    import os
    import subprocess
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
    try:
        from _bench_common import build_c_lib
        lib = ctypes.CDLL(build_c_lib("bench_peak_x86"))
    except (ImportError, OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot build benchmarks/c/bench_peak_x86.c (no C compiler, or no "
                    f"benchmarks/ beside tests/): {exc!r}")
    finally:
        sys.path.pop(0)
    have = set(_core.cpu_info()["features"])
    ran, dirty = [], []
    for name, needs in PEAK_LOOPS.items():
        if not needs <= have:
            continue
        f = getattr(lib, name)
        f.argtypes = [ctypes.c_long]
        f.restype = ctypes.c_int64
        f(10)
        ran.append(name)
        if _core._avx_upper_in_use():
            dirty.append(name)
            _core.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))  # clears
    assert ran, f"no peak loop runs on this CPU's features {sorted(have)}"
    assert not dirty, f"peak loops that return with ymm/zmm upper halves in use: {dirty}"
