"""Gemm and per-call overhead: gemmkit vs NumPy (and onnxruntime where it has the case).

Same inputs, one process, interleaved repetitions, medians; one thread everywhere.

    python benchmarks/bench_gemm.py            # float paths, Gemm per dtype, overhead
    python benchmarks/bench_gemm.py --quick
    python benchmarks/bench_gemm.py --sizes 32,96     # chosen n for the n^3 cases
    python benchmarks/bench_gemm.py --float-only --float-sizes 64,1024,16x4096

The float32/float64 section runs every Gemm float path this CPU has (each forced through
the ISA selection, like GEMMKIT_ISA) at n^3 and MxKxN = M x 4096 x 4096 (M = 1, 16), and
quotes each as GFLOP/s and % of that path's FMA peak (benchmarks/c/bench_peak_x86.c,
measured in this process right before the row); float32 also against onnxruntime's Gemm
with alpha, beta and a C row.

The float16/bfloat16 section runs the widening families (exact widening while packing,
the float32 FMA micro-kernel, one rounding at the end) on every path at 256^3 and 1024^3:
float16 against onnxruntime's float16 Gemm node and its Cast -> float32 Gemm -> Cast graph,
and NumPy's float16 matmul (256^3 only: it has no BLAS); bfloat16 against NumPy's float32
matmul on float32 copies of the same values (the time of the float32 product it stands
for).  % of peak is of the float32 FMA peak (the kernel is the float32 one).

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
from _bench_common import build_c_lib, cpu_name, peak_gops  # noqa: E402


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


def ort_gemm(dtype, alpha=1.0, beta=1.0):
    """onnxruntime Gemm (opset 13, one thread) of float32 or float64 with these alpha and
    beta, inputs A, B, C; or None (no onnxruntime, or another dtype)."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    t = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
         np.float16: TensorProto.FLOAT16}.get(dtype)
    if t is None:
        return None
    g = helper.make_graph(
        [helper.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=alpha, beta=beta)], "g",
        [helper.make_tensor_value_info(n, t, None) for n in "ABC"],
        [helper.make_tensor_value_info("Y", t, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    try:
        return ort.InferenceSession(m.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001  (no kernel for this type in this onnxruntime)
        return None


def ort_cast_gemm():
    """onnxruntime float16 A, B, C -> Cast to float32 -> Gemm -> Cast to float16 (one
    thread): the float32 route a runtime without a float16 Gemm takes; or None."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    F, H = TensorProto.FLOAT, TensorProto.FLOAT16
    g = helper.make_graph(
        [helper.make_node("Cast", ["A"], ["Af"], to=F),
         helper.make_node("Cast", ["B"], ["Bf"], to=F),
         helper.make_node("Cast", ["C"], ["Cf"], to=F),
         helper.make_node("Gemm", ["Af", "Bf", "Cf"], ["Yf"]),
         helper.make_node("Cast", ["Yf"], ["Y"], to=H)], "g",
        [helper.make_tensor_value_info(n, H, None) for n in "ABC"],
        [helper.make_tensor_value_info("Y", H, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


# The FMA peak loop of each float path (benchmarks/c/bench_peak_x86.c), per dtype.
FMA_PEAKS = {("avx512", "float32"): "gk_peak_fma_ps_zmm", ("avx512", "float64"): "gk_peak_fma_pd_zmm",
             ("avx2", "float32"): "gk_peak_fma_ps_ymm", ("avx2", "float64"): "gk_peak_fma_pd_ymm"}


class FmaPeaks:
    """One core's FMA peak per path (GFLOP/s), measured when asked (the clock drifts);
    None without a C compiler, off x86-64, or for a path this CPU does not run."""

    def __init__(self):
        import ctypes
        import subprocess
        self.lib = None
        try:
            lib = ctypes.CDLL(build_c_lib("bench_peak_x86"))
            for f in FMA_PEAKS.values():
                getattr(lib, f).restype = ctypes.c_int64
                getattr(lib, f).argtypes = [ctypes.c_long]
            self.lib = lib
        except (OSError, subprocess.CalledProcessError, AttributeError):
            self.lib = None

    def __call__(self, path, dtype):
        name = FMA_PEAKS.get((path, dtype))
        if self.lib is None or name is None or path not in gk.cpu_info()["available"]:
            return None
        f = getattr(self.lib, name)
        return peak_gops(f)


def float_paths(cases, budget):
    """The float32/float64 rows: every Gemm float path forced, vs NumPy (and ort)."""
    from _bench_common import cpu_class
    from gemmkit import _core
    info = gk.cpu_info()
    default = info["isa"]
    paths = [p for p in ("avx512", "avx2") if p in info["available"]]
    if not paths:
        paths = [default]
    peaks = FmaPeaks()
    print(f"CPU class: {cpu_class(info['features'])}; float paths: {', '.join(paths)}")
    hdr = (f"{'case':30s} {'path':7s} {'gemmkit':>10s} {'GFLOP/s':>8s} {'%peak':>6s} "
           f"{'NumPy':>10s} {'ratio':>6s} {'ort a,b,C':>10s} {'ratio':>6s}")
    print(hdr)
    print("-" * len(hdr))
    rng = np.random.default_rng(1)
    sess = ort_gemm(np.float32, 0.5, 2.0)
    for dt in (np.float32, np.float64):
        for (M, K, N) in cases:
            A = rng.standard_normal((M, K)).astype(dt)
            B = rng.standard_normal((K, N)).astype(dt)
            C = rng.standard_normal((N,)).astype(dt)
            flops = 2.0 * M * N * K
            for path in paths:
                _core._set_isa(path)
                fam = _core._gemm_family_info(dt)["isa"]
                try:
                    fns = [lambda: gk.gemm(A, B), lambda: A @ B]
                    with_ort = dt is np.float32 and sess is not None
                    if with_ort:
                        feeds = {"A": A, "B": B, "C": C}
                        fns += [lambda: gk.gemm(A, B, C, 0.5, 2.0),
                                lambda: sess.run(None, feeds)]
                    pk = peaks(fam, np.dtype(dt).name)
                    ts = timed(fns, budget)
                finally:
                    _core._set_isa(default)
                gf = flops / ts[0] / 1e9
                name = f"{np.dtype(dt).name} {M}x{K}x{N}"
                line = (f"{name:30s} {fam:7s} {ts[0] * 1e6:8.1f}us {gf:8.2f} "
                        f"{(f'{100 * gf / pk:5.1f}%') if pk else '    -':>6s} "
                        f"{ts[1] * 1e6:8.1f}us {ts[1] / ts[0]:5.2f}x")
                if with_ort:
                    line += f" {ts[3] * 1e6:8.1f}us {ts[3] / ts[2]:5.2f}x"
                print(line, flush=True)
    print("(ratio: the other's time / gemmkit's; ort a,b,C: onnxruntime Gemm alpha=0.5, "
          "beta=2, C a row, against gemmkit with the same arguments)\n")


def half_paths(sizes, budget):
    """The float16/bfloat16 rows: every widening path forced, vs onnxruntime and NumPy."""
    from gemmkit import _core
    info = gk.cpu_info()
    default = info["isa"]
    paths = [p for p in ("avx512", "avx2") if p in info["available"]] or [default]
    peaks = FmaPeaks()
    hdr = (f"{'case':22s} {'path':7s} {'gemmkit':>10s} {'GFLOP/s':>8s} {'%peak':>6s} "
           f"{'ort f16':>10s} {'ratio':>6s} {'ort cast':>10s} {'ratio':>6s} "
           f"{'NumPy':>10s} {'ratio':>6s}")
    print(hdr)
    print("-" * len(hdr))
    rng = np.random.default_rng(2)
    s16, scast = ort_gemm(np.float16), ort_cast_gemm()
    for dt in (np.float16, ml_dtypes.bfloat16):
        for n in sizes:
            A, B, C = (rng.standard_normal(s).astype(dt) for s in ((n, n), (n, n), (n,)))
            Af, Bf, Cf = (x.astype(np.float32) for x in (A, B, C))  # the same values
            feeds = {"A": A, "B": B, "C": C}
            for path in paths:
                _core._set_isa(path)
                fam = _core._gemm_family_info(dt)["isa"]
                cols = {}
                fns = [lambda: gk.gemm(A, B, C)]  # Y = A @ B + C everywhere
                if dt is np.float16:
                    for name, sess in (("ort f16", s16), ("ort cast", scast)):
                        if sess is not None:
                            cols[name] = len(fns)
                            fns.append(lambda sess=sess: sess.run(None, feeds))
                    if n <= 256:  # NumPy's float16 matmul is a scalar loop
                        cols["NumPy"] = len(fns)
                        fns.append(lambda: A @ B + C)
                else:
                    cols["NumPy"] = len(fns)
                    fns.append(lambda: Af @ Bf + Cf)
                try:
                    pk = peaks(fam, "float32")
                    ts = timed(fns, budget)
                finally:
                    _core._set_isa(default)
                gf = 2.0 * n**3 / ts[0] / 1e9
                line = (f"{np.dtype(dt).name + f' {n}^3':22s} {fam:7s} {ts[0] * 1e6:8.1f}us "
                        f"{gf:8.2f} {(f'{100 * gf / pk:5.1f}%') if pk else '    -':>6s}")
                for name in ("ort f16", "ort cast", "NumPy"):
                    if name in cols:
                        t = ts[cols[name]]
                        star = "*" if (name == "NumPy" and dt is not np.float16) else " "
                        line += f" {t * 1e6:8.1f}us {t / ts[0]:5.2f}x{star}"
                    else:
                        line += f" {'-':>10s} {'-':>6s} "
                print(line, flush=True)
    print("(Y = A @ B + C row everywhere; ratio: the other's time / gemmkit's; ort cast: "
          "Cast -> float32 Gemm -> Cast; * NumPy float32 of the same values)\n")


def parse_cases(spec):
    """"64,1024,16x4096" -> [(64, 64, 64), (1024, 1024, 1024), (16, 4096, 4096)]."""
    out = []
    for v in spec.split(","):
        v = v.strip()
        if "x" in v:
            m, k = v.split("x")
            out.append((int(m), int(k), int(k)))
        elif v:
            out.append((int(v),) * 3)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--sizes", default=None, metavar="N,...",
                    help="the n of the n^3 cases instead of the default ones")
    ap.add_argument("--float-sizes", default=None, metavar="N|MxK,...",
                    help="cases of the float path section (n^3, or M x K x K); default "
                         "64,256,1024,2048,1x4096,16x4096 (--sizes given: those n)")
    ap.add_argument("--float-only", action="store_true",
                    help="only the float32/float64 path section")
    ap.add_argument("--half-sizes", default=None, metavar="N,...",
                    help="the n of the float16/bfloat16 n^3 cases (default 256,1024)")
    ap.add_argument("--half-only", action="store_true",
                    help="only the float16/bfloat16 path section")
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
    fspec = args.float_sizes or (args.sizes if args.sizes else
                                 ("64,256,1x4096" if args.quick else
                                  "64,256,1024,2048,1x4096,16x4096"))
    if not args.half_only:
        float_paths(parse_cases(fspec), args.budget)
    if args.float_only:
        return 0
    hspec = args.half_sizes or ("256" if args.quick else "256,1024")
    half_paths([int(v) for v in hspec.split(",")], args.budget)
    if args.half_only:
        return 0
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
