"""Gemm and per-call overhead: gemmkit vs NumPy (and onnxruntime where it has the case).

Same inputs, one process, interleaved repetitions, medians; one thread everywhere.

    python benchmarks/bench_gemm.py            # float paths, Gemm per dtype, overhead
    python benchmarks/bench_gemm.py --quick
    python benchmarks/bench_gemm.py --sizes 32,96     # chosen n for the n^3 cases
    python benchmarks/bench_gemm.py --float-only --float-sizes 64,1024,16x4096
    python benchmarks/bench_gemm.py --linear-only     # Gemm transB=1 (W as [N, K])

The float32/float64 section runs every Gemm float path this CPU has (each forced through
the ISA selection, like GEMMKIT_ISA) at n^3 and MxKxN = M x 4096 x 4096 (M = 1, 16), and
quotes each as GFLOP/s and % of that path's FMA peak (benchmarks/c/bench_peak_x86.c,
measured in this process right before the row); float32 also against onnxruntime's Gemm
with alpha, beta and a C row.  The bfloat16 section (256^3, 1024^3, 2048^3, M = 16 and 128
with K = N = 4096) quotes the dispatched bfloat16 family against NumPy's float32 matmul of
the same values and against the family it hands calls on to (amxbf16 -> the widening
avx512 one), as % of the vdpbf16ps / tdpbf16ps peak on the avx512bf16 / amxbf16 family.

The float16/bfloat16 section runs the widening families (exact widening while packing,
the float32 FMA micro-kernel, one rounding at the end) on every path at 256^3 and 1024^3:
float16 against onnxruntime's float16 Gemm node and its Cast -> float32 Gemm -> Cast graph,
and NumPy's float16 matmul (256^3 only: it has no BLAS); bfloat16 against NumPy's float32
matmul on float32 copies of the same values (the time of the float32 product it stands
for).  % of peak is of the float32 FMA peak (the kernel is the float32 one).

The linear-layer section runs Gemm(A, W, transB=1) with W stored [N, K] (what a fully
connected layer exported to ONNX is) at M = 1..32 for float32/float64/float16/bfloat16/
int32, against gemmkit on a row-major copy of W.T, gemmkit with W pre-packed (pack_b),
NumPy's A @ W.T and onnxruntime with W as an input and as a constant.

NumPy's integer and float16 matmuls have no BLAS behind them; bfloat16 has no NumPy
matmul at all (compared through a float32 round trip instead, marked *).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread, and no spinning sibling
import argparse
import itertools  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import gemmkit as gk  # noqa: E402
from _bench_common import (add_json_option, build_c_lib, cpu_name, one_thread, peak_gops,  # noqa: E402
                           record, record_meta, write_json)


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


def _ort_session(graph):
    """A one-thread onnxruntime session of an opset-13 graph; None where onnxruntime has
    no kernel for it (a type it does not run)."""
    import onnxruntime as ort
    from onnx import helper
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    try:
        return ort.InferenceSession(m.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001  (no kernel for this type in this onnxruntime)
        return None


def _ort_elem_type(dtype):
    """The onnx element type of a float32/float64/float16 dtype for an onnxruntime
    session; None without onnxruntime and onnx, or for another dtype."""
    try:
        import onnxruntime  # noqa: F401
        from onnx import TensorProto
    except ImportError:
        return None
    return {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
            np.float16: TensorProto.FLOAT16}.get(dtype)


def ort_gemm(dtype, alpha=1.0, beta=1.0):
    """onnxruntime Gemm (opset 13, one thread) of float32 or float64 with these alpha and
    beta, inputs A, B, C; or None (no onnxruntime, or another dtype)."""
    t = _ort_elem_type(dtype)
    if t is None:
        return None
    from onnx import helper
    return _ort_session(helper.make_graph(
        [helper.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=alpha, beta=beta)], "g",
        [helper.make_tensor_value_info(n, t, None) for n in "ABC"],
        [helper.make_tensor_value_info("Y", t, None)]))


def ort_cast_gemm():
    """onnxruntime float16 A, B, C -> Cast to float32 -> Gemm -> Cast to float16 (one
    thread): the float32 route a runtime without a float16 Gemm takes; or None."""
    try:
        import onnxruntime  # noqa: F401
        from onnx import TensorProto, helper
    except ImportError:
        return None
    F, H = TensorProto.FLOAT, TensorProto.FLOAT16
    return _ort_session(helper.make_graph(
        [helper.make_node("Cast", ["A"], ["Af"], to=F),
         helper.make_node("Cast", ["B"], ["Bf"], to=F),
         helper.make_node("Cast", ["C"], ["Cf"], to=F),
         helper.make_node("Gemm", ["Af", "Bf", "Cf"], ["Yf"]),
         helper.make_node("Cast", ["Yf"], ["Y"], to=H)], "g",
        [helper.make_tensor_value_info(n, H, None) for n in "ABC"],
        [helper.make_tensor_value_info("Y", H, None)]))


# The FMA peak loop of each float path (benchmarks/c/bench_peak_x86.c), per dtype.
FMA_PEAKS = {("avx512", "float32"): "gk_peak_fma_ps_zmm", ("avx512", "float64"): "gk_peak_fma_pd_zmm",
             ("avx2", "float32"): "gk_peak_fma_ps_ymm", ("avx2", "float64"): "gk_peak_fma_pd_ymm",
             ("avx512bf16", "bfloat16"): "gk_peak_dpbf16_zmm",
             ("amxbf16", "bfloat16"): "gk_peak_tdpbf16ps"}
# a family named for a CPU feature beyond its level: that feature's cpu_info name
PATH_FEATURE = {"avx512bf16": "avx512bf16", "amxbf16": "amx-bf16"}


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
        info = gk.cpu_info()
        # a path is a level, or (avx512bf16, amxbf16) a CPU feature beyond one
        runs = path in info["available"] or PATH_FEATURE.get(path) in info["features"]
        if self.lib is None or name is None or not runs:
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
                record("float", dtype=np.dtype(dt).name, M=M, K=K, N=N, path=fam,
                       gemmkit_s=ts[0], gemmkit_gops=gf, peak_gops=pk,
                       pct_peak=100 * gf / pk if pk else None, numpy_s=ts[1],
                       numpy_ratio=ts[1] / ts[0],
                       gemmkit_abc_s=ts[2] if with_ort else None,
                       ort_abc_s=ts[3] if with_ort else None,
                       ort_abc_ratio=ts[3] / ts[2] if with_ort else None)
    print("(ratio: the other's time / gemmkit's; ort a,b,C: onnxruntime Gemm alpha=0.5, "
          "beta=2, C a row, against gemmkit with the same arguments)\n")


def float8_rows(sizes, budget):
    """QLinearMatMul with float8 a, b and y (opset 21) against the NumPy route: decode with
    ml_dtypes, dequantize, BLAS float32 matmul, divide by y_scale, saturating encode."""
    print(f"{'QLinearMatMul float8':30s} {'gemmkit':>10s} {'GFLOP/s':>8s} "
          f"{'NumPy route':>11s} {'ratio':>6s} {'equal':>6s}")
    rng = np.random.default_rng(5)
    # power-of-two scales make every product exact in float32 (gemmkit's FMA kernel then
    # gives the definition's bits); other scales need its separately rounded kernel
    scale_sets = (("2^k", (0.5, 0.25, 4.0)), ("any", (0.0123, 0.037, 0.01)))
    for fmt, n, (scales, (sa, sb, sy)) in itertools.product(
            (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2), sizes, scale_sets):
        big = float(ml_dtypes.finfo(fmt).max)
        a = rng.standard_normal((n, n)).astype(fmt)
        b = rng.standard_normal((n, n)).astype(fmt)
        sa, sb, sy = np.float32(sa), np.float32(sb), np.float32(sy)
        z = np.zeros((), fmt)

        def f_gk():
            return gk.qlinear_matmul(a, sa, z, b, sb, z, sy, z)

        def f_np():
            acc = (a.astype(np.float32) * sa) @ (b.astype(np.float32) * sb)
            return np.clip(acc / sy, -big, big).astype(fmt)

        ts = timed([f_gk, f_np], budget)
        # the two differ only where BLAS's FMA and summation order move a value
        # across a float8 rounding boundary
        same = np.mean(f_gk().view(np.uint8) == f_np().view(np.uint8))
        name = f"{np.dtype(fmt).name} {n}^3 scales {scales}"
        print(f"{name:30s} {ts[0] * 1e6:8.1f}us {2 * n**3 / ts[0] / 1e9:8.2f} "
              f"{ts[1] * 1e6:9.1f}us {ts[1] / ts[0]:5.2f}x {100 * same:5.1f}%", flush=True)
        record("float8", dtype=np.dtype(fmt).name, M=n, K=n, N=n, scales=scales,
               gemmkit_s=ts[0], gemmkit_gops=2 * n**3 / ts[0] / 1e9, numpy_route_s=ts[1],
               numpy_route_ratio=ts[1] / ts[0], pct_equal=100 * float(same))
    print("(equal: outputs identical to the NumPy route's; gemmkit's follow the opset-21 "
          "definition exactly)\n")


# The multiply peak loop of each integer path (benchmarks/c/bench_peak_x86.c) and the
# lane multiplies one multiply-add costs there: vpmulld / vpmullq do one per lane; the
# AVX2 int64 path emulates a 64-bit product with a vpmuludq and a vpmulld lane each
# (same rate on Zen 4; vpmulld is 2 uops on Intel, so the % is then a little flattering).
INT_PEAKS = {("avx512", "int32"): ("gk_peak_mulld_zmm", 1), ("avx2", "int32"): ("gk_peak_mulld_ymm", 1),
             ("avx512", "int64"): ("gk_peak_mullq_zmm", 1), ("avx2", "int64"): ("gk_peak_muludq_ymm", 2)}


def int_paths(sizes, budget):
    """int32/int64 rows: every integer Gemm path forced, vs NumPy's integer matmul (a
    loop without BLAS: timed fewer times, it takes seconds at 1024^3), and % of the
    path's multiply peak."""
    import ctypes
    import subprocess
    from gemmkit import _core
    info = gk.cpu_info()
    default = info["isa"]
    paths = [p for p in ("avx512", "avx2") if p in info["available"]] + ["scalar"]
    try:
        lib = ctypes.CDLL(build_c_lib("bench_peak_x86"))
    except (OSError, subprocess.CalledProcessError):
        lib = None
    hdr = (f"{'case':22s} {'path':7s} {'gemmkit':>10s} {'GMAC/s':>7s} {'%peak':>6s} "
           f"{'NumPy':>10s} {'ratio':>7s}")
    print(hdr)
    print("-" * len(hdr))
    rng = np.random.default_rng(2)
    for dt in (np.int32, np.int64):
        for n in sizes:
            info_t = np.iinfo(dt)
            A = rng.integers(info_t.min, info_t.max, (n, n), dtype=dt, endpoint=True)
            B = rng.integers(info_t.min, info_t.max, (n, n), dtype=dt, endpoint=True)
            reps = 3 if n <= 512 else 1
            t_np = statistics.median([_once(lambda: A @ B) for _ in range(reps)])
            for path in paths:
                _core._set_isa(path)
                try:
                    fam = _core._gemm_family_info(dt)["isa"]
                    Y = gk.gemm(A, B)
                    (t,) = timed([lambda: gk.gemm(A, B)], budget)
                finally:
                    _core._set_isa(default)
                if n <= 512:
                    with np.errstate(over="ignore"):
                        assert np.array_equal(Y, A @ B), (dt, n, path)
                pk = None
                peak = INT_PEAKS.get((fam, np.dtype(dt).name))
                if lib is not None and peak is not None and fam in info["available"]:
                    f = getattr(lib, peak[0])
                    f.restype, f.argtypes = ctypes.c_int64, [ctypes.c_long]
                    pk = peak_gops(f) / 2 / peak[1]  # G multiply-adds/s
                gm = n**3 / t / 1e9
                print(f"{np.dtype(dt).name + f' {n}^3':22s} {fam:7s} {t * 1e3:8.2f}ms {gm:7.2f} "
                      f"{(f'{100 * gm / pk:5.1f}%') if pk else '    -':>6s} "
                      f"{t_np * 1e3:8.1f}ms {t_np / t:6.1f}x", flush=True)
                record("int", dtype=np.dtype(dt).name, M=n, K=n, N=n, path=fam, gemmkit_s=t,
                       gemmkit_gmacs=gm, gemmkit_gops=2 * gm, peak_gmacs=pk,
                       pct_peak=100 * gm / pk if pk else None, numpy_s=t_np,
                       numpy_ratio=t_np / t)
    print("(ratio: NumPy's A @ B time / gemmkit's gemm(A, B); %peak: of the path's "
          "multiply peak, bench_peak_x86.c)\n")


def _once(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def bf16_rows(cases, budget):
    """bfloat16 products (n, or (M, K, N)) on the dispatched family (amxbf16: AMX tiles
    where the CPU has AMX-BF16; avx512bf16: vdpbf16ps where it outruns the widening path)
    against NumPy's float32 matmul of the same values (inputs converted beforehand, so
    NumPy's time is the float32 product alone), gemmkit's own float32 path and, for a
    family that hands calls on, the family it hands them to (the widening one: the
    bfloat16 path without the dot-product instruction); % of the family's instruction
    peak (vdpbf16ps: 2 bfloat16 multiply-adds per float32 lane; tdpbf16ps: 16 x 16 x 32
    per instruction)."""
    from gemmkit import _core
    bf = ml_dtypes.bfloat16
    info = _core._gemm_family_info(bf)
    fam, prev = info["isa"], info["fallback"]
    peaks = FmaPeaks()
    hdr = (f"{'case':24s} {'path':10s} {'gemmkit':>10s} {'GFLOP/s':>8s} {'%peak':>6s} "
           f"{'NumPy f32':>10s} {'ratio':>6s} {'gk f32':>10s} {'ratio':>6s} "
           f"{'gk ' + (prev or '-'):>10s} {'ratio':>6s}")
    print(hdr)
    print("-" * len(hdr))
    rng = np.random.default_rng(2)
    for case in cases:
        M, K, N = (case, case, case) if isinstance(case, int) else case
        A = rng.standard_normal((M, K)).astype(bf)
        B = rng.standard_normal((K, N)).astype(bf)
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
        pk = peaks(fam, "bfloat16")
        fns = [lambda: gk.gemm(A, B), lambda: A32 @ B32, lambda: gk.gemm(A32, B32)]
        if prev:
            fns.append(lambda: _core._gemm_with_fallback(A, B))
        ts = timed(fns, budget)
        gf = 2.0 * M * N * K / ts[0] / 1e9
        name = f"bfloat16 {M}^3" if M == K == N else f"bfloat16 {M}x{K}x{N}"
        tail = (f" {ts[3] * 1e6:8.1f}us {ts[3] / ts[0]:5.2f}x" if prev else
                f" {'-':>10s} {'-':>6s}")
        print(f"{name:24s} {fam:10s} {ts[0] * 1e6:8.1f}us {gf:8.2f} "
              f"{(f'{100 * gf / pk:5.1f}%') if pk else '    -':>6s} "
              f"{ts[1] * 1e6:8.1f}us {ts[1] / ts[0]:5.2f}x {ts[2] * 1e6:8.1f}us "
              f"{ts[2] / ts[0]:5.2f}x" + tail, flush=True)
        record("bf16", dtype="bfloat16", M=M, K=K, N=N, path=fam, gemmkit_s=ts[0],
               gemmkit_gops=gf, peak_gops=pk, pct_peak=100 * gf / pk if pk else None,
               numpy_f32_s=ts[1], numpy_f32_ratio=ts[1] / ts[0], gemmkit_f32_s=ts[2],
               gemmkit_f32_ratio=ts[2] / ts[0], fallback=prev,
               fallback_s=ts[3] if prev else None,
               fallback_ratio=ts[3] / ts[0] if prev else None)
    print("(ratio: the other's time / gemmkit bfloat16's; NumPy f32 and gk f32: float32 "
          "matmul of the same values; the last pair: the family this one hands small or "
          "guard-declined calls to, on the same bfloat16 inputs)\n")


def half_paths(cases, budget):
    """The float16/bfloat16 rows, (M, K, N) each: every widening path forced, vs onnxruntime
    and NumPy.  Rows of 1..3 rows read B in place (ukernel_strip_h): their GB/s of B."""
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
        for (m, k, n) in cases:
            A, B, C = (rng.standard_normal(s).astype(dt) for s in ((m, k), (k, n), (n,)))
            Af, Bf, Cf = (x.astype(np.float32) for x in (A, B, C))  # the same values
            feeds = {"A": A, "B": B, "C": C}
            for path in paths:
                _core._set_isa(path)
                fi = _core._gemm_family_info(dt)
                # 1..3 rows with B row-major run where B is read in place (thin_16bit)
                fam = fi["thin_16bit"] if m <= 3 and fi["thin_16bit"] else fi["isa"]
                cols = {}
                fns = [lambda: gk.gemm(A, B, C)]  # Y = A @ B + C everywhere
                if dt is np.float16:
                    for name, sess in (("ort f16", s16), ("ort cast", scast)):
                        if sess is not None:
                            cols[name] = len(fns)
                            fns.append(lambda sess=sess: sess.run(None, feeds))
                    if m * k * n <= 256**3:  # NumPy's float16 matmul is a scalar loop
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
                gf = 2.0 * m * k * n / ts[0] / 1e9
                shape = f"{n}^3" if m == k == n else f"{m}x{k}x{n}"
                if m <= 3:  # bound by reading B: its GB/s, not the FMA peak
                    pct = f"{k * n * 2 / ts[0] / 1e9:4.0f}GB/s"
                else:
                    pct = f"{100 * gf / pk:5.1f}%" if pk else "    -"
                line = (f"{np.dtype(dt).name + ' ' + shape:22s} {fam:7s} {ts[0] * 1e6:8.1f}us "
                        f"{gf:8.2f} {pct:>6s}")
                for name in ("ort f16", "ort cast", "NumPy"):
                    if name in cols:
                        t = ts[cols[name]]
                        star = "*" if (name == "NumPy" and dt is not np.float16) else " "
                        line += f" {t * 1e6:8.1f}us {t / ts[0]:5.2f}x{star}"
                    else:
                        line += f" {'-':>10s} {'-':>6s} "
                print(line, flush=True)
                others = {name.replace(" ", "_").lower() + "_s": ts[cols[name]] if name in cols
                          else None for name in ("ort f16", "ort cast", "NumPy")}
                record("half", dtype=np.dtype(dt).name, M=m, K=k, N=n, path=fam,
                       gemmkit_s=ts[0], gemmkit_gops=gf, peak_gops=pk,
                       pct_peak=100 * gf / pk if pk else None, **others,
                       numpy_is_float32=dt is not np.float16)
    print("(Y = A @ B + C row everywhere; ratio: the other's time / gemmkit's; ort cast: "
          "Cast -> float32 Gemm -> Cast; * NumPy float32 of the same values; %peak of rows "
          "with 1-3 rows: GB/s of B read)\n")


def ort_linear(dtype, W=None):
    """onnxruntime Gemm(A, W, transB=1) (opset 13, one thread) with W an input (W None) or
    a constant initializer (pre-packed by onnxruntime at session creation); or None."""
    t = _ort_elem_type(dtype)
    if t is None:
        return None
    from onnx import helper, numpy_helper
    inputs = [helper.make_tensor_value_info("A", t, None)]
    inits = []
    if W is None:
        inputs.append(helper.make_tensor_value_info("W", t, None))
    else:
        inits.append(numpy_helper.from_array(W, "W"))
    return _ort_session(helper.make_graph(
        [helper.make_node("Gemm", ["A", "W"], ["Y"], transB=1)], "g", inputs,
        [helper.make_tensor_value_info("Y", t, None)], inits))


# (M, K, N) of the linear-layer rows: a token (M = 1) to a small batch, through a square
# 4096 layer (64 MB of float32 weights: past L2, in or past the LLC) and a 768 -> 3072 one
LINEAR_CASES = [(1, 4096, 4096), (4, 4096, 4096), (16, 4096, 4096), (32, 4096, 4096),
                (1, 768, 3072), (16, 768, 3072)]


def linear_rows(cases, budget):
    """Fully connected layers as ONNX exports them: Gemm(A, W, transB=1), the weight W
    stored [N, K] (B' read column by column), on the dispatched family of each type;
    against the same product with B' row-major (W.T copied beforehand: gemmkit's own best
    layout), gemmkit with W pre-packed (pack_b), NumPy's A @ W.T (float32/float64) and
    onnxruntime's Gemm with W as an input and as a constant (pre-packed)."""
    hdr = (f"{'case':28s} {'gemmkit':>10s} {'W.T rows':>10s} {'ratio':>6s} {'pack_b':>10s} "
           f"{'ratio':>6s} {'NumPy':>10s} {'ratio':>6s} {'ort W in':>10s} {'ratio':>6s} "
           f"{'ort W const':>11s} {'ratio':>6s}")
    print("linear layers: gemm(A, W, transB=1), W of shape [N, K]")
    print(hdr)
    print("-" * len(hdr))
    rng = np.random.default_rng(4)
    for dt in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32):
        for (M, K, N) in cases:
            if np.dtype(dt).kind in "iu":
                A = rng.integers(-50, 50, (M, K)).astype(dt)
                W = rng.integers(-50, 50, (N, K)).astype(dt)
            else:
                A = rng.standard_normal((M, K)).astype(dt)
                W = rng.standard_normal((N, K)).astype(dt)
            Bt = np.ascontiguousarray(W.T)
            P = gk.pack_b(W, "gemm", transB=1)
            fns = [lambda: gk.gemm(A, W, transB=1), lambda: gk.gemm(A, Bt),
                   lambda: gk.gemm(A, P, transB=1)]
            names = ["rows", "pack_b"]
            if dt in (np.float32, np.float64):
                fns.append(lambda: A @ W.T)
                names.append("numpy")
            s_in, s_const = ort_linear(dt), ort_linear(dt, W)
            if s_in is not None:
                fns += [lambda: s_in.run(None, {"A": A, "W": W}),
                        lambda: s_const.run(None, {"A": A})]
                names += ["ort_in", "ort_const"]
            ts = timed(fns, budget)
            t = dict(zip(names, ts[1:]))

            def col(key, w=10):
                return (f" {t[key] * 1e6:{w - 2}.1f}us {t[key] / ts[0]:5.2f}x" if key in t
                        else f" {'-':>{w}s} {'-':>6s}")
            name = f"{np.dtype(dt).name} {M}x{K}x{N}"
            print(f"{name:28s} {ts[0] * 1e6:8.1f}us" + col("rows") + col("pack_b") +
                  col("numpy") + col("ort_in") + col("ort_const", 11), flush=True)
            record("linear", dtype=np.dtype(dt).name, M=M, K=K, N=N, gemmkit_s=ts[0],
                   **{f"{k}_s": v for k, v in t.items()},
                   **{f"{k}_ratio": v / ts[0] for k, v in t.items()})
    print("(ratio: the other's time / gemmkit transB=1's; W.T rows: gemmkit on a row-major "
          "copy of W.T made beforehand; ort W const: W an initializer, pre-packed)\n")


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


def parse_half_cases(spec):
    """"256,1x4096x4096" -> [(256, 256, 256), (1, 4096, 4096)]."""
    out = []
    for v in spec.split(","):
        v = v.strip()
        if "x" in v:
            out.append(tuple(int(x) for x in v.split("x")))
        elif v:
            out.append((int(v),) * 3)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--sizes", default=None, metavar="N,...",
                    help="the n of the n^3 cases of every section instead of the default "
                         "ones")
    ap.add_argument("--float-sizes", default=None, metavar="N|MxK,...",
                    help="cases of the float path section (n^3, or M x K x K); default "
                         "64,256,1024,2048,1x4096,16x4096 (--sizes given: those n)")
    ap.add_argument("--float-only", action="store_true",
                    help="only the float32/float64 path section")
    ap.add_argument("--int-sizes", default=None, metavar="N,...",
                    help="n of the int32/int64 path section (default 512,1024; --quick 256)")
    ap.add_argument("--int-only", action="store_true",
                    help="only the int32/int64 path section")
    ap.add_argument("--half-sizes", default=None, metavar="N|MxKxN,...",
                    help="the float16/bfloat16 cases (default 256,1024,1x4096x4096,"
                         "3x4096x4096)")
    ap.add_argument("--linear-only", action="store_true",
                    help="only the linear-layer section (Gemm transB=1, W as [N, K]; "
                         "--sizes n: M = 1 and 16 with K = N = n)")
    ap.add_argument("--half-only", action="store_true",
                    help="only the float16/bfloat16 path section")
    add_json_option(ap)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    sizes = [64, 256] if args.quick else [64, 256, 512]
    if args.sizes:
        sizes = [int(v) for v in args.sizes.split(",")]
    info = gk.cpu_info()
    fams = sorted(set(info["engines"]["gemm"].values()))
    print(f"CPU: {cpu_name()}; features: {','.join(info['features'])}; gemmkit ISA level "
          f"{info['isa']}, Gemm families: {','.join(fams)}")
    nthreads = one_thread()
    print(f"gemmkit {gk.__version__}, NumPy {np.__version__}; each on {nthreads} thread; "
          f"medians")
    record_meta(threads=nthreads, gemm_families=fams, budget=args.budget)
    fspec = args.float_sizes or (args.sizes if args.sizes else
                                 ("64,256,1x4096" if args.quick else
                                  "64,256,1024,2048,1x4096,16x4096"))
    lcases = ([(m, n, n) for n in sizes for m in (1, 16)] if args.sizes else
              LINEAR_CASES[:1] + LINEAR_CASES[-2:] if args.quick else LINEAR_CASES)
    if args.linear_only:
        linear_rows(lcases, args.budget)
        write_json(args.json, "bench_gemm")
        return 0
    only = args.int_only or args.half_only
    if not only:
        float_paths(parse_cases(fspec), args.budget)
        bsizes = (([256, 1024] if args.quick else
                   [256, 1024, 2048, (16, 4096, 4096), (128, 4096, 4096)])
                  if not args.sizes else sizes)
        bf16_rows(bsizes, args.budget)
    if not only and not args.float_only:
        linear_rows(lcases, args.budget)
    if args.float_only:
        write_json(args.json, "bench_gemm")
        return 0
    if not args.int_only:
        hspec = args.half_sizes or args.sizes or ("256" if args.quick else
                                                  "256,1024,1x4096x4096,3x4096x4096")
        half_paths(parse_half_cases(hspec), args.budget)
    if args.half_only:
        write_json(args.json, "bench_gemm")
        return 0
    ispec = args.int_sizes or args.sizes or ("256" if args.quick else "512,1024")
    int_paths([int(v) for v in ispec.split(",")], args.budget)
    if args.int_only:
        write_json(args.json, "bench_gemm")
        return 0
    float8_rows(sizes if args.sizes else ([256] if args.quick else [256, 1024]), args.budget)
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
            record("dtypes", dtype=np.dtype(dt).name, M=n, K=n, N=n, gemmkit_s=ts[0],
                   gemmkit_gops=2 * n**3 / ts[0] / 1e9, numpy_s=ts[1],
                   numpy_ratio=ts[1] / ts[0], numpy_is_float32=bool(star),
                   ort_s=ts[2] if sess is not None else None,
                   ort_ratio=ts[2] / ts[0] if sess is not None else None)

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
        record("tiny", case=name, call_s=t)
    write_json(args.json, "bench_gemm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
