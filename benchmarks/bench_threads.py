"""Thread scaling: gemmkit on 1..ncpu threads against onnxruntime and NumPy on as many.

    python benchmarks/bench_threads.py [--threads 1,2] [--budget S] [--quick]
        [--shapes MxKxN,...] [--kinds u8s8,f32,bf16] [--pack-only | --no-pack]
        [--tuning-ab] [--ceiling]

Rows: MatMulInteger u8s8, Gemm float32 and Gemm bfloat16, at 256^3, 1024^3, 2048^3 and
M = 1 / 16 / 128 with K = N = 4096 (and 64^3).  For every thread count n, in one process,
each library timed in a block of its own after the others' pools stopped spinning (best
of two medians):
  - gemmkit with ``gemmkit.set_num_threads(n)``; "x1t" is its speed-up over its own 1-thread time
    and "eff" the parallel efficiency (speed-up / n);
  - onnxruntime with intra_op_num_threads = n, B as a graph input ("ort") and as a constant
    initializer ("ortc": onnxruntime pre-packs it), ratio = their time / gemmkit's;
  - NumPy (its BLAS limited to n threads by threadpoolctl) for float32; for bfloat16 the
    NumPy route is float32 matmul of the widened operands.
Small-product rows show whether a parallel call is ever slower than a serial one.
The header names the CPU (lscpu's model line) and the CPUs this process may use.

--tuning-ab: instead, the parallel drivers' policy A/B in one process (gemmkit._core.
_parallel_tuning, alternating blocks, median of 5 medians): B' packed by each part, B'
packed once for all threads (the default), and that with 2 parts per thread.
--ceiling: also the machine's own scaling: as many independent one-thread processes as
the largest thread count, against one, each calling a 1024^3 product for 2 s; their
aggregate rate is what perfect threading could reach (on a virtual machine or a CPU
whose clock drops with the active cores it is below the core count).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemmkit  # noqa: E402
from gemmkit import _core  # noqa: E402
from _bench_common import (add_json_option, cpu_name, record, record_meta,  # noqa: E402
                           write_json)

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


def timed(fns, budget, rounds=2):
    """Median seconds per call of each fn (None entries skipped).  Each library runs in a
    block of its own, 0.2 s after the previous block: onnxruntime's and OpenBLAS's pools
    spin after a call, and on a machine with few cores a spinning pool takes the cores
    another library's threads need (interleaving calls measured every library's 2-thread
    rows at or below its 1-thread ones).  The blocks are repeated `rounds` times and the
    best median kept."""
    live = [f for f in fns if f is not None]
    best = {id(f): float("inf") for f in live}
    for _ in range(rounds):
        for f in live:
            time.sleep(0.2)
            f()
            t0 = time.perf_counter()
            f()
            one = max(time.perf_counter() - t0, 1e-7)
            inner = max(1, int(0.01 / one))
            reps = max(3, min(15, int(budget / rounds / len(live) / (one * inner))))
            res = []
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(inner):
                    f()
                res.append((time.perf_counter() - t0) / inner)
            best[id(f)] = min(best[id(f)], statistics.median(res))
    return [best[id(f)] if f is not None else None for f in fns]


def ort_session(op, n_threads, b_const=None, dtype=None):
    """A one-node onnxruntime session on n_threads intra-op threads; B is a graph input,
    or (b_const given) a constant initializer.  None if onnxruntime cannot run it."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    inits = []
    if op == "MatMulInteger":
        ins = [helper.make_tensor_value_info("A", TensorProto.UINT8, None)]
        node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"])
        out = helper.make_tensor_value_info("Y", TensorProto.INT32, None)
        tb = TensorProto.INT8
    else:
        t = {np.float32: TensorProto.FLOAT}.get(dtype)
        if t is None:
            return None
        ins = [helper.make_tensor_value_info("A", t, None)]
        node = helper.make_node("Gemm", ["A", "B"], ["Y"])
        out = helper.make_tensor_value_info("Y", t, None)
        tb = t
    if b_const is None:
        ins.append(helper.make_tensor_value_info("B", tb, None))
    else:
        inits.append(numpy_helper.from_array(b_const, "B"))
    g = helper.make_graph([node], "g", ins, [out], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = n_threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001
        return None


def numpy_limits(n):
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=n, user_api="blas")


def fmt_t(s):
    if s is None:
        return "-"
    return f"{s * 1e6:.0f}us" if s < 1e-3 else f"{s * 1e3:.2f}ms"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def operands(kind, m, k, n, rng):
    """A (m x k) and B (k x n) of one kind, A drawn first: uniform uint8 / int8 for u8s8,
    standard normal float32 (rounded to bfloat16 for bf16) otherwise."""
    if kind == "u8s8":
        return (rng.integers(0, 256, (m, k), dtype=np.uint8),
                rng.integers(-128, 128, (k, n), dtype=np.int8))
    dt = np.float32 if kind == "f32" else ml_dtypes.bfloat16
    return (rng.standard_normal((m, k), dtype=np.float32).astype(dt),
            rng.standard_normal((k, n), dtype=np.float32).astype(dt))


def gk_op(kind):
    """The gemmkit function of a kind: MatMulInteger for u8s8, Gemm otherwise."""
    return gemmkit.matmul_integer if kind == "u8s8" else gemmkit.gemm


def gk_call(kind, m, k, n, rng):
    """A gemmkit call on fresh operands of one kind."""
    a, b = operands(kind, m, k, n, rng)
    op = gk_op(kind)
    return lambda: op(a, b)


def run_case(kind, m, k, n, threads, budget, rng):
    a, b = operands(kind, m, k, n, rng)
    op = "MatMulInteger" if kind == "u8s8" else "Gemm"
    fn = gk_op(kind)
    gk_fn = lambda: fn(a, b)  # noqa: E731
    if kind == "u8s8":
        np_fn = None
        feeds = {"A": a, "B": b}
        ort_dtype = None
    elif kind == "f32":
        np_fn = lambda: a @ b  # noqa: E731
        feeds = {"A": a, "B": b}
        ort_dtype = np.float32
    else:  # bf16
        np_fn = lambda: (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)  # noqa: E731
        feeds = None
        ort_dtype = None
    rows = []
    base = None
    for t in threads:
        s_in = ort_session(op, t, dtype=ort_dtype) if feeds else None
        s_c = ort_session(op, t, b_const=b, dtype=ort_dtype) if feeds else None
        f_ort = (lambda s=s_in: s.run(None, feeds)) if s_in else None
        f_ortc = (lambda s=s_c: s.run(None, {"A": a})) if s_c else None

        # the process setting, not a per-call `with threads(t)` (a few microseconds of
        # Python per call would distort the small rows)
        lim = numpy_limits(t) if np_fn else None
        old = gemmkit.set_num_threads(t)
        try:
            tg, tn, to, tc = timed([gk_fn, np_fn, f_ort, f_ortc], budget)
        finally:
            gemmkit.set_num_threads(old)
            if lim is not None:
                lim.restore_original_limits()
        if base is None:
            base = tg
        rows.append((t, tg, base / tg, base / tg / t, tn, to, tc))
    return rows


def run_pack_rows(kind, m, k, n, threads, budget, rng):
    """gemmkit with B packed once (pack_b) against B packed per call, and against
    onnxruntime with B a constant initializer, on `threads` threads."""
    a, b = operands(kind, m, k, n, rng)
    op = gk_op(kind)
    pb = gemmkit.pack_b(b, "matmul_integer" if kind == "u8s8" else "gemm")
    f_raw = lambda: op(a, b)  # noqa: E731
    f_pk = lambda: op(a, pb)  # noqa: E731
    if kind == "u8s8":
        s_c = ort_session("MatMulInteger", threads, b_const=b)
    else:
        # onnxruntime has no bfloat16 Gemm on the CPU
        s_c = ort_session("Gemm", threads, b_const=b, dtype=np.float32) if kind == "f32" else None
    f_ortc = (lambda: s_c.run(None, {"A": a})) if s_c else None
    old = gemmkit.set_num_threads(threads)
    try:
        t_raw, t_pk, t_c = timed([f_raw, f_pk, f_ortc], budget)
    finally:
        gemmkit.set_num_threads(old)
    return t_raw, t_pk, t_c


# (share_b, parts_per_thread): per-part packing, shared B' (the default), 2 parts per thread
TUNINGS = [(False, 1), (True, 1), (True, 2)]


def run_tuning_ab(kind, m, k, n, t, budget, rng):
    """Median seconds per call under each of TUNINGS on t threads: 5 rounds of one block
    per setting, alternating, each block's median; the median over the rounds."""
    f = gk_call(kind, m, k, n, rng)
    old_threads = gemmkit.set_num_threads(t)
    old_tuning = _core._parallel_tuning()
    try:
        f()
        t0 = time.perf_counter()
        f()
        one = max(time.perf_counter() - t0, 1e-7)
        reps = max(3, min(25, int(budget / 5 / len(TUNINGS) / one)))
        res = {s: [] for s in TUNINGS}
        for _ in range(5):
            for s in TUNINGS:
                _core._parallel_tuning(*s)
                f()
                ts = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    f()
                    ts.append(time.perf_counter() - t0)
                res[s].append(statistics.median(ts))
    finally:
        _core._parallel_tuning(*old_tuning)
        gemmkit.set_num_threads(old_threads)
    return [statistics.median(res[s]) for s in TUNINGS]


CEILING_CHILD = """
import sys, time
import numpy as np
sys.path.insert(0, {bench!r})
import gemmkit
from bench_threads import gk_call
gemmkit.set_num_threads(1)
f = gk_call({kind!r}, {n}, {n}, {n}, np.random.default_rng(0))
f()
t0 = time.perf_counter()
c = 0
while time.perf_counter() - t0 < {seconds}:
    f()
    c += 1
print(c / (time.perf_counter() - t0))
"""


def ceiling(kind, n, procs, seconds=2.0):
    """Aggregate calls/s of `procs` concurrent one-thread processes, and of one."""
    code = CEILING_CHILD.format(bench=os.path.dirname(os.path.abspath(__file__)), kind=kind,
                                n=n, seconds=seconds)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def run(p):
        ps = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               env=env) for _ in range(p)]
        return sum(float(q.communicate()[0]) for q in ps)

    return run(1), run(procs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ncpu = gemmkit.cpu_info()["usable_cpus"]
    ap.add_argument("--threads", default=",".join(str(i) for i in range(1, ncpu + 1)))
    ap.add_argument("--budget", type=float, default=1.0, help="seconds per row and thread count")
    ap.add_argument("--quick", action="store_true", help="skip 2048^3 and the 4096 rows but M = 1")
    ap.add_argument("--pack-only", action="store_true", help="only the pack_b table")
    ap.add_argument("--no-pack", action="store_true", help="skip the pack_b table")
    ap.add_argument("--shapes", default=None, metavar="MxKxN,...",
                    help="only these scaling rows (default: all of them)")
    ap.add_argument("--kinds", default=None, metavar="u8s8,f32,bf16",
                    help="only these operand kinds")
    ap.add_argument("--tuning-ab", action="store_true",
                    help="the parallel drivers' policy A/B instead of the scaling tables")
    ap.add_argument("--ceiling", action="store_true",
                    help="also the machine's scaling for independent one-thread processes")
    add_json_option(ap)
    args = ap.parse_args(argv)
    threads = [int(x) for x in args.threads.split(",")]
    rng = np.random.default_rng(0)
    info = gemmkit.cpu_info()
    print(f"CPU: {cpu_name()}; usable CPUs {info['usable_cpus']}; gemmkit isa {info['isa']}")
    record_meta(threads=threads, budget=args.budget)
    shapes = [(64, 64, 64), (256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048),
              (1, 4096, 4096), (16, 4096, 4096), (128, 4096, 4096)]
    if args.quick:
        shapes = [s for s in shapes if s[0] != 2048 and (s[1] != 4096 or s[0] == 1)]
    if args.shapes:
        shapes = [tuple(int(v) for v in x.split("x")) for x in args.shapes.split(",")]
    kinds = ["u8s8", "f32"] + (["bf16"] if ml_dtypes is not None else [])
    if args.kinds:
        kinds = [k for k in kinds if k in args.kinds.split(",")]
    if args.ceiling:
        procs = max(threads)
        print(f"machine ceiling: {procs} independent one-thread processes against one, "
              f"1024^3, 2 s each")
        for kind in kinds:
            one, many = ceiling(kind, 1024, procs)
            print(f"  {kind:<6} 1 process {one:9.1f} calls/s, {procs} processes {many:9.1f} "
                  f"calls/s: {many / one:5.2f}x", flush=True)
            record("ceiling", kind=kind, N=1024, processes=procs, one_rate=one, many_rate=many)
        print()
    if args.tuning_ab:
        print("B' per part / shared (default) / shared with 2 parts per thread; ms per call, "
              "and the default's speed-up over per-part packing")
        print(f"{'case':<22}{'thr':>4}" + "".join(f"{str(s):>14}" for s in TUNINGS) +
              f"{'shared':>8}")
        for kind in kinds:
            for (m, k, n) in shapes:
                for t in threads:
                    ts = run_tuning_ab(kind, m, k, n, t, args.budget, rng)
                    print(f"{kind + f' {m}x{k}x{n}':<22}{t:>4}" +
                          "".join(f"{x * 1e3:>12.3f}ms" for x in ts) + f"{ts[0] / ts[1]:>7.2f}x",
                          flush=True)
                    record("tuning", kind=kind, M=m, K=k, N=n, threads=t, per_part_s=ts[0],
                           shared_s=ts[1], shared2_s=ts[2])
        write_json(args.json, "bench_threads")
        return
    print(f"{'case':<22}{'thr':>4}{'gemmkit':>10}{'x1t':>7}{'eff':>6}"
          f"{'NumPy':>10}{'ratio':>7}{'ort':>10}{'ratio':>7}{'ortc':>10}{'ratio':>7}")
    print("-" * 100)
    for kind in ([] if args.pack_only else kinds):
        for (m, k, n) in shapes:
            for (t, tg, sp, eff, tn, to, tc) in run_case(kind, m, k, n, threads, args.budget, rng):
                print(f"{kind + f' {m}x{k}x{n}':<22}{t:>4}{fmt_t(tg):>10}{sp:>6.2f}x{eff:>6.2f}"
                      f"{fmt_t(tn):>10}{ratio(tn, tg):>7}{fmt_t(to):>10}{ratio(to, tg):>7}"
                      f"{fmt_t(tc):>10}{ratio(tc, tg):>7}", flush=True)
                record("threads", kind=kind, M=m, K=k, N=n, threads=t, gemmkit_s=tg,
                       gemmkit_gops=2.0 * m * k * n / tg / 1e9, speedup=sp, efficiency=eff,
                       numpy_s=tn, ort_s=to, ortc_s=tc)
    print(f"\npack_b: B packed once against B packed per call, and against onnxruntime "
          f"with B a constant initializer (it pre-packs too)")
    print(f"{'case':<22}{'thr':>4}{'per call':>10}{'pack_b':>10}{'gain':>7}{'ortc':>10}{'ratio':>7}")
    print("-" * 70)
    # K = N = 1024: B (1-4 MB) stays in L2/L3 between calls; 4096: 16-64 MB
    pack_kinds = [] if args.no_pack else kinds
    for kind in pack_kinds:
        for (m, k, n) in [(1, 1024, 1024), (1, 4096, 4096), (16, 4096, 4096), (128, 4096, 4096)]:
            if args.quick and m != 1:
                continue
            for t in sorted({threads[0], threads[-1]}):
                t_raw, t_pk, t_c = run_pack_rows(kind, m, k, n, t, args.budget, rng)
                print(f"{kind + f' {m}x{k}x{n}':<22}{t:>4}{fmt_t(t_raw):>10}{fmt_t(t_pk):>10}"
                      f"{ratio(t_raw, t_pk):>7}{fmt_t(t_c):>10}{ratio(t_c, t_pk):>7}", flush=True)
                record("pack_b", kind=kind, M=m, K=k, N=n, threads=t, per_call_s=t_raw,
                       pack_b_s=t_pk, ortc_s=t_c)
    print("\nratio = the other's time / gemmkit's (> 1: gemmkit faster); ort: B as an input, "
          "ortc: B a constant initializer (pre-packed by onnxruntime); NumPy for bf16 is the "
          "float32 route (widen, matmul, round).")
    write_json(args.json, "bench_threads")


if __name__ == "__main__":
    main()
