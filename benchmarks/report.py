"""Benchmark plots: runs the benchmark scripts with --json (or reads JSON files they wrote)
and draws the results with matplotlib, one PNG per figure, the CPU model in every title.

    python benchmarks/report.py                      # run everything, plots in docs/benchmarks/
    python benchmarks/report.py --quick              # the scripts' quick modes (a smoke run)
    python benchmarks/report.py --only int8,threads  # some of the runs
    python benchmarks/report.py docs/benchmarks/data/*.json   # plot earlier runs again
    python benchmarks/report.py --args "gemm=--sizes 64,512"  # change one run's arguments

The runs (each writes data/<name>.json and data/<name>.txt, its text table, under --out):
  int8       bench_int8.py --paths all      MatMulInteger / QLinearMatMul on every usable path
  int8_cold  bench_int8.py --cold --shapes 1x4096x4096,4x4096x4096,16x4096x4096
                                            small-M rows with B from DRAM on every call
  gemm       bench_gemm.py                  Gemm per path and dtype against NumPy / onnxruntime
  threads    bench_threads.py               1..ncpu threads

The figures:
  int8_<op>.png          GOP/s against size for each sign mix: gemmkit per path against
                         onnxruntime, with each path's measured instruction peak and, for the
                         small-M panel, the bound of reading B once at the measured bandwidth
  gemm_float.png         float32 / float64 GFLOP/s against size: gemmkit per path, NumPy,
                         onnxruntime (Gemm with alpha, beta, C), FMA peaks
  gemm_dtypes.png        Gemm of every dtype: gemmkit, NumPy, onnxruntime (log scale)
  int8_small_m.png       small-M rows: B's bytes / time as % of the read bandwidth measured in
                         the same run (B in cache, and B cold from DRAM)
  threads_scaling.png    gemmkit's speed-up over its own 1-thread time, per case
  threads_vs_others.png  at each thread count: time of NumPy / onnxruntime over gemmkit's
  pack_b.png             B packed once (pack_b) against packed per call and onnxruntime's
                         pre-packed constant B

Each script runs in a subprocess of its own, one after the other; run on a quiet machine
(nothing else running), as the scripts' numbers are only as steady as the machine.
Needs matplotlib (pip install ".[bench]").
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "docs", "benchmarks")

# name -> (script, arguments, arguments under --quick)
RUNS = {
    "int8": ("bench_int8.py", ["--paths", "all"],
             ["--paths", "all", "--quick", "--budget", "0.05"]),
    "int8_cold": ("bench_int8.py",
                  ["--cold", "--shapes", "1x4096x4096,4x4096x4096,16x4096x4096"],
                  ["--cold", "--shapes", "1x4096x4096,16x4096x4096", "--signs", "u8s8",
                   "--budget", "0.05"]),
    "gemm": ("bench_gemm.py", [], ["--quick", "--budget", "0.05"]),
    "threads": ("bench_threads.py", [], ["--quick", "--budget", "0.05"]),
}

# One colour per kernel path, the same in every figure; libraries in grey/black.
PATH_COLORS = {"amx": "#8c564b", "amxbf16": "#8c564b", "avx512vnni": "#1f77b4",
               "avxvnni": "#17becf", "avx512bf16": "#9467bd", "avx512": "#2ca02c",
               "avx2": "#ff7f0e", "sse41": "#bcbd22", "scalar": "#7f7f7f", "i8mm": "#1f77b4",
               "neondot": "#17becf", "neon": "#2ca02c"}
OTHER_STYLE = {"onnxruntime": dict(color="black", ls="--", marker="s"),
               "onnxruntime (B constant)": dict(color="black", ls=":", marker="D"),
               "NumPy": dict(color="#d62728", ls="-.", marker="^")}


# ----------------------------------------------------------------------------- running

def run_benchmarks(names, out, quick, extra):
    """Runs the named benchmark scripts one after the other; returns their JSON paths."""
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for name in names:
        script, args, qargs = RUNS[name]
        args = list(qargs if quick else args) + extra.get(name, [])
        jpath = os.path.join(data, name + ".json")
        cmd = [sys.executable, os.path.join(HERE, script), *args, "--json", jpath]
        print(f"[report] {name}: {' '.join(shlex.quote(c) for c in cmd[1:])}", file=sys.stderr,
              flush=True)
        t0 = time.monotonic()
        with open(os.path.join(data, name + ".txt"), "w") as txt:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, cwd=HERE)
            for line in proc.stdout:  # the table as it comes, to the terminal and the file
                sys.stdout.write(line)
                txt.write(line)
            rc = proc.wait()
        print(f"[report] {name}: exit {rc} after {time.monotonic() - t0:.0f} s", file=sys.stderr,
              flush=True)
        if rc != 0 or not os.path.exists(jpath):
            raise SystemExit(f"{script} failed (exit {rc}); its output is in "
                             f"{os.path.join(data, name + '.txt')}")
        paths.append(jpath)
    return paths


def load(paths):
    """The JSON documents, keyed by run: bench_int8 with --cold is "int8_cold"."""
    docs = {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        if doc.get("schema") != 1 or "rows" not in doc:
            raise SystemExit(f"{p}: not a benchmark JSON file (schema 1) written with --json")
        name = doc["bench"].replace("bench_", "")
        if name == "int8" and doc["meta"].get("cold"):
            name = "int8_cold"
        elif name == "int8" and doc["meta"].get("batched"):
            name = "int8_batched"
        docs[name] = doc
    return docs


# ----------------------------------------------------------------------------- drawing

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 120, "font.size": 10,
                         "axes.titlesize": 10.5, "axes.grid": True, "grid.alpha": 0.3,
                         "legend.fontsize": 9, "legend.framealpha": 0.9})
    return plt


def subplots(plt, *args, **kwargs):
    """plt.subplots with the constrained layout (it leaves room for the two-line title and
    the legend under the panels)."""
    return plt.subplots(*args, layout="constrained", **kwargs)


def is_quick(doc):
    return "--quick" in doc.get("argv", []) or (doc["meta"].get("budget") or 1) < 0.1


def machine_line(doc):
    m = doc["machine"]
    return (f"{m['cpu_model']} ({m['cpu_class']}, {m['machine']}); gemmkit {m['gemmkit']}, "
            f"NumPy {m['numpy']}" + (f", onnxruntime {m['onnxruntime']}" if m.get("onnxruntime")
                                      else "") + f"; {m['date'][:10]}"
            + ("; QUICK RUN: smoke test, not for publishing" if is_quick(doc) else ""))


def finish(fig, title, doc, out, name, handles=None, ncol=4):
    """Title with the CPU model, one legend under the panels, saved as out/name."""
    fig.suptitle(f"{title}\n{machine_line(doc)}", fontsize=11.5)
    if handles:  # under the panels; the constrained layout makes room for it and the title
        # gemmkit's lines first, then the other libraries, then the reference lines
        rank = lambda k: (0 if k.startswith("gemmkit") else  # noqa: E731
                          2 if ("peak" in k or "bound" in k or "ideal" in k or "%" in k
                                or "equal" in k) else 1)
        labels = sorted(handles, key=rank)  # stable: each group keeps its order
        fig.legend([handles[k] for k in labels], labels, loc="outside lower center",
                   ncol=ncol, frameon=False)
    path = os.path.join(out, name)
    fig.savefig(path, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    print(f"[report] wrote {path}", file=sys.stderr)
    return path


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def case_groups(rows):
    """[(panel title, x label, key of x, rows)]: square n^3 cases against n, the others
    grouped by (K, N) against M."""
    square = [r for r in rows if r["M"] == r["K"] == r["N"]]
    groups = []
    if square:
        groups.append(("n x n x n", "n (M = K = N)", "M", square))
    kn = defaultdict(list)
    for r in rows:
        if not r["M"] == r["K"] == r["N"]:
            kn[r["K"], r["N"]].append(r)
    for (k, n), rs in sorted(kn.items()):
        groups.append((f"M x {k} x {n}", f"M (K = {k}, N = {n})", "M", rs))
    return groups


def log2_axis(ax, xs):
    import matplotlib.ticker as mt
    xs = sorted(set(xs))
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(mt.NullLocator())
    if len(xs) == 1:
        ax.set_xlim(xs[0] / 2, xs[0] * 2)


def log_y(ax):
    """Log y axis labelled with plain numbers: at 1, 2, 5 x 10^k over a few decades, fewer
    over many (call it after drawing)."""
    import math

    import matplotlib.ticker as mt
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    subs = (1.0, 2.0, 5.0) if decades <= 2.3 else (1.0, 3.0) if decades <= 3.6 else (1.0,)
    ax.yaxis.set_major_locator(mt.LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(mt.NullFormatter())


def line(ax, handles, label, xs, ys, **style):
    pts = sorted((x, y) for x, y in zip(xs, ys) if y is not None)
    if not pts:
        return
    (h,) = ax.plot([p[0] for p in pts], [p[1] for p in pts], **style)
    handles.setdefault(label, h)


def path_style(path):
    return dict(color=PATH_COLORS.get(path, "#e377c2"), ls="-", marker="o", lw=1.8, ms=5)


def peak_line(ax, handles, path, value):
    if value:
        h = ax.axhline(value, color=PATH_COLORS.get(path, "#e377c2"), ls=(0, (1, 2)), lw=1.2)
        handles.setdefault(f"{path} peak (measured)", h)


# ------------------------------------------------------------------ int8: GOP/s vs size

def plot_int8(doc, out):
    plt = _plt()
    rows = [r for r in doc["rows"] if r["section"] == "int8"]
    written = []
    paths_order = doc["meta"].get("paths") or sorted({r["path"] for r in rows})
    cached = doc["meta"].get("bandwidth", {}).get("cached_gbs", {})
    for op in sorted({r["op"] for r in rows}):
        orows = [r for r in rows if r["op"] == op]
        signs = [s for s in ("u8s8", "s8u8", "u8u8", "s8s8") if any(r["signs"] == s for r in orows)]
        groups = case_groups(orows)
        ncols = len(groups)
        fig, axes = subplots(plt, len(signs), ncols, squeeze=False, sharey="col",
                             figsize=(5.2 * ncols + 0.5, 3.1 * len(signs) + 1.2))
        handles = {}
        for i, sg in enumerate(signs):
            for j, (gtitle, xlabel, xkey, grows) in enumerate(groups):
                ax = axes[i][j]
                srows = [r for r in grows if r["signs"] == sg]
                for path in paths_order:
                    prs = [r for r in srows if r["path"] == path]
                    fam = prs[0].get("family", path) if prs else path
                    # a level without int8 kernels of its own runs a lower family's
                    label = f"gemmkit {path}" + (f" (runs {fam})" if fam != path else "")
                    style = path_style(path)
                    if fam != path:
                        style.update(ls="--", marker="x")
                    line(ax, handles, label, [r[xkey] for r in prs],
                         [r["gemmkit_gops"] for r in prs], **style)
                    if gtitle.startswith("n x"):
                        peak_line(ax, handles, path, median(r["peak_gops"] for r in prs))
                # onnxruntime does not depend on gemmkit's path: the median of its samples
                by_x = defaultdict(list)
                for r in srows:
                    by_x[r[xkey]].append(r["ort_gops"])
                line(ax, handles, "onnxruntime", list(by_x), [median(v) for v in by_x.values()],
                     lw=1.5, ms=5, **OTHER_STYLE["onnxruntime"])
                if srows and not any(median(v) for v in by_x.values()):
                    ax.text(0.98, 0.04, "onnxruntime: not implemented for this type mix",
                            ha="right", va="bottom", transform=ax.transAxes, fontsize=8.5,
                            color="#444444")
                if not gtitle.startswith("n x") and srows:
                    # reading B once per call at the cached bandwidth: 2*M*K*N ops per K*N bytes
                    k, n = srows[0]["K"], srows[0]["N"]
                    bw = cached.get(str(k * n))
                    if bw:
                        ms = sorted({r["M"] for r in srows})
                        h, = ax.plot(ms, [2 * m * bw for m in ms], color="#555555", ls="-.",
                                     lw=1, marker="_" if len(ms) == 1 else None, ms=14)
                        handles.setdefault("bound: B read once at the measured cached "
                                           "bandwidth", h)
                log2_axis(ax, [r[xkey] for r in grows])
                log_y(ax)
                ax.set_title(f"{op} {sg}: {gtitle}")
                ax.set_xlabel(xlabel)
                ax.set_ylabel("GOP/s (multiply-add = 2)")
        name = f"int8_{op.lower()}.png"
        written.append(finish(fig, f"{op}: GOP/s against size, one thread (higher is better)",
                              doc, out, name, handles, ncol=3))
    return written


# ------------------------------------------------------------------ Gemm float paths

def plot_gemm_float(doc, out):
    plt = _plt()
    rows = [r for r in doc["rows"] if r["section"] == "float"]
    if not rows:
        return []
    dtypes = [d for d in ("float32", "float64") if any(r["dtype"] == d for r in rows)]
    groups_all = case_groups(rows)
    ncols = len(groups_all)
    fig, axes = subplots(plt, len(dtypes), ncols, squeeze=False,
                         figsize=(5.2 * ncols + 0.5, 3.3 * len(dtypes) + 1.2))
    handles = {}
    paths = []
    for r in rows:
        if r["path"] not in paths:
            paths.append(r["path"])
    for i, dt in enumerate(dtypes):
        dt_groups = case_groups([r for r in rows if r["dtype"] == dt])
        for j, (gtitle, xlabel, xkey, grows) in enumerate(dt_groups):
            ax = axes[i][j]
            for path in paths:
                prs = [r for r in grows if r["path"] == path]
                line(ax, handles, f"gemmkit {path}", [r[xkey] for r in prs],
                     [r["gemmkit_gops"] for r in prs], **path_style(path))
                if gtitle.startswith("n x"):
                    peak_line(ax, handles, path, median(r["peak_gops"] for r in prs))
            for label, key in (("NumPy", "numpy_s"), ("onnxruntime (alpha, beta, C)", "ort_abc_s")):
                by_x = defaultdict(list)
                for r in grows:
                    if r.get(key):
                        by_x[r[xkey]].append(2.0 * r["M"] * r["K"] * r["N"] / r[key] / 1e9)
                style = OTHER_STYLE["NumPy" if label == "NumPy" else "onnxruntime"]
                line(ax, handles, label, list(by_x), [median(v) for v in by_x.values()], lw=1.5,
                     ms=5, **style)
            log2_axis(ax, [r[xkey] for r in grows])
            log_y(ax)
            ax.set_title(f"Gemm {dt}: {gtitle}")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("GFLOP/s (multiply-add = 2)")
    return [finish(fig, "Gemm float32 / float64: GFLOP/s against size, one thread "
                        "(higher is better)", doc, out, "gemm_float.png", handles, ncol=4)]


def plot_gemm_dtypes(doc, out):
    plt = _plt()
    import numpy as np
    rows = [r for r in doc["rows"] if r["section"] == "dtypes"]
    if not rows:
        return []
    sizes = sorted({r["M"] for r in rows})
    fig, axes = subplots(plt, 1, len(sizes), figsize=(6.2 * len(sizes), 4.6), squeeze=False)
    handles = {}
    for ax, n in zip(axes[0], sizes):
        rs = [r for r in rows if r["M"] == n]
        dts = [r["dtype"] for r in rs]
        x = np.arange(len(rs))
        flops = 2.0 * n ** 3
        series = [("gemmkit", [r["gemmkit_gops"] for r in rs], dict(color="#1f77b4")),
                  ("NumPy (* float32 of the same values)",
                   [flops / r["numpy_s"] / 1e9 for r in rs], dict(color="#d62728")),
                  ("onnxruntime", [flops / r["ort_s"] / 1e9 if r.get("ort_s") else None
                                   for r in rs], dict(color="#444444"))]
        w = 0.27
        for k, (label, ys, style) in enumerate(series):
            xs = [xi + (k - 1) * w for xi, y in zip(x, ys) if y]
            vals = [y for y in ys if y]
            if not vals:
                continue
            bars = ax.bar(xs, vals, w, label=label, **style)
            handles.setdefault(label, bars)
        ax.set_xticks(x)
        ax.set_xticklabels([d + ("*" if r["numpy_is_float32"] else "") for d, r in zip(dts, rs)],
                           rotation=30, ha="right")
        log_y(ax)
        ax.set_title(f"Gemm Y = A @ B + C, {n} x {n} x {n}")
        ax.set_ylabel("G operations/s (multiply-add = 2), log scale")
        ax.grid(axis="x", visible=False)
    return [finish(fig, "Gemm by dtype, one thread (higher is better; no bar: the library "
                        "has no such Gemm)", doc, out, "gemm_dtypes.png", handles, ncol=3)]


# ------------------------------------------------------------------ small-M bandwidth

def plot_small_m(docs, out):
    """Horizontal bars, one pair per small-M case: gemmkit on its best path and
    onnxruntime, as % of the read bandwidth measured in the same run."""
    plt = _plt()
    import numpy as np
    panels = []
    for name, kind in (("int8", "B in cache: the same B every call"),
                       ("int8_cold", "B cold: a B fresh from DRAM every call (--cold)")):
        doc = docs.get(name)
        if doc is None:
            continue
        best = (doc["meta"].get("paths") or [None])[0]
        rs = [r for r in doc["rows"] if r["section"] == "int8" and r.get("pct_bw") is not None
              and r["path"] == best]
        if rs:
            panels.append((name, kind, doc, best, rs))
    if not panels:
        return []
    heights = [len(p[4]) for p in panels]
    fig, axes = subplots(plt, len(panels), 1, squeeze=False,
                             figsize=(10, 0.42 * sum(heights) + 1.1 * len(panels) + 1.4),
                             gridspec_kw={"height_ratios": [h + 1.5 for h in heights]})
    handles = {}
    top = 0.0
    for ax, (name, kind, doc, best, rs) in zip(axes[:, 0], panels):
        rs = sorted(rs, key=lambda r: (r["op"], r["signs"], r["M"], r["K"], r["N"]))
        y = np.arange(len(rs))[::-1]
        g = [r["pct_bw"] for r in rs]
        o = [100 * r["b_bytes"] / r["ort_s"] / 1e9 / r["bw_gbs"] if r.get("ort_s") else None
             for r in rs]
        handles.setdefault(f"gemmkit ({best}, its best path)",
                           ax.barh(y + 0.2, g, 0.4, color="#1f77b4"))
        yo = [yi - 0.2 for yi, v in zip(y, o) if v is not None]
        handles.setdefault("onnxruntime", ax.barh(yo, [v for v in o if v is not None], 0.4,
                                                  color="#444444"))
        for yi, v in zip(y, g):
            ax.annotate(f" {v:.0f}%", (v, yi + 0.2), va="center", fontsize=8)
        for yi, v in zip(y, o):
            ax.annotate(" n/a" if v is None else f" {v:.0f}%", (v or 0, yi - 0.2),
                        va="center", fontsize=8, color="#444444")
        h = ax.axvline(100, color="#d62728", ls="--", lw=1)
        handles.setdefault("100%: B read once at the measured bandwidth", h)
        ax.set_yticks(y)
        ax.set_yticklabels([f"{r['op']} {r['signs']}  {r['M']} x {r['K']} x {r['N']}"
                            for r in rs], fontsize=9)
        bws = sorted({r["bw_gbs"] for r in rs})
        ax.set_title(f"{kind}\nread bandwidth measured in the same run: "
                     f"{', '.join(f'{b:.1f}' for b in bws)} GB/s "
                     f"({doc['meta']['bandwidth']['kind']})")
        ax.set_xlabel("B's K x N bytes / time, as % of that read bandwidth (higher is better)")
        top = max(top, max(g + [v for v in o if v is not None]))
        ax.grid(axis="y", visible=False)
    for ax in axes[:, 0]:
        ax.set_xlim(0, max(110, top * 1.15))
    return [finish(fig, "Small-M rows (M <= 16): how close to reading B once, one thread",
                   panels[0][2], out, "int8_small_m.png", handles, ncol=3)]


# ------------------------------------------------------------------ threads

KIND_TITLES = {"u8s8": "MatMulInteger u8 x s8", "f32": "Gemm float32", "bf16": "Gemm bfloat16"}


def _shape_colors(shapes):
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap("tab10")
    return {s: cmap(i % 10) for i, s in enumerate(shapes)}


def _shape_label(s):
    m, k, n = s
    return f"{m}^3" if m == k == n else f"{m}x{k}x{n}"


def plot_threads(doc, out):
    plt = _plt()
    rows = [r for r in doc["rows"] if r["section"] == "threads"]
    if not rows:
        return []
    kinds = [k for k in KIND_TITLES if any(r["kind"] == k for r in rows)]
    shapes = sorted({(r["M"], r["K"], r["N"]) for r in rows}, key=lambda s: (s[0] * s[1] * s[2]))
    colors = _shape_colors(shapes)
    tmax = max(r["threads"] for r in rows)
    ts = sorted({r["threads"] for r in rows})
    written = []

    fig, axes = subplots(plt, 1, len(kinds), figsize=(5 * len(kinds), 4.6), squeeze=False,
                             sharey=True)
    handles = {}
    for ax, kind in zip(axes[0], kinds):
        for s in shapes:
            rs = [r for r in rows if r["kind"] == kind and (r["M"], r["K"], r["N"]) == s]
            line(ax, handles, _shape_label(s), [r["threads"] for r in rs],
                 [r["speedup"] for r in rs], color=colors[s], marker="o", lw=1.6, ms=4)
        h, = ax.plot(ts, ts, color="#999999", ls=":", lw=1.2)
        handles.setdefault("ideal (speed-up = threads)", h)
        ax.set_xticks(ts)
        ax.set_xlim(0.8, tmax + 0.2)
        ax.set_ylim(0, max([tmax] + [r["speedup"] for r in rows]) * 1.1 + 0.2)
        ax.set_title(KIND_TITLES[kind])
        ax.set_xlabel("threads")
    axes[0][0].set_ylabel("speed-up over gemmkit on 1 thread")
    written.append(finish(fig, "Thread scaling: gemmkit's speed-up, per case (M x K x N)",
                          doc, out, "threads_scaling.png", handles, ncol=5))

    # the others' time over gemmkit's at each thread count (> 1: gemmkit faster)
    others = [("NumPy", "numpy_s"), ("onnxruntime", "ort_s"),
              ("onnxruntime (B constant)", "ortc_s")]
    fig, axes = subplots(plt, len(others), len(kinds), squeeze=False, sharex=True,
                         figsize=(5 * len(kinds), 3.0 * len(others) + 1.2))
    handles = {}
    for i, (label, key) in enumerate(others):
        for j, kind in enumerate(kinds):
            ax = axes[i][j]
            any_line = False
            for s in shapes:
                rs = [r for r in rows if r["kind"] == kind and (r["M"], r["K"], r["N"]) == s]
                ys = [r[key] / r["gemmkit_s"] if r.get(key) else None for r in rs]
                if any(y is not None for y in ys):
                    any_line = True
                line(ax, handles, _shape_label(s), [r["threads"] for r in rs], ys,
                     color=colors[s], marker="o", lw=1.6, ms=4)
            if kind == "bf16" and label == "NumPy":
                label_here = "NumPy (float32 route)"
            else:
                label_here = label
            ax.set_title(f"{KIND_TITLES[kind]}: {label_here}")
            if j == 0:
                ax.set_ylabel(f"{label} time / gemmkit's\n(> 1: gemmkit faster)")
            if not any_line:
                ax.text(0.5, 0.5, f"not measured\n({label} has no such case here)",
                        ha="center", va="center", transform=ax.transAxes, color="#666666")
                ax.set_yticks([])
                ax.grid(False)
                continue
            h = ax.axhline(1, color="#d62728", ls="--", lw=1)
            handles.setdefault("equal time", h)
            ax.set_xticks(ts)
            ax.set_xlim(0.8, tmax + 0.2)
            log_y(ax)
            if i == len(others) - 1:
                ax.set_xlabel("threads (the same for both)")
    written.append(finish(fig, "gemmkit against NumPy and onnxruntime on as many threads",
                          doc, out, "threads_vs_others.png", handles, ncol=7))

    prows = [r for r in doc["rows"] if r["section"] == "pack_b"]
    if prows:
        import numpy as np
        fig, ax = subplots(plt, figsize=(max(7, 1.2 * len(prows) + 2), 4.6))
        x = np.arange(len(prows))
        series = [("gemmkit, B packed per call", "per_call_s", "#aec7e8"),
                  ("gemmkit, pack_b (B packed once)", "pack_b_s", "#1f77b4"),
                  ("onnxruntime, B a constant (pre-packed)", "ortc_s", "#444444")]
        handles = {}
        for k, (label, key, color) in enumerate(series):
            ys = [2.0 * r["M"] * r["K"] * r["N"] / r[key] / 1e9 if r.get(key) else 0
                  for r in prows]
            handles[label] = ax.bar(x + (k - 1) * 0.27, ys, 0.27, color=color)
        ax.set_xticks(x)
        ax.set_xticklabels([f"{KIND_TITLES[r['kind']]}\n{r['M']}x{r['K']}x{r['N']}, "
                            f"{r['threads']} thr" for r in prows], fontsize=8)
        ax.set_ylabel("G operations/s (multiply-add = 2)")
        ax.grid(axis="x", visible=False)
        written.append(finish(fig, "Pre-packed weights: pack_b against packing per call",
                              doc, out, "pack_b.png", handles, ncol=3))
    return written


# ----------------------------------------------------------------------------- main

def write_index(out, docs, written, command, made=None):
    """out/README.md: the figures, the machines, the commands that made them (made: the
    runs this command made, when it made only some of docs)."""
    lines = ["# Benchmark plots", "",
             "Drawn by `benchmarks/report.py` (see the Benchmarks section of the top README) "
             "with", "", "```bash", command, "```", ""]
    if made is not None and set(docs) - set(made):
        lines += [f"which made {', '.join(f'`{n}`' for n in made)}; the other runs below are "
                  "earlier ones, drawn again from their data.", ""]
    if any(is_quick(d) for d in docs.values()):
        lines += ["**Quick run: a smoke test of the pipeline, not numbers to publish.**", ""]
    lines += ["from these runs (JSON and text tables in [`data/`](data/); "
              "`python benchmarks/report.py docs/benchmarks/data/*.json` draws them again):", ""]
    order = list(RUNS)
    for name in sorted(docs, key=lambda n: order.index(n) if n in order else len(order)):
        d = docs[name]
        m = d["machine"]
        argv = d.get("argv", [])
        if "--json" in argv:  # where it was written (a path on that machine): not of interest
            i = argv.index("--json")
            argv = argv[:i] + argv[i + 2:]
        argv = " ".join(argv)
        lines.append(f"- `{name}`: `{d['bench']}.py {argv}` on {m['cpu_model']} "
                     f"({m['cpu_class']}; paths usable: {', '.join(m['available'])}; "
                     f"{m['usable_cpus']} usable CPUs), {m['platform']}, Python {m['python']}, "
                     f"gemmkit {m['gemmkit']}, NumPy {m['numpy']}"
                     + (f", onnxruntime {m['onnxruntime']}" if m.get("onnxruntime") else "")
                     + f", {m['date']}")
    lines.append("")
    for p in written:
        f = os.path.basename(p)
        lines += [f"![{f}]({f})", ""]
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write("\n".join(lines))


def kept_runs(out, names):
    """The JSON files in out/data of the runs not made this time (--only): the folder's
    figures and index keep covering them, drawn again from their data (a partial run
    used to leave their PNGs but drop them from the index)."""
    data = os.path.join(out, "data")
    return [os.path.join(data, n + ".json") for n in RUNS
            if n not in names and os.path.exists(os.path.join(data, n + ".json"))]


def keep_data(paths, out):
    """Copies JSON files given on the command line (and their .txt tables) into out/data,
    so that the folder holds what its figures were drawn from."""
    import shutil
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    for p in paths:
        for src in (p, os.path.splitext(p)[0] + ".txt"):
            dst = os.path.join(data, os.path.basename(src))
            if os.path.exists(src) and os.path.abspath(src) != os.path.abspath(dst):
                shutil.copyfile(src, dst)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="*", help="JSON files written by the scripts' --json; "
                    "none: run the scripts")
    ap.add_argument("--out", default=DEFAULT_OUT, help="folder for the PNGs (default: "
                    "docs/benchmarks); the runs' JSON and tables go to its data/")
    ap.add_argument("--quick", action="store_true", help="run the scripts in their quick "
                    "modes with small budgets: checks the pipeline, numbers not for publishing")
    ap.add_argument("--only", default=",".join(RUNS), help="runs to make, comma-separated "
                    f"(default: {','.join(RUNS)})")
    ap.add_argument("--args", action="append", default=[], metavar="NAME=ARGS",
                    help="extra arguments for one run, e.g. \"int8=--budget 2\" (repeatable)")
    args = ap.parse_args(argv)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    made = None
    if args.json:
        jpaths = args.json
    else:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in names if n not in RUNS]
        if bad:
            ap.error(f"--only: unknown run(s) {bad}; known: {list(RUNS)}")
        extra = {}
        for item in args.args:
            name, _, rest = item.partition("=")
            if name not in RUNS:
                ap.error(f"--args {item!r}: unknown run {name!r}")
            extra.setdefault(name, []).extend(shlex.split(rest))
        t0 = time.monotonic()
        jpaths = run_benchmarks(names, out, args.quick, extra)
        print(f"[report] benchmarks took {time.monotonic() - t0:.0f} s", file=sys.stderr)
        made = names
        jpaths = jpaths + kept_runs(out, names)
    docs = load(jpaths)
    if args.json:
        keep_data(jpaths, out)
    written = []
    if "int8" in docs:
        written += plot_int8(docs["int8"], out)
    if "int8_cold" in docs and "int8" not in docs:
        written += plot_int8(docs["int8_cold"], out)
    written += plot_small_m(docs, out) if ("int8" in docs or "int8_cold" in docs) else []
    if "gemm" in docs:
        written += plot_gemm_float(docs["gemm"], out)
        written += plot_gemm_dtypes(docs["gemm"], out)
    if "threads" in docs:
        written += plot_threads(docs["threads"], out)
    if not written:
        raise SystemExit("nothing to plot: no rows the figures use in " + ", ".join(jpaths))
    command = "python benchmarks/report.py" + "".join(
        " " + shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    write_index(out, docs, written, command, made)
    print(f"[report] {len(written)} figures in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
