"""gemmkit vs onnxruntime on MatMulInteger and QLinearMatMul, one thread, same inputs.

onnxruntime runs single-node InferenceSessions (intra_op_num_threads=1, B as a graph input,
so neither side can pre-pack B across calls).  Repetitions of the two are interleaved and
the median is reported, because the machine is shared and noisy.  Where the two outputs
differ, both are compared with the exact oracle (tests/oracles.py): "ort err" and the row's
note say which one is off: onnxruntime's pre-VNNI x86 kernels (AVX2 / SSE4.1, e.g. Zen 2)
add u8 x s8 pairs in a saturating int16 lane, so there its u8s8 rows time an inexact
computation.

    python benchmarks/bench_int8.py                 # the issue's table on the best path
    python benchmarks/bench_int8.py --paths all     # every usable gemmkit path
    python benchmarks/bench_int8.py --quick         # a few cases, fast
    python benchmarks/bench_int8.py --shapes 64x64x64,1x256x256   # chosen M x K x N
    python benchmarks/bench_int8.py --batched       # batched products vs the same rows in 2-D
    python benchmarks/bench_int8.py --cold          # small-M rows with a cold B every call

The header names the CPU class (AVX2 / AVX-512 VNNI / AMX / other, from gemmkit's detected
features), each path's instruction peak and one thread's read bandwidth measured in this
process (benchmarks/c/bench_read_bw.c): B in cache (a buffer sized like the small-M rows' B,
read again and again) and B cold (a buffer of 4x the last-level cache, evicted before each
read).  Per row: gemmkit's time, GOP/s, % of the peak, for M <= 16 also % of the matching
read bandwidth (B's K*N bytes / time; "h" cached: the same B every call, as by default; "c"
cold: with --cold, where each call gets the next of several copies of B spread over 4x the
LLC), onnxruntime's time and GOP/s, the ratio (onnxruntime's time / gemmkit's) and "ort err",
onnxruntime's max abs difference from the exact oracle (0 where it is exact).  --quick, or a
--budget under 0.1 s, skips the cold bandwidth (unless --cold), for smoke runs under qemu.

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
from _bench_common import (add_json_option, build_c_lib, cpu_class, cpu_name, llc_bytes,
                           one_thread, peak_gops, record, record_meta, write_json)
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
        try:
            self.lib = ctypes.CDLL(build_c_lib("bench_peak_x86"))
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
        return peak_gops(f)


SMALL_M = 16  # rows with M <= SMALL_M must be bound by reading B once: quoted against bandwidth


class ReadBandwidth:
    """One thread's read bandwidth, measured in this process with a plain streaming read
    (benchmarks/c/bench_read_bw.c, built with the C compiler; the widest loads gemmkit
    detected: zmm, ymm, xmm, or 8-byte words off x86), best of several reads:

    cached(n): an n-byte buffer (sized like the small-M rows' B) read again and again, so it
      stays in whatever cache level holds n bytes -- as B (model weights) does when the same
      B comes every call;
    cold(): a buffer of 4x the last-level cache (at least 64 MB; 256 MB where the LLC size is
      unknown), with another buffer as large read between the timed reads so that nothing of
      it is left in the caches -- DRAM bandwidth, as for a B used once.

    Without a compiler it falls back to numpy.sum over the buffer viewed as uint64, marked
    "(numpy)", which may be compute-bound below the memory's speed."""

    def __init__(self, features):
        import ctypes
        import subprocess
        self.kind = "numpy"
        self.fn = None
        try:
            lib = ctypes.CDLL(build_c_lib("bench_read_bw"))
            name = "generic"
            if hasattr(lib, "gk_read_xmm"):
                name = ("zmm" if "avx512f" in features else
                        "ymm" if "avx2" in features else "xmm")
            self.fn = getattr(lib, "gk_read_" + name)
            self.fn.restype = ctypes.c_uint64
            self.fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
            self.kind = {"generic": "8-byte", "xmm": "16-byte xmm", "ymm": "32-byte ymm",
                         "zmm": "64-byte zmm"}[name] + " loads"
        except (OSError, subprocess.CalledProcessError, AttributeError):
            self.fn = None
        self.llc = llc_bytes()
        self._cached = {}
        self._cold_bufs = None
        self.cold_bytes = None

    @staticmethod
    def buffer(n):
        """n bytes (n a multiple of 512), 64-byte aligned, written (a calloc'd buffer never
        written reads the kernel's one zero page, which would stay in L1)."""
        raw = np.empty(n + 64, np.uint8)
        off = (-raw.ctypes.data) % 64
        buf = raw[off:off + n]
        buf.fill(1)
        return buf

    def _read(self, buf, reps=1):
        if self.fn is not None:
            return self.fn(buf.ctypes.data, buf.size, reps)
        v = buf.view(np.uint64)
        for _ in range(reps):
            v.sum()

    def cached(self, nbytes):
        """GB/s reading the same nbytes-byte buffer again and again (best of 7)."""
        n = max(512, nbytes // 512 * 512)
        if n not in self._cached:
            buf = self.buffer(n)
            self._read(buf)
            t0 = time.perf_counter()
            self._read(buf)
            one = time.perf_counter() - t0
            reps = max(1, int(0.002 / max(one, 1e-8)))
            best = 0.0
            for _ in range(7):
                t0 = time.perf_counter()
                self._read(buf, reps)
                best = max(best, n * reps / (time.perf_counter() - t0) / 1e9)
            self._cached[n] = best
        return self._cached[n]

    def cold_pool(self):
        """The cold buffer (read for cold()) and the one read between its reads to evict it;
        --cold also takes its rows' B matrices from the first, in turn."""
        if self._cold_bufs is None:
            n = max(4 * self.llc, 64 << 20) if self.llc else 256 << 20
            n = min(n, 2 << 30) // 512 * 512
            self._cold_bufs = (self.buffer(n), self.buffer(n))
            self.cold_bytes = n
        return self._cold_bufs

    def cold(self, reps=5):
        """GB/s reading a buffer larger than the last-level cache that was evicted from all
        caches just before (best of reps)."""
        buf, evict = self.cold_pool()
        best = 0.0
        for _ in range(reps):
            self._read(evict)
            t0 = time.perf_counter()
            self._read(buf)
            best = max(best, buf.size / (time.perf_counter() - t0) / 1e9)
        return best


class ColdB:
    """B matrices for --cold: consecutive K x N views of the cold buffer (total >= 4x the
    LLC, and >= 2 of them), handed out in turn, one per call of either library, so that
    each call reads a B last touched a whole buffer ago -- out of every cache."""

    def __init__(self, pool, B):
        K, N = B.shape
        per = K * N
        count = max(2, pool.size // per)
        if count * per > pool.size:  # one B larger than half the pool: a pool of its own
            pool = ReadBandwidth.buffer(-(-count * per // 512) * 512)
        self.stack = pool[:count * per].view(B.dtype).reshape(count, K, N)
        self.stack[...] = B  # every copy holds B, so each call's answer is the same
        self.i = 0

    def next(self):
        b = self.stack[self.i]
        self.i = (self.i + 1) % len(self.stack)
        return b

# (batch, M, K, N): batched A (batch, M, K) @ shared B (K, N), timed against the 2-D
# (batch * M, K) @ (K, N) with the same rows.
BATCHED = [(64, 8, 64, 128), (64, 1, 768, 768)]
# batches whose every matrix has its own B (attention-style products: Q K^T, P V)
BATCHED_OWN_B = [(12, 128, 64, 128), (8, 384, 64, 384), (12, 128, 128, 64)]

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
    """Both answers against the exact oracle `want` (None where the two answers are equal:
    then onnxruntime's equals gemmkit's, which the test suite proves exact on every path).
    Returns (the "ort err" cell: 0 or the max abs difference, the row's note, gemmkit wrong,
    onnxruntime wrong)."""
    def off(y):
        if y.shape != want.shape:
            return None, f"shape {y.shape}"
        bad = y != want
        if not bad.any():
            return 0, None
        d = int(np.abs(y.astype(np.int64) - want.astype(np.int64)).max())
        return d, f"{int(bad.sum())}/{bad.size} off by <= {d}"
    if want is None:
        return "0", "", False, False
    _, gk_note = off(y_gk)
    ort_d, ort_note = off(y_ort)
    notes = []
    if gk_note:
        notes.append(f"GEMMKIT WRONG: {gk_note}")
    if ort_note:
        notes.append(f"ort: {ort_note}")
    err = "shape" if ort_d is None else str(ort_d)
    return err, (" (" + "; ".join(notes) + ")") if notes else "", bool(gk_note), bool(ort_note)


HEADER = (f"{'op':14s} {'signs':5s} {'M':>5s} {'K':>5s} {'N':>5s} {'path':11s} "
          f"{'gemmkit':>10s} {'GOP/s':>7s} {'%peak':>6s} {'%bw':>7s} {'ort':>10s} "
          f"{'GOP/s':>7s} {'ratio':>7s} {'ort err':>8s}")


def print_row(head, ops_n, tg, pk, bw, to=None, err="n/a", note="", rec=None):
    """One table row.  pk: the path's peak GOP/s or None; bw: (GB/s, "h" or "c", bytes of B)
    for a small-M row, else None; to: onnxruntime's time or None; rec: the row's identifying
    fields for --json (its "section" defaults to "int8")."""
    if rec is not None:
        rec = dict(rec)
        gops = ops_n / tg / 1e9
        record(rec.pop("section", "int8"), **rec, ops=ops_n, gemmkit_s=tg, gemmkit_gops=gops,
               peak_gops=pk, pct_peak=100 * gops / pk if pk else None,
               bw_gbs=bw[0] if bw else None, bw_kind=bw[1] if bw else None,
               b_bytes=bw[2] if bw else None,
               pct_bw=100 * bw[2] / tg / 1e9 / bw[0] if bw and bw[0] else None,
               ort_s=to, ort_gops=ops_n / to / 1e9 if to else None,
               ratio=to / tg if to else None,
               ort_err=int(err) if err.isdigit() else None if err == "n/a" else err,
               note=note.strip(" ()") or None)
    pct = f"{100 * ops_n / tg / 1e9 / pk:5.1f}%" if pk else "   n/a"
    if bw is None:
        bwc = "      -"
    elif bw[0]:
        bwc = f"{100 * bw[2] / tg / 1e9 / bw[0]:5.1f}%{bw[1]}"
    else:
        bwc = "    n/a"
    cells = f"{head}{tg * 1e6:8.1f}us {ops_n / tg / 1e9:7.1f} {pct} {bwc} "
    if to is None:
        cells += f"{'-':>10s} {'-':>7s} {'-':>7s} {err:>8s}"
    else:
        cells += f"{to * 1e6:8.1f}us {ops_n / to / 1e9:7.1f} {to / tg:6.2f}x {err:>8s}"
    print(cells + note, flush=True)


def rerun_without_amx(argv):
    import subprocess
    so = build_c_lib("no_amx_preload", "-ldl", quiet=False)
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
    ap.add_argument("--cold", action="store_true",
                    help="time the small-M rows (M <= 16) with a cold B each call: every "
                         "call, either library's, takes the next of several copies of B "
                         "spread over a buffer of 4x the last-level cache, and %%bw quotes "
                         "them against the cold (DRAM) read bandwidth")
    add_json_option(ap)
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
    feats = gk.cpu_info()["features"]
    if "GK_BENCH_NO_AMX" in os.environ:
        print("AMX refused to every library in this process (--no-amx)")
    print(f"CPU: {cpu_name()}; class: {cpu_class(feats)}")
    print(f"features: {','.join(feats)}; gemmkit paths usable: {','.join(avail)}")
    nthreads = one_thread()
    print(f"gemmkit {gk.__version__} ({gk.cpu_info()['isa']} default), onnxruntime "
          f"{ort.__version__}, each on {nthreads} thread; %peak: % of the path's instruction peak "
          f"(tdpbusd, vpdpbusd, or exact vpmaddwd+vpaddd) measured just before the row")
    header_peaks = {}
    for path in paths:
        pk = header_peaks[path] = peaks(path)
        print(f"  peak of {path}: " + (f"{pk:.1f} GOP/s" if pk else "n/a"))
    record_meta(threads=nthreads, paths=paths, peaks_gops=header_peaks, budget=args.budget,
                amx_refused="GK_BENCH_NO_AMX" in os.environ, batched=args.batched,
                cold=args.cold, small_m=SMALL_M)
    ops = ["MatMulInteger"] + ([] if args.no_qlinear else ["QLinearMatMul"])
    bw = ReadBandwidth(feats)
    if args.batched:
        print(HEADER)
        print("-" * len(HEADER))
        rc = run_batched(ops, paths, peaks, rng, args.budget)
        write_json(args.json, "bench_int8")
        return rc
    # The bandwidths the small-M rows are quoted against, measured now in this process.
    small = sorted({K * N for (M, K, N) in shapes if M <= SMALL_M})
    hot = {n: bw.cached(n) for n in (small or [16 << 20])}
    llc = f"{bw.llc / 2**20:.0f} MB" if bw.llc else "unknown"
    print(f"read bandwidth, one thread, plain streaming read ({bw.kind}), best of several; "
          f"last-level cache {llc}:")
    for n, v in hot.items():
        print(f"  B in cache (the same {fmt_bytes(n)} buffer read every call): {v:.1f} GB/s")
    cold_bw = None
    if args.cold or not (args.quick or args.budget < 0.1):
        cold_bw = bw.cold(reps=5 if args.budget >= 0.5 else 2)
        print(f"  B cold ({fmt_bytes(bw.cold_bytes)} buffer, > LLC, evicted by reading another "
              f"{fmt_bytes(bw.cold_bytes)} before each read): {cold_bw:.1f} GB/s")
    else:
        print("  B cold: not measured (--quick or --budget < 0.1; --cold measures it)")
    record_meta(bandwidth={"kind": bw.kind, "llc_bytes": bw.llc, "cold_gbs": cold_bw,
                           "cold_bytes": bw.cold_bytes,
                           "cached_gbs": {str(n): v for n, v in hot.items()}})
    if small:
        if args.cold:
            print(f"%bw (rows with M <= {SMALL_M}): B's K*N bytes / gemmkit's time as % of the "
                  f"cold bandwidth (c): --cold hands each call, either library's, the next of "
                  f"several copies of B spread over {fmt_bytes(bw.cold_bytes)}, so every call "
                  f"reads B from DRAM")
        else:
            print(f"%bw (rows with M <= {SMALL_M}): B's K*N bytes / gemmkit's time as % of the "
                  f"cached bandwidth for B's size (h): the same B comes every call, as with "
                  f"model weights (--cold: a fresh B each call, against the cold bandwidth)")
    print("ort err: max |onnxruntime - exact oracle| (0: onnxruntime's answer equals "
          "gemmkit's, which the test suite proves exact; otherwise both are checked against "
          "tests/oracles.py)")
    print(HEADER)
    print("-" * len(HEADER))
    ort_inexact = ort_inexact_q = gk_wrong = 0
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
                sa, sb, sy = (np.array(0.01, np.float32), np.array(0.02, np.float32),
                              np.array(float(K) * 0.05, np.float32))
                yzp = np.array(128, np.uint8)
                is_small = M <= SMALL_M
                cold = None
                if args.cold and is_small:
                    cold = ColdB(bw.cold_pool()[0], B)
                # Each call takes its B from b(): the one B, or with --cold the next copy.
                b = (lambda: B) if cold is None else cold.next  # noqa: E731
                if op == "MatMulInteger":
                    f_gk = lambda: gk.matmul_integer(A, b())  # noqa: E731
                    f_exact = lambda: oracles.matmul_integer(A, B)  # noqa: E731
                    f_feeds = lambda: {"A": A, "B": b()}  # noqa: E731
                else:
                    f_gk = lambda: gk.qlinear_matmul(A, sa, azp, b(), sb, bzp, sy, yzp)  # noqa
                    f_exact = lambda: oracles.qlinear_matmul(  # noqa: E731
                        A, sa, azp, B, sb, bzp, sy, yzp)[0]
                    f_feeds = lambda: {"a": A, "a_scale": sa, "a_zero_point": azp,  # noqa
                                       "b": b(), "b_scale": sb, "b_zero_point": bzp,
                                       "y_scale": sy, "y_zero_point": yzp}
                if cold is None:
                    feeds = f_feeds()
                    f_ort = (lambda: sess.run(None, feeds)) if sess else None  # noqa: E731
                else:
                    f_ort = (lambda: sess.run(None, f_feeds())) if sess else None  # noqa
                ops_n = 2.0 * M * K * N
                bwr = None
                if is_small:
                    bwr = ((cold_bw, "c", K * N) if cold is not None else
                           (hot.get(K * N), "h", K * N))
                for path in paths:
                    _core._set_isa(path)
                    if path == "scalar" and ops_n > 2 * 512**3:
                        continue
                    head = (f"{op:14s} {sg:5s} {M:5d} {K:5d} {N:5d} {path:11s} ")
                    rec = dict(op=op, signs=sg, M=M, K=K, N=N, path=path,
                               family=_core._qgemm_family_info()["isa"])
                    if f_ort is None:
                        tg, _ = time_pair(f_gk, f_gk, args.budget)
                        print_row(head, ops_n, tg, peaks(path), bwr,
                                  note=f"   onnxruntime: not implemented ({sess_err})",
                                  rec=rec)
                        continue
                    y_gk = f_gk()
                    y_ort = f_ort()[0]
                    want = None
                    if not np.array_equal(y_gk, y_ort):
                        if "y" not in exact:
                            exact["y"] = f_exact()
                        want = exact["y"]
                    err, note, gk_bad, ort_bad = judge(y_gk, y_ort, want)
                    if op == "QLinearMatMul":
                        ort_inexact_q += ort_bad
                    else:
                        ort_inexact += ort_bad
                    gk_wrong += gk_bad
                    tg, to = time_pair(f_gk, f_ort, args.budget)
                    print_row(head, ops_n, tg, peaks(path), bwr, to, err, note, rec=rec)
                _core._set_isa("auto")
    if ort_inexact:
        print(f"\nonnxruntime's MatMulInteger was not exact on {ort_inexact} rows on this CPU "
              f"(gemmkit exact there); expected on x86 without VNNI, where its u8s8 kernels "
              f"add pairs of products in saturating int16 lanes")
    if ort_inexact_q:
        print(f"\nonnxruntime's QLinearMatMul differed from the exact requantization on "
              f"{ort_inexact_q} rows (gemmkit exact there): the row's note gives how many "
              f"outputs and by how much; off by 1 is the rounding of its requantization step "
              f"(the spec rounds the exact product of the int32 sum and the float32 "
              f"multiplier once)")
    write_json(args.json, "bench_int8")
    if gk_wrong:
        print(f"\nGEMMKIT WRONG on {gk_wrong} rows")
        return 1
    return 0


def fmt_bytes(n):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} B"


def op_calls(op, A, B, sa, azp, sb, bzp, sy, yzp):
    """onnxruntime's feeds, gemmkit's call and the exact oracle's for one u8 x s8 case of
    op (MatMulInteger reads A and B only)."""
    if op == "MatMulInteger":
        return ({"A": A, "B": B}, lambda: gk.matmul_integer(A, B),
                lambda: oracles.matmul_integer(A, B))
    feeds = {"a": A, "a_scale": sa, "a_zero_point": azp, "b": B, "b_scale": sb,
             "b_zero_point": bzp, "y_scale": sy, "y_zero_point": yzp}
    return (feeds, lambda: gk.qlinear_matmul(A, sa, azp, B, sb, bzp, sy, yzp),
            lambda: oracles.qlinear_matmul(A, sa, azp, B, sb, bzp, sy, yzp)[0])


def judge_and_time(f_gk, f_ort, f_exact, budget):
    """One batched row on the path set now: both answers judged (the oracle only where
    they differ), then both timed: (err, note, gk_bad, gemmkit time, onnxruntime time)."""
    y_gk, y_ort = f_gk(), f_ort()[0]
    want = None if np.array_equal(y_gk, y_ort) else f_exact()
    err, note, gk_bad, _ = judge(y_gk, y_ort, want)
    tg, to = time_pair(f_gk, f_ort, budget)
    return err, note, gk_bad, tg, to


def run_batched(ops, paths, peaks, rng, budget):
    """The BATCHED cases, u8 x s8: each as (batch, M, K) @ (K, N) and as the same rows in
    one (batch * M, K) @ (K, N) product.  QLinearMatMul uses a per-column b scale and zero
    point (per-tensor a and y) in every row.  Rows print the default table's columns; M is
    "batch x M" for the batched call, whose note gives its time over the 2-D call's."""
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
                feeds, f_gk, f_exact = op_calls(op, A, B, sa, azp, sb, bzp, sy, yzp)
                f_ort = lambda feeds=feeds: sess.run(None, feeds)  # noqa: E731
                mcol = f"{nb}x{M}" if label == "batched" else str(nb * M)
                for path in paths:
                    _core._set_isa(path)
                    err, note, gk_bad, tg, to = judge_and_time(f_gk, f_ort, f_exact, budget)
                    gk_wrong += gk_bad
                    times[label, path] = tg
                    if label == "batched":
                        note += f" (batched / 2-D: {tg / times['2-D', path]:.2f})"
                    print_row(f"{op:14s} {'u8s8':5s} {mcol:>5s} {K:5d} {N:5d} {path:11s} ",
                              ops_n, tg, peaks(path), None, to, err, note,
                              rec=dict(section="batched", op=op, signs="u8s8", batch=nb,
                                       M=M if label == "batched" else nb * M, K=K, N=N,
                                       path=path, layout=label,
                                       family=_core._qgemm_family_info()["isa"]))
                    _core._set_isa("auto")
    print("\nbatches whose every matrix has its own B (batch x M x K @ batch x K x N; "
          "QLinearMatMul per-tensor scales)")
    for op in ops:
        sess = ort_session(op, np.uint8, np.int8, np.uint8)
        for (nb, M, K, N) in BATCHED_OWN_B:
            A = rng.integers(0, 256, (nb, M, K)).astype(np.uint8)
            B = rng.integers(-128, 128, (nb, K, N)).astype(np.int8)
            azp, bzp, yzp = np.array(3, np.uint8), np.array(0, np.int8), np.array(128, np.uint8)
            sa, sb = np.array(0.01, np.float32), np.array(0.02, np.float32)
            sy = np.array(float(K) * 0.05, np.float32)
            feeds, f_gk, f_exact = op_calls(op, A, B, sa, azp, sb, bzp, sy, yzp)
            f_ort = lambda feeds=feeds: sess.run(None, feeds)  # noqa: E731
            for path in paths:
                _core._set_isa(path)
                err, note, gk_bad, tg, to = judge_and_time(f_gk, f_ort, f_exact, budget)
                gk_wrong += gk_bad
                print_row(f"{op:14s} {'u8s8':5s} {f'{nb}x{M}':>5s} {K:5d} {N:5d} {path:11s} ",
                          2.0 * nb * M * K * N, tg, peaks(path), None, to, err, note,
                          rec=dict(section="batched", op=op, signs="u8s8", batch=nb, M=M,
                                   K=K, N=N, path=path, layout="own B",
                                   family=_core._qgemm_family_info()["isa"]))
                _core._set_isa("auto")
    if gk_wrong:
        print(f"\nGEMMKIT WRONG on {gk_wrong} rows")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
