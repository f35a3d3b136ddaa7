"""gemmkit.contrib vs onnxruntime's com.microsoft kernels, one thread, same inputs, one
process: the ops onnxruntime's dynamic quantizer puts into a transformer (BERT-sized layer
shapes: M tokens x 768 or 3072).

    python benchmarks/bench_contrib.py               # the table below
    python benchmarks/bench_contrib.py --reps 61     # steadier medians

Rows, each timed as the median of --reps interleaved calls:
  DynamicQuantizeLinear   gemmkit.contrib.dynamic_quantize_linear(x) vs the ONNX op;
  DynamicQuantizeMatMul   A float32 (M x K) quantized per tensor, times int8 B (K x N),
                          scaled to float32 with a bias; gemmkit with B as an array
                          ("B arr") and as gemmkit.pack_b ("B pk"), onnxruntime with B a
                          graph input ("ort in") and a constant initializer ("ort const":
                          it pre-packs B once, as pack_b does).
"ratio" is onnxruntime's time / gemmkit's for the matching pair (input / array, constant /
packed).  "equal" checks that the outputs are bit-identical (gemmkit follows the subgraph
definition exactly; where onnxruntime differs, the column says so, it is not an error of
the benchmark).  Needs onnxruntime; without it only gemmkit's times print.
"""
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import argparse
import statistics
import time

import numpy as np

import gemmkit as gk
import gemmkit.contrib as gc
from _bench_common import cpu_class, cpu_name, one_thread

SHAPES = [(1, 768, 768), (8, 768, 768), (32, 768, 768), (128, 768, 768), (128, 768, 3072),
          (128, 3072, 768), (512, 768, 768)]


def timed(fns, reps):
    """Median seconds of each callable (None: skipped), repetitions interleaved."""
    times = [[] for _ in fns]
    for f in fns:
        if f is not None:
            f()
    for _ in range(reps):
        for i, f in enumerate(fns):
            if f is None:
                continue
            t0 = time.perf_counter()
            f()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) if t else None for t in times]


def ort_session(node, inputs, outputs, inits):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    ins = [helper.make_tensor_value_info(n, t, None) for n, t in inputs]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    graph = helper.make_graph([node], "g", ins, outs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)  # opset 17's (an older onnxruntime refuses onnx's newest)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def us(t):
    return "-" if t is None else f"{t * 1e6:.1f}"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=31)
    args = ap.parse_args()
    threads = one_thread()
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
        ort_version = ort.__version__
    except ImportError:
        ort, ort_version = None, None
    print(f"CPU: {cpu_name()}; class: {cpu_class(gk.cpu_info()['features'])}")
    print(f"gemmkit {gk.__version__} (int8 path {gk.cpu_info()['engines']['qgemm']}, "
          f"codecs {gk.cpu_info()['engines']['codecs']}), onnxruntime {ort_version}; "
          f"{threads} thread each; medians of {args.reps}")
    rng = np.random.default_rng(0)

    print("\nDynamicQuantizeLinear    gemmkit       ort   ratio  equal")
    for M, K in [(1, 768), (128, 768), (512, 3072)]:
        x = rng.standard_normal((M, K)).astype(np.float32)
        f_gk = lambda: gc.dynamic_quantize_linear(x)  # noqa: E731
        f_ort = None
        if ort is not None:
            s = ort_session(helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"]),
                            [("x", TensorProto.FLOAT)],
                            [("y", TensorProto.UINT8), ("s", TensorProto.FLOAT),
                             ("z", TensorProto.UINT8)], {})
            f_ort = lambda: s.run(None, {"x": x})  # noqa: E731
        tg, to = timed([f_gk, f_ort], args.reps)
        eq = "-"
        if f_ort is not None:
            got, want = f_gk(), f_ort()
            eq = "yes" if all(np.array_equal(np.asarray(a), np.asarray(b))
                              for a, b in zip(got, want)) else "no"
        print(f"  {M:4d} x {K:<5d}           {us(tg):>8} {us(to):>9} {ratio(to, tg):>7}  {eq}")

    head = (f"{'DynamicQuantizeMatMul':22s} {'B arr':>8} {'ort in':>8} {'ratio':>6} "
            f"{'B pk':>8} {'ort const':>9} {'ratio':>6}  equal")
    print("\n" + head + "\n" + "-" * len(head))
    for M, K, N in SHAPES:
        A = rng.standard_normal((M, K)).astype(np.float32)
        B = rng.integers(-128, 128, (K, N)).astype(np.int8)
        bs = np.array(0.0123, np.float32)
        bias = rng.standard_normal(N).astype(np.float32)
        P = gk.pack_b(B, "matmul_integer")
        fns = [lambda: gc.dynamic_quantize_matmul(A, B, bs, None, bias),
               None,
               lambda: gc.dynamic_quantize_matmul(A, P, bs, None, bias),
               None]
        if ort is not None:
            node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "b_scale", "", "bias"],
                                    ["Y"], domain="com.microsoft")
            out = [("Y", TensorProto.FLOAT)]
            s_in = ort_session(node, [("A", TensorProto.FLOAT), ("B", TensorProto.INT8)], out,
                               {"b_scale": bs, "bias": bias})
            s_c = ort_session(node, [("A", TensorProto.FLOAT)], out,
                              {"B": B, "b_scale": bs, "bias": bias})
            fns[1] = lambda: s_in.run(None, {"A": A, "B": B})
            fns[3] = lambda: s_c.run(None, {"A": A})
        t = timed(fns, args.reps)
        eq = "-"
        if ort is not None:
            eq = "yes" if np.array_equal(fns[0](), fns[3]()[0]) else "no"
        print(f"{M:4d} x {K:4d} x {N:<5d}       {us(t[0]):>8} {us(t[1]):>8} "
              f"{ratio(t[1], t[0]):>6} {us(t[2]):>8} {us(t[3]):>9} {ratio(t[3], t[2]):>6}  {eq}")
    print("(microseconds; ratio: onnxruntime's time / gemmkit's; B pk: gemmkit.pack_b, "
          "ort const: B a constant initializer)")


if __name__ == "__main__":
    main()
