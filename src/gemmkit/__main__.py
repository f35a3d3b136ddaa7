"""python -m gemmkit: what this machine runs, a self-check against NumPy, a timing table."""
import sys
import time

import ml_dtypes
import numpy as np

import gemmkit as gk


def _wrap32(x):
    return ((x.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def self_check(rng):
    """Each op on random inputs against a NumPy oracle written from the ONNX definition.
    Returns a list of (name, ok) pairs."""
    results = []
    a = rng.integers(0, 256, (37, 300), dtype=np.uint8)
    b = rng.integers(-128, 128, (300, 29)).astype(np.int8)
    azp = rng.integers(0, 256, 37).astype(np.uint8)          # per-row zero point of A
    bzp = np.int8(-7)
    ref = _wrap32((a.astype(np.int64) - azp[:, None]) @ (b.astype(np.int64) - bzp))
    results.append(("matmul_integer u8 x s8, per-row zp", np.array_equal(
        gk.matmul_integer(a, b, azp, bzp), ref)))

    sa, sb, sy = np.float32(0.02), np.float32(0.03), np.float32(0.5)
    acc = (a.astype(np.int64) - 3) @ (b.astype(np.int64) + 1)
    mult = np.float64(np.float32(np.float32(sa * sb) / sy))
    yref = np.clip(np.rint(acc * mult) + 128, 0, 255).astype(np.uint8)
    y = gk.qlinear_matmul(a, sa, np.uint8(3), b, sb, np.int8(-1), sy, np.uint8(128))
    results.append(("qlinear_matmul u8 x s8 -> u8", np.array_equal(y, yref)))

    for dt in (np.float32, np.float64):
        A = rng.standard_normal((33, 65)).astype(dt)
        B = rng.standard_normal((47, 65)).astype(dt)
        C = rng.standard_normal((47,)).astype(dt)
        got = gk.gemm(A, B.T.copy(), C, alpha=0.5, beta=2.0)
        want = 0.5 * (A.astype(np.float64) @ B.T.astype(np.float64)) + 2.0 * C
        tol = 1e-4 if dt == np.float32 else 1e-12
        results.append((f"gemm {np.dtype(dt).name}", np.allclose(got, want, rtol=tol, atol=tol)))
    # bfloat16: float32 sums of exact products, one rounding to bfloat16 (on AMX-BF16 or
    # AVX512_BF16 CPUs a dot-product instruction runs it: the same bound)
    bf16 = ml_dtypes.bfloat16
    A = rng.standard_normal((64, 300)).astype(bf16)
    B = rng.standard_normal((300, 70)).astype(bf16)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    exact = A64 @ B64
    bound = (300 + 2) * 2.0**-24 * (np.abs(A64) @ np.abs(B64)) + 2.0**-8 * np.abs(exact)
    got = gk.gemm(A, B).astype(np.float64)
    results.append(("gemm bfloat16 (float32-accumulation bound)",
                    bool((np.abs(got - exact) <= bound).all())))
    Ai = rng.integers(-2**62, 2**62, (9, 13), dtype=np.int64)
    Bi = rng.integers(-2**62, 2**62, (13, 11), dtype=np.int64)
    with np.errstate(over="ignore"):
        want = Ai @ Bi                                        # NumPy wraps mod 2**64
    results.append(("gemm int64 (wrapping)", np.array_equal(gk.gemm(Ai, Bi), want)))

    # the output split over threads never changes a bit (K is never split)
    a = rng.integers(0, 256, (300, 700), dtype=np.uint8)
    b = rng.integers(-128, 128, (700, 500)).astype(np.int8)
    A = rng.standard_normal((300, 700)).astype(np.float32)
    B = rng.standard_normal((700, 500)).astype(np.float32)
    with gk.threads(1):
        y1, g1 = gk.matmul_integer(a, b), gk.gemm(A, B)
    same = True
    for t in (2, 3, 4):
        with gk.threads(t):
            same = same and np.array_equal(gk.matmul_integer(a, b), y1) and \
                gk.gemm(A, B).tobytes() == g1.tobytes()
    results.append(("1..4 threads give identical results", same))
    return results


# Seconds each timing first waits, so that the previous row's threads are idle: after a
# call OpenBLAS's workers spin-wait for about 0.1 s, and where the machine has as many cores
# as threads they hold the cores the next call's workers need (Zen 5, 2 cores: gemm float32
# 512^3 on 2 threads ran at its 1-thread speed right after NumPy's float32 matmul).
_SETTLE = 0.3


def _best(fn, reps=5, min_time=0.05):
    time.sleep(_SETTLE)
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / reps or n >= 1 << 20:
            break
        n *= 4
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return float(np.median(times))


def timing_table(rng):
    rows = []
    for n in (64, 256, 512):
        a = rng.integers(0, 256, (n, n), dtype=np.uint8)
        b = rng.integers(-128, 128, (n, n)).astype(np.int8)
        t_gk = _best(lambda: gk.matmul_integer(a, b))
        a32, b32 = a.astype(np.int32), b.astype(np.int32)
        t_np = _best(lambda: a32 @ b32, reps=3)
        rows.append((f"matmul_integer u8s8 {n}^3", t_gk, t_np, 2 * n**3))
    for n in (64, 256, 512):
        A = rng.standard_normal((n, n)).astype(np.float32)
        B = rng.standard_normal((n, n)).astype(np.float32)
        rows.append((f"gemm float32 {n}^3", _best(lambda: gk.gemm(A, B)),
                     _best(lambda: A @ B), 2 * n**3))
    # bfloat16 has no NumPy matmul: NumPy's float32 one on the same values stands for it
    A = rng.standard_normal((512, 512)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((512, 512)).astype(ml_dtypes.bfloat16)
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    rows.append(("gemm bfloat16 512^3 (*)", _best(lambda: gk.gemm(A, B)),
                 _best(lambda: A32 @ B32), 2 * 512**3))
    return rows


def _parse(argv):
    import argparse
    p = argparse.ArgumentParser(
        prog="python -m gemmkit",
        description="What this machine runs (gemmkit.cpu_info()), a self-check of every op "
                    "against NumPy oracles written from the ONNX definitions, and a timing "
                    "table against NumPy (a few seconds).  Exit status 1 if a check fails.")
    p.add_argument("--no-timing", action="store_true",
                   help="the machine report and the self-check only (no timing table)")
    return p.parse_args(argv)


def main(argv=None):
    args = _parse(sys.argv[1:] if argv is None else argv)
    rng = np.random.default_rng(2024)
    info = gk.cpu_info()
    print(f"gemmkit {gk.__version__}")
    for k, v in info.items():
        print(f"  {k:22s} {v}")
    print("\nself-check against NumPy:")
    results = self_check(rng)
    for name, ok in results:
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if args.no_timing:
        return _verdict(results)
    print(f"\ntiming (median; gemmkit on up to {gk.get_num_threads()} threads; NumPy: int32 "
          f"matmul, and its BLAS with its own threading for float32):")
    print(f"  {'case':28s} {'gemmkit':>11s} {'NumPy':>11s} {'speed-up':>9s} {'GOP/s':>8s}")
    for name, tg, tn, ops in timing_table(rng):
        print(f"  {name:28s} {tg * 1e6:9.1f}us {tn * 1e6:9.1f}us {tn / tg:8.2f}x "
              f"{ops / tg / 1e9:8.1f}")
    print("  (*) NumPy: float32 matmul of the same values (NumPy has no bfloat16 matmul)")
    return _verdict(results)


def _verdict(results):
    if not all(ok for _, ok in results):
        print("\nself-check FAILED")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
