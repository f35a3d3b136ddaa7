"""Gemm and per-call overhead: gemmkit vs NumPy (and onnxruntime where it has the case).

Same inputs, one process, interleaved repetitions, medians; one thread everywhere.

    python benchmarks/bench_gemm.py            # Gemm per dtype + small-call overhead
    python benchmarks/bench_gemm.py --quick
    python benchmarks/bench_gemm.py --sizes 32,96     # chosen n for the n^3 cases

NumPy's integer and float16 matmuls have no BLAS behind them; bfloat16 has no NumPy
matmul at all (compared through a float32 round trip instead, marked *).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread, and no spinning sibling
import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import gemmkit as gk  # noqa: E402
from _bench_common import cpu_name  # noqa: E402


def timed(fns, budget):
    """Median seconds per call of each fn, repetitions interleaved."""
    for f in fns:
        f()
    t0 = time.perf_counter()
    fns[0]()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(0.01 / one))
    reps = max(3, min(21, int(budget / (one * inner * len(fns)))))
    res = [[] for _ in fns]
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            res[i].append((time.perf_counter() - t0) / inner)
    return [statistics.median(r) for r in res]


def ort_gemm(dtype):
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    t = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}.get(dtype)
    if t is None:
        return None
    g = helper.make_graph(
        [helper.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=1.0, beta=1.0)], "g",
        [helper.make_tensor_value_info(n, t, None) for n in "ABC"],
        [helper.make_tensor_value_info("Y", t, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--sizes", default=None, metavar="N,...",
                    help="the n of the n^3 cases instead of the default ones")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    sizes = [64, 256] if args.quick else [64, 256, 512]
    if args.sizes:
        sizes = [int(v) for v in args.sizes.split(",")]
    info = gk.cpu_info()
    fams = sorted(set(info["engines"]["gemm"].values()))
    print(f"CPU: {cpu_name()}; features: {','.join(info['features'])}; gemmkit ISA level "
          f"{info['isa']}, Gemm families: {','.join(fams)}")
    print(f"gemmkit {gk.__version__}, NumPy {np.__version__}; one thread; medians")
    hdr = (f"{'case':26s} {'gemmkit':>10s} {'GFLOP/s':>8s} {'NumPy':>10s} {'ratio':>7s} "
           f"{'ort':>10s} {'ratio':>7s}")
    print(hdr)
    print("-" * len(hdr))
    dtypes = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64,
              np.uint32, np.uint64]
    for dt in dtypes:
        sess = ort_gemm(dt)
        for n in sizes:
            if np.dtype(dt).kind in "iu":
                A = rng.integers(0, 100, (n, n)).astype(dt)
                B = rng.integers(0, 100, (n, n)).astype(dt)
                C = rng.integers(0, 100, (n,)).astype(dt)
            else:
                A = rng.standard_normal((n, n)).astype(dt)
                B = rng.standard_normal((n, n)).astype(dt)
                C = rng.standard_normal((n,)).astype(dt)
            star = ""
            if dt is ml_dtypes.bfloat16:
                f_np = lambda: ((A.astype(np.float32) @ B.astype(np.float32))  # noqa: E731
                                + C.astype(np.float32)).astype(dt)
                star = "*"
            else:
                f_np = lambda: A @ B + C  # noqa: E731
            f_gk = lambda: gk.gemm(A, B, C)  # noqa: E731
            fns = [f_gk, f_np]
            if sess is not None:
                feeds = {"A": A, "B": B, "C": C}
                fns.append(lambda: sess.run(None, feeds))
            if np.dtype(dt).kind in "iu" and n > 256:
                continue  # NumPy's integer matmul takes seconds here
            ts = timed(fns, args.budget)
            name = f"gemm {np.dtype(dt).name} {n}^3"
            line = (f"{name:26s} {ts[0] * 1e6:8.1f}us {2 * n**3 / ts[0] / 1e9:8.2f} "
                    f"{ts[1] * 1e6:8.1f}us {ts[1] / ts[0]:6.2f}x{star}")
            if sess is not None:
                line += f" {ts[2] * 1e6:8.1f}us {ts[2] / ts[0]:6.2f}x"
            print(line, flush=True)

    print("\nper-call cost of tiny calls (1x1x1: argument handling + allocation + dispatch)")
    a8 = np.ones((1, 1), np.uint8)
    b8 = np.ones((1, 1), np.int8)
    f1 = np.ones((1, 1), np.float32)
    s, z, zb = np.float32(0.1), np.uint8(1), np.int8(0)
    cases = [("matmul_integer", lambda: gk.matmul_integer(a8, b8)),
             ("qlinear_matmul", lambda: gk.qlinear_matmul(a8, s, z, b8, s, zb, s, z)),
             ("gemm float32", lambda: gk.gemm(f1, f1)),
             ("numpy matmul float32", lambda: f1 @ f1)]
    for name, f in cases:
        (t,) = timed([f], args.budget)
        print(f"  {name:22s} {t * 1e6:6.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
