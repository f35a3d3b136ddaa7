"""gemmkit vs onnxruntime on MatMulInteger and QLinearMatMul, one thread, same inputs.

onnxruntime runs single-node InferenceSessions (intra_op_num_threads=1, B as a graph input,
so neither side can pre-pack B across calls).  Repetitions of the two are interleaved and
the median is reported, because the machine is shared and noisy.  Where the two outputs
differ, both are compared with the exact oracle (tests/oracles.py) and the row says which
one is off: onnxruntime's pre-VNNI x86 kernels (AVX2 / SSE4.1, e.g. Zen 2) add u8 x s8
pairs in a saturating int16 lane, so there its u8s8 rows time an inexact computation.

    python benchmarks/bench_int8.py                 # the issue's table on the best path
    python benchmarks/bench_int8.py --paths all     # every usable gemmkit path
    python benchmarks/bench_int8.py --quick         # a few cases, fast
    python benchmarks/bench_int8.py --shapes 64x64x64,1x256x256   # chosen M x K x N
    python benchmarks/bench_int8.py --batched       # batched products vs the same rows in 2-D

--batched times products with a batch dim and a B shared across it, such as models quantized
by onnxruntime's tool run ((64, 8, 64) @ (64, 128), (64, 1, 768) @ (768, 768)), with
MatMulInteger and with QLinearMatMul with per-column b scale and zero point, next to the same
rows as one 2-D product; the note says how much slower the batched call is than the 2-D one.
"""
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's BLAS threads spin on the other core
import argparse
import statistics
import sys
import time

import numpy as np

import gemmkit as gk
from _bench_common import cpu_name
from gemmkit import _core

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import oracles  # noqa: E402  (the exact references the test suite uses)

# The instruction each path is bound by, as measured by benchmarks/c/bench_peak_x86.c:
# tdpbusd, vpdpbusd zmm / ymm, and the exact int16 sequence of the pre-VNNI paths
# (vpmaddwd+vpaddd ymm, pmaddwd+paddd xmm).
PEAK_FUNCS = {"amx": "gk_peak_tdpbusd", "avx512vnni": "gk_peak_dpbusd_zmm",
              "avxvnni": "gk_peak_dpbusd_ymm_vex", "avx2": "gk_peak_maddwd_ymm",
              "sse41": "gk_peak_maddwd_xmm"}


class Peaks:
    """One core's instruction peaks, measured in this process right before each row (the
    machine's speed drifts), from benchmarks/c/bench_peak_x86.c built with the C compiler.
    Without a compiler, or for paths given with --peak, fixed numbers are used."""

    def __init__(self, fixed):
        self.fixed = fixed
        self.lib = None
        import ctypes
        import subprocess
        import tempfile
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c", "bench_peak_x86.c")
        so = os.path.join(tempfile.mkdtemp(), "gk_peaks.so")
        try:
            subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", so],
                           check=True, capture_output=True)
            self.lib = ctypes.CDLL(so)
            for f in PEAK_FUNCS.values():
                getattr(self.lib, f).restype = ctypes.c_int64
                getattr(self.lib, f).argtypes = [ctypes.c_long]
        except (OSError, subprocess.CalledProcessError, AttributeError):
            self.lib = None

    def __call__(self, path):
        if path in self.fixed:
            return self.fixed[path]
        if self.lib is None or path not in PEAK_FUNCS:
            return None
        f = getattr(self.lib, PEAK_FUNCS[path])
        best = 0.0
        for _ in range(5):
            t0 = time.perf_counter()
            macs = f(100000)
            best = max(best, 2.0 * macs / (time.perf_counter() - t0) / 1e9)
        return best

# (batch, M, K, N): batched A (batch, M, K) @ shared B (K, N), timed against the 2-D
# (batch * M, K) @ (K, N) with the same rows.
BATCHED = [(64, 8, 64, 128), (64, 1, 768, 768)]

SIGNS = {"u8s8": (np.uint8, np.int8), "s8u8": (np.int8, np.uint8),
         "u8u8": (np.uint8, np.uint8), "s8s8": (np.int8, np.int8)}
SHAPES = [(64, 64, 64), (256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048),
          (1, 4096, 4096), (16, 4096, 4096), (128, 4096, 4096)]
QUICK_SHAPES = [(64, 64, 64), (1024, 1024, 1024), (1, 4096, 4096), (16, 4096, 4096)]


def ort_session(op, ta, tb, ty=None):
    import onnxruntime as ort
    from onnx import TensorProto, helper
    t = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}
    if op == "MatMulInteger":
        inputs = [helper.make_tensor_value_info("A", t[ta], None),
                  helper.make_tensor_value_info("B", t[tb], None)]
        node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"])
        out = helper.make_tensor_value_info("Y", TensorProto.INT32, None)
    else:
        names = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
                 "y_zero_point"]
        types = [t[ta], TensorProto.FLOAT, t[ta], t[tb], TensorProto.FLOAT, t[tb],
                 TensorProto.FLOAT, t[ty]]
        inputs = [helper.make_tensor_value_info(n, ty_, None) for n, ty_ in zip(names, types)]
        node = helper.make_node("QLinearMatMul", names, ["Y"])
        out = helper.make_tensor_value_info("Y", t[ty], None)
    graph = helper.make_graph([node], "g", inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def time_pair(f_gk, f_ort, budget):
    """Interleaved repetitions; returns (median gemmkit s, median ort s)."""
    f_gk()
    f_ort()
    t0 = time.perf_counter()
    f_gk()
    one = time.perf_counter() - t0
    inner = max(1, int(0.02 / max(one, 1e-7)))
    reps = max(3, min(15, int(budget / max(one * inner * 2, 1e-9))))
    tg, to = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f_gk()
        tg.append((time.perf_counter() - t0) / inner)
        t0 = time.perf_counter()
        for _ in range(inner):
            f_ort()
        to.append((time.perf_counter() - t0) / inner)
    return statistics.median(tg), statistics.median(to)


def judge(y_gk, y_ort, want):
    """The note for a row where gemmkit and onnxruntime differ: which one is not exact."""
    def off(y):
        if y.shape != want.shape:
            return f"shape {y.shape}"
        bad = y != want
        if not bad.any():
            return None
        d = np.abs(y.astype(np.int64) - want.astype(np.int64)).max()
        return f"{int(bad.sum())}/{bad.size} off by <= {int(d)}"
    notes = []
    if off(y_gk):
        notes.append(f"GEMMKIT WRONG: {off(y_gk)}")
    if off(y_ort):
        notes.append(f"ort inexact: {off(y_ort)}")
    return " (" + "; ".join(notes) + ")"


def rerun_without_amx(argv):
    import subprocess
    import tempfile
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c", "no_amx_preload.c")
    so = os.path.join(tempfile.mkdtemp(), "no_amx_preload.so")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", so,
                    "-ldl"], check=True)
    env = dict(os.environ, GK_BENCH_NO_AMX="1",
               LD_PRELOAD=(so + " " + os.environ.get("LD_PRELOAD", "")).strip())
    return subprocess.run([sys.executable, os.path.abspath(__file__)] + list(argv),
                          env=env).returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paths", default="best",
                    help="'best', 'all' or a comma list of gemmkit paths")
    ap.add_argument("--signs", default="u8s8,s8u8,u8u8,s8s8")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-qlinear", action="store_true")
    ap.add_argument("--peak", action="append", default=[], metavar="PATH=GOPS",
                    help="one core's peak GOP/s for a path's instruction, for the %%peak "
                         "column (repeatable); by default each usable path's peak is "
                         "measured on this CPU just before its row")
    ap.add_argument("--shapes", default=None, metavar="MxKxN,...",
                    help="the cases to run instead of the default table")
    ap.add_argument("--batched", action="store_true",
                    help="the batched cases (batch x M x K @ K x N) against the same rows "
                         "as one 2-D product, instead of the default table")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds per case (about)")
    ap.add_argument("--no-amx", action="store_true",
                    help="Linux: refuse AMX to every library in the process (gemmkit and "
                         "onnxruntime), for a VNNI-vs-VNNI comparison as on CPUs without "
                         "AMX; re-runs this script under benchmarks/c/no_amx_preload.c")
    args = ap.parse_args(argv)
    if args.no_amx and "GK_BENCH_NO_AMX" not in os.environ:
        return rerun_without_amx(argv if argv is not None else sys.argv[1:])

    import onnxruntime as ort
    avail = gk.cpu_info()["available"]
    paths = ([avail[0]] if args.paths == "best" else avail if args.paths == "all"
             else args.paths.split(","))
    missing = [p for p in paths if p not in avail]
    if missing:
        ap.error(f"--paths {','.join(missing)}: not usable on this CPU; usable here: "
                 f"{','.join(avail)}")
    shapes = QUICK_SHAPES if args.quick else SHAPES
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rng = np.random.default_rng(0)
    fixed = {}
    for item in args.peak:
        name, _, val = item.partition("=")
        fixed[name] = float(val)
    peaks = Peaks(fixed)
    if "GK_BENCH_NO_AMX" in os.environ:
        print("AMX refused to every library in this process (--no-amx)")
    print(f"CPU: {cpu_name()}; features: {','.join(gk.cpu_info()['features'])}; "
          f"gemmkit paths usable: {','.join(avail)}")
    print(f"gemmkit {gk.__version__} ({gk.cpu_info()['isa']} default), onnxruntime "
          f"{ort.__version__}, one thread; %peak: % of the path's instruction peak "
          f"(tdpbusd, vpdpbusd, or exact vpmaddwd+vpaddd) measured just before the row")
    hdr = (f"{'op':14s} {'signs':5s} {'M':>5s} {'K':>5s} {'N':>5s} {'path':11s} "
           f"{'gemmkit':>10s} {'GOP/s':>7s} {'%peak':>6s} {'ort':>10s} {'GOP/s':>7s} "
           f"{'ratio':>7s}")
    print(hdr)
    print("-" * len(hdr))
    ops = ["MatMulInteger"] + ([] if args.no_qlinear else ["QLinearMatMul"])
    if args.batched:
        return run_batched(ops, paths, peaks, rng, args.budget)
    ort_inexact = gk_wrong = 0
    for op in ops:
        signs = args.signs.split(",") if op == "MatMulInteger" else ["u8s8", "s8s8", "u8u8"]
        for sg in signs:
            ta, tb = SIGNS[sg]
            try:
                sess = ort_session(op, ta, tb, np.uint8)
                sess_err = None
            except Exception as exc:  # onnxruntime implements only some type mixes
                sess, sess_err = None, type(exc).__name__
            for (M, K, N) in shapes:
                if op == "QLinearMatMul" and (M, K, N) == (2048, 2048, 2048):
                    continue
                lo_a, hi_a = np.iinfo(ta).min, np.iinfo(ta).max
                lo_b, hi_b = np.iinfo(tb).min, np.iinfo(tb).max
                A = rng.integers(lo_a, hi_a + 1, (M, K)).astype(ta)
                B = rng.integers(lo_b, hi_b + 1, (K, N)).astype(tb)
                azp, bzp = np.array(3, ta), np.array(5, tb)
                exact = {}
                if op == "MatMulInteger":
                    feeds = {"A": A, "B": B}
                    f_gk = lambda: gk.matmul_integer(A, B)  # noqa: E731
                    f_exact = lambda: oracles.matmul_integer(A, B)  # noqa: E731
                else:
                    sa, sb, sy = (np.array(0.01, np.float32), np.array(0.02, np.float32),
                                  np.array(float(K) * 0.05, np.float32))
                    yzp = np.array(128, np.uint8)
                    feeds = {"a": A, "a_scale": sa, "a_zero_point": azp, "b": B,
                             "b_scale": sb, "b_zero_point": bzp, "y_scale": sy,
                             "y_zero_point": yzp}
                    f_gk = lambda: gk.qlinear_matmul(A, sa, azp, B, sb, bzp, sy, yzp)  # noqa
                    f_exact = lambda: oracles.qlinear_matmul(  # noqa: E731
                        A, sa, azp, B, sb, bzp, sy, yzp)[0]
                f_ort = (lambda: sess.run(None, feeds)) if sess else None  # noqa: E731
                ops_n = 2.0 * M * K * N

                def pct(path, t, ops_n=ops_n):
                    p = peaks(path)
                    return f"{100 * ops_n / t / 1e9 / p:5.1f}%" if p else "   n/a"
                for path in paths:
                    _core._set_isa(path)
                    if path == "scalar" and ops_n > 2 * 512**3:
                        continue
                    head = (f"{op:14s} {sg:5s} {M:5d} {K:5d} {N:5d} {path:11s} ")
                    if f_ort is None:
                        tg, _ = time_pair(f_gk, f_gk, args.budget)
                        print(f"{head}{tg * 1e6:8.1f}us {ops_n / tg / 1e9:7.1f} "
                              f"{pct(path, tg)}   onnxruntime: "
                              f"not implemented ({sess_err})", flush=True)
                        continue
                    y_gk = f_gk()
                    y_ort = f_ort()[0]
                    note = ""
                    if not np.array_equal(y_gk, y_ort):
                        if "y" not in exact:
                            exact["y"] = f_exact()
                        note = judge(y_gk, y_ort, exact["y"])
                        if "ort" in note:
                            ort_inexact += 1
                        if "GEMMKIT" in note:
                            gk_wrong += 1
                    tg, to = time_pair(f_gk, f_ort, args.budget)
                    print(f"{head}{tg * 1e6:8.1f}us {ops_n / tg / 1e9:7.1f} "
                          f"{pct(path, tg)} "
                          f"{to * 1e6:8.1f}us {ops_n / to / 1e9:7.1f} {to / tg:6.2f}x{note}",
                          flush=True)
                _core._set_isa("auto")
    if ort_inexact:
        print(f"\nonnxruntime was not exact on {ort_inexact} rows on this CPU (gemmkit exact "
              f"there); expected on x86 without VNNI, where its u8s8 kernels add pairs of "
              f"products in saturating int16 lanes")
    if gk_wrong:
        print(f"\nGEMMKIT WRONG on {gk_wrong} rows")
        return 1
    return 0


def run_batched(ops, paths, peaks, rng, budget):
    """The BATCHED cases, u8 x s8: each as (batch, M, K) @ (K, N) and as the same rows in
    one (batch * M, K) @ (K, N) product.  QLinearMatMul uses a per-column b scale and zero
    point (per-tensor a and y) in every row.  Rows print the default table's columns; M is "batch x M"
    for the batched call, whose note gives its time over the 2-D call's."""
    gk_wrong = 0
    for op in ops:
        sess = ort_session(op, np.uint8, np.int8, np.uint8)
        for (nb, M, K, N) in BATCHED:
            A3 = rng.integers(0, 256, (nb, M, K)).astype(np.uint8)
            B = rng.integers(-128, 128, (K, N)).astype(np.int8)
            A2 = A3.reshape(nb * M, K)
            azp = np.array(3, np.uint8)
            bzp = rng.integers(-4, 5, N).astype(np.int8)
            sa = np.array(0.01, np.float32)
            sb = rng.uniform(0.01, 0.03, N).astype(np.float32)
            sy = np.array(float(K) * 0.05, np.float32)
            yzp = np.array(128, np.uint8)
            ops_n = 2.0 * nb * M * K * N
            times = {}
            for label, A in (("2-D", A2), ("batched", A3)):
                if op == "MatMulInteger":
                    feeds = {"A": A, "B": B}
                    f_gk = lambda A=A: gk.matmul_integer(A, B)  # noqa: E731
                    f_exact = lambda A=A: oracles.matmul_integer(A, B)  # noqa: E731
                else:
                    feeds = {"a": A, "a_scale": sa, "a_zero_point": azp, "b": B,
                             "b_scale": sb, "b_zero_point": bzp, "y_scale": sy,
                             "y_zero_point": yzp}
                    f_gk = lambda A=A: gk.qlinear_matmul(A, sa, azp, B, sb, bzp, sy, yzp)  # noqa
                    f_exact = lambda A=A: oracles.qlinear_matmul(  # noqa: E731
                        A, sa, azp, B, sb, bzp, sy, yzp)[0]
                f_ort = lambda feeds=feeds: sess.run(None, feeds)  # noqa: E731
                mcol = f"{nb}x{M}" if label == "batched" else str(nb * M)
                for path in paths:
                    _core._set_isa(path)
                    y_gk, y_ort = f_gk(), f_ort()[0]
                    note = ""
                    if not np.array_equal(y_gk, y_ort):
                        note = judge(y_gk, y_ort, f_exact())
                        gk_wrong += "GEMMKIT" in note
                    tg, to = time_pair(f_gk, f_ort, budget)
                    times[label, path] = tg
                    if label == "batched":
                        note += f" (batched / 2-D: {tg / times['2-D', path]:.2f})"
                    p = peaks(path)
                    pct = f"{100 * ops_n / tg / 1e9 / p:5.1f}%" if p else "   n/a"
                    print(f"{op:14s} {'u8s8':5s} {mcol:>5s} {K:5d} {N:5d} {path:11s} "
                          f"{tg * 1e6:8.1f}us {ops_n / tg / 1e9:7.1f} {pct} "
                          f"{to * 1e6:8.1f}us {ops_n / to / 1e9:7.1f} {to / tg:6.2f}x{note}",
                          flush=True)
                    _core._set_isa("auto")
    if gk_wrong:
        print(f"\nGEMMKIT WRONG on {gk_wrong} rows")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
