"""gemmkit.cast vs ml_dtypes' astype (and NumPy's for float16), one thread, same inputs,
one process.

    python benchmarks/bench_codecs.py                # 4M elements, every usable codecs path
    python benchmarks/bench_codecs.py --n 1000000 --reps 31
    python benchmarks/bench_codecs.py --paths avx512

Rows: float32 -> each float8 (gemmkit saturating, as ONNX Cast's default; ml_dtypes' astype
does not saturate, it is the speed reference the issue names), each float8 -> float32,
float32 <-> bfloat16 / float16, and float64 -> float8 / float32 / float16 / bfloat16 and
float32 / bfloat16 -> float64 (NumPy's or ml_dtypes' astype).  Each row times gemmkit
allocating its result (like astype), gemmkit writing into a preallocated `out=`, and the
reference, interleaved, median of --reps runs (the machine may be shared).  "GB/s" is
gemmkit's bytes read + written per second (allocating form), and "copy GB/s" the same for
np.copyto of the destination's bytes measured in the same row: the rate at which this core
moves memory, the bound of the widening rows.  The float32 inputs are normal-distributed
values scaled into each float8's range, with a few NaN/inf/out-of-range values mixed in.
"""
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import argparse
import statistics
import time

import ml_dtypes
import numpy as np

import gemmkit as gk
from _bench_common import cpu_class, cpu_name, one_thread
from gemmkit import _core

F8 = [("e4m3fn", ml_dtypes.float8_e4m3fn), ("e4m3fnuz", ml_dtypes.float8_e4m3fnuz),
      ("e5m2", ml_dtypes.float8_e5m2), ("e5m2fnuz", ml_dtypes.float8_e5m2fnuz)]


def timed(fns, reps):
    """Median seconds of each callable, repetitions interleaved."""
    times = [[] for _ in fns]
    for f in fns:
        f()  # warm: page in results, caches
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def cases(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    x[:: 9973] = np.nan
    x[:: 10007] = np.inf
    rows = []
    for name, dt in F8:
        xs = x * np.float32(ml_dtypes.finfo(dt).max / 4)
        rows.append((f"float32 -> {name} (sat)", xs, dt, lambda a, d=dt: a.astype(d), "ml_dtypes"))
    for name, dt in F8:
        c = (x * np.float32(ml_dtypes.finfo(dt).max / 4)).astype(dt)
        rows.append((f"{name} -> float32", c, np.float32, lambda a: a.astype(np.float32), "ml_dtypes"))
    xb = x * np.float32(1000)
    rows.append(("float32 -> bfloat16", xb, ml_dtypes.bfloat16,
                 lambda a: a.astype(ml_dtypes.bfloat16), "ml_dtypes"))
    rows.append(("bfloat16 -> float32", xb.astype(ml_dtypes.bfloat16), np.float32,
                 lambda a: a.astype(np.float32), "ml_dtypes"))
    rows.append(("float32 -> float16", xb, np.float16, lambda a: a.astype(np.float16), "numpy"))
    rows.append(("float16 -> float32", xb.astype(np.float16), np.float32,
                 lambda a: a.astype(np.float32), "numpy"))
    rows.append(("float16 -> bfloat16", xb.astype(np.float16), ml_dtypes.bfloat16,
                 lambda a: a.astype(ml_dtypes.bfloat16), "ml_dtypes"))
    x64 = (x * 100).astype(np.float64)
    rows.append(("float64 -> e4m3fn (sat)", x64, ml_dtypes.float8_e4m3fn,
                 lambda a: a.astype(ml_dtypes.float8_e4m3fn), "ml_dtypes"))
    rows.append(("float64 -> float32", x64, np.float32, lambda a: a.astype(np.float32), "numpy"))
    rows.append(("float64 -> float16", x64, np.float16, lambda a: a.astype(np.float16), "numpy"))
    rows.append(("float64 -> bfloat16", x64, ml_dtypes.bfloat16,
                 lambda a: a.astype(ml_dtypes.bfloat16), "ml_dtypes"))
    rows.append(("float32 -> float64", xb, np.float64, lambda a: a.astype(np.float64), "numpy"))
    rows.append(("bfloat16 -> float64", xb.astype(ml_dtypes.bfloat16), np.float64,
                 lambda a: a.astype(np.float64), "ml_dtypes"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4 << 20, help="elements (default 4M)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--paths", default="all",
                    help="'all' (every usable level whose codecs family differs), or names")
    args = ap.parse_args()

    info = gk.cpu_info()
    default_isa = info["isa"]
    if args.paths == "all":
        paths, seen = [], set()
        for lvl in info["available"]:
            _core._set_isa(lvl)
            fam = gk.cpu_info()["engines"]["codecs"]
            if fam not in seen:
                seen.add(fam)
                paths.append(lvl)
        _core._set_isa(default_isa)
    else:
        paths = [p.strip() for p in args.paths.split(",")]

    print(f"# gemmkit.cast benchmark: {cpu_name()} -- {cpu_class(info['features'])}")
    nthreads = one_thread()
    print(f"# gemmkit on {nthreads} thread, n = {args.n} elements, median of {args.reps}; gemmkit {gk.__version__}, "
          f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")
    rng = np.random.default_rng(0)
    rows = cases(args.n, rng)
    hdr = (f"{'path':<11} {'conversion':<24} {'gemmkit ms':>10} {'out= ms':>8} {'ref ms':>8} "
           f"{'ref':<9} {'ratio':>7} {'GB/s':>6} {'copy GB/s':>9}")
    print(hdr)
    print("-" * len(hdr))
    for path in paths:
        _core._set_isa(path)
        fam = gk.cpu_info()["engines"]["codecs"]
        for label, src, dst, ref, refname in rows:
            out = np.empty(src.shape, dst)
            dst_bytes = np.empty(src.shape, dst)
            dst_bytes2 = np.empty(src.shape, dst)
            t_gk, t_out, t_ref, t_copy = timed(
                [lambda: gk.cast(src, dst), lambda: gk.cast(src, dst, out=out),
                 lambda: ref(src), lambda: np.copyto(dst_bytes2, dst_bytes)], args.reps)
            moved = src.nbytes + out.nbytes
            print(f"{fam:<11} {label:<24} {t_gk * 1e3:10.3f} {t_out * 1e3:8.3f} "
                  f"{t_ref * 1e3:8.3f} {refname:<9} {t_ref / t_gk:6.1f}x "
                  f"{moved / t_gk / 1e9:6.1f} {2 * out.nbytes / t_copy / 1e9:9.1f}")
    _core._set_isa(default_isa)


if __name__ == "__main__":
    main()
