"""The benchmark scripts' --json output and benchmarks/report.py, on tiny cases (a smoke
test of the plotting pipeline, not a measurement): the JSON holds every printed row with
its measured fields and the CPU, the text output does not change, and report.py draws
the figures from it.  The drawing part is skipped without matplotlib (the bench extra)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")

pytest.importorskip("onnxruntime", reason="the benchmarks compare with onnxruntime")
pytest.importorskip("onnx", reason="the benchmarks build onnx models")

INT8_ARGS = ["--shapes", "8x64x64,1x256x256", "--signs", "u8s8", "--budget", "0.01",
             "--quick"]
GEMM_ARGS = ["--float-only", "--sizes", "32", "--budget", "0.01"]


def _run(script, args):
    # GEMMKIT_NUM_THREADS=2: the one-thread tables must pin gemmkit to one thread
    # themselves (meta["threads"] is the count gemmkit reports after the pin)
    env = dict(os.environ, GEMMKIT_NUM_THREADS="2")
    r = subprocess.run([sys.executable, os.path.join(BENCH, script), *args],
                       capture_output=True, text=True, timeout=180, cwd=BENCH, env=env)
    assert r.returncode == 0, f"{script}: rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _shape(text):
    """The table without its numbers (timings differ from run to run)."""
    return [re.sub(r"\s+", " ", re.sub(r"\d[\d.]*", "#", line)).strip()
            for line in text.splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    out = {}
    for name, script, args in (("int8", "bench_int8.py", INT8_ARGS),
                               ("gemm", "bench_gemm.py", GEMM_ARGS)):
        path = d / f"{name}.json"
        text = _run(script, args + ["--json", str(path)])
        with open(path) as f:
            out[name] = (path, json.load(f), text, args)
    return out


def test_int8_json_rows(runs):
    path, doc, text, args = runs["int8"]
    assert doc["schema"] == 1 and doc["bench"] == "bench_int8"
    m = doc["machine"]
    assert m["cpu_model"] and m["cpu_model"] in text  # the header's CPU line
    assert m["isa"] in m["available"] and m["gemmkit"]
    assert doc["meta"]["threads"] == 1 and "each on 1 thread" in text
    assert doc["meta"]["bandwidth"]["cached_gbs"]["65536"] > 0  # B of 1x256x256
    rows = doc["rows"]
    # every printed table row, and nothing else: MatMulInteger u8s8, QLinearMatMul in its
    # three sign mixes (s8s8: onnxruntime has none), 2 shapes each
    printed = [ln for ln in text.splitlines() if re.match(r"(MatMulInteger|QLinearMatMul) ", ln)]
    assert len(rows) == len(printed) == 8
    for r, ln in zip(rows, printed):
        assert ln.split()[:6] == [r["op"], r["signs"], str(r["M"]), str(r["K"]), str(r["N"]),
                                  r["path"]]
        assert r["section"] == "int8" and r["family"]
        ops = 2 * r["M"] * r["K"] * r["N"]
        assert r["gemmkit_gops"] == pytest.approx(ops / r["gemmkit_s"] / 1e9)
        assert f"{r['gemmkit_s'] * 1e6:8.1f}us" in ln
        if r["ort_s"] is not None:
            assert f"{r['ratio']:6.2f}x" in ln and f" {r['ort_err']}" in ln
        else:
            assert r["ort_err"] is None and "not implemented" in r["note"]
        if r["M"] <= 16:  # small-M: quoted against the cached bandwidth for B's size
            assert r["bw_kind"] == "h" and r["b_bytes"] == r["K"] * r["N"]
            assert f"{r['pct_bw']:5.1f}%h" in ln


def test_gemm_json_rows(runs):
    path, doc, text, args = runs["gemm"]
    assert doc["bench"] == "bench_gemm" and doc["machine"]["cpu_model"]
    assert doc["meta"]["threads"] == 1 and "each on 1 thread" in text
    floats = [r for r in doc["rows"] if r["section"] == "float"]
    printed = [ln for ln in text.splitlines() if re.match(r"float(32|64) 32x32x32 ", ln)]
    assert len(floats) == len(printed) >= 2
    for r, ln in zip(floats, printed):
        assert ln.split()[2] == r["path"] and f"{r['gemmkit_gops']:8.2f}" in ln
        assert r["numpy_ratio"] == pytest.approx(r["numpy_s"] / r["gemmkit_s"])
    assert [r["section"] for r in doc["rows"]].count("bf16") == 1
    # --json changes nothing in the text (numbers aside: they are measured again)
    assert _shape(_run("bench_gemm.py", args)) == _shape(text)


def test_gemm_linear_rows(tmp_path):
    """The linear-layer section (Gemm transB=1 against the other layouts and libraries):
    one JSON row per printed row, every dtype at M = 1 and 16."""
    path = tmp_path / "linear.json"
    text = _run("bench_gemm.py", ["--linear-only", "--sizes", "40", "--budget", "0.01",
                                  "--json", str(path)])
    with open(path) as f:
        rows = [r for r in json.load(f)["rows"] if r["section"] == "linear"]
    printed = [ln for ln in text.splitlines() if re.match(r"\w+ (1|16)x40x40 ", ln)]
    assert len(rows) == len(printed) == 10
    for r, ln in zip(rows, printed):
        assert ln.split()[0] == r["dtype"] and f"{r['gemmkit_s'] * 1e6:8.1f}us" in ln
        assert r["rows_ratio"] == pytest.approx(r["rows_s"] / r["gemmkit_s"])
        assert ("numpy_s" in r) == (r["dtype"] in ("float32", "float64"))


def test_threads_tuning_ab_rows(tmp_path):
    """bench_threads.py --tuning-ab: one row per kind, shape and thread count, with the
    three policies' times (and nothing of the scaling tables)."""
    path = tmp_path / "tuning.json"
    text = _run("bench_threads.py", ["--tuning-ab", "--threads", "1,2", "--shapes", "24x40x40",
                                     "--kinds", "u8s8,f32", "--budget", "0.01",
                                     "--json", str(path)])
    with open(path) as f:
        rows = json.load(f)["rows"]
    printed = [ln for ln in text.splitlines() if re.match(r"(u8s8|f32) 24x40x40 ", ln)]
    assert len(rows) == len(printed) == 4 and "pack_b:" not in text
    for r, ln in zip(rows, printed):
        assert r["section"] == "tuning" and ln.split()[:3] == [r["kind"], "24x40x40",
                                                               str(r["threads"])]
        assert f"{r['per_part_s'] / r['shared_s']:.2f}x" in ln


def test_report_draws_the_json(runs, tmp_path):
    pytest.importorskip("matplotlib", reason="report.py draws with matplotlib (the bench extra)")
    out = tmp_path / "plots"
    r = subprocess.run([sys.executable, os.path.join(BENCH, "report.py"), "--out", str(out),
                        str(runs["int8"][0]), str(runs["gemm"][0])],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["gemm_float.png", "int8_matmulinteger.png", "int8_qlinearmatmul.png",
                    "int8_small_m.png"]
    for p in pngs:
        with open(out / p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    index = (out / "README.md").read_text()
    assert runs["int8"][1]["machine"]["cpu_model"] in index and "Quick run" in index
    assert all(f"]({p})" in index for p in pngs)
    assert sorted(p.name for p in (out / "data").iterdir()) == ["gemm.json", "int8.json"]


def test_report_of_some_runs_keeps_the_others(runs, tmp_path):
    """report.py --only X (a partial run) keeps the runs it did not make: their JSON in
    out/data is drawn again and listed in the index (it used to drop them)."""
    import importlib.util
    import shutil
    pytest.importorskip("matplotlib", reason="report.py draws with matplotlib (the bench extra)")
    spec = importlib.util.spec_from_file_location("gk_report", os.path.join(BENCH, "report.py"))
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    out = tmp_path / "plots"
    (out / "data").mkdir(parents=True)
    for name in ("int8", "gemm"):
        shutil.copyfile(runs[name][0], out / "data" / f"{name}.json")
    kept = report.kept_runs(str(out), ["gemm"])
    assert [os.path.basename(p) for p in kept] == ["int8.json"]
    assert report.kept_runs(str(out), ["int8", "gemm"]) == []
    docs = report.load([str(out / "data" / "gemm.json")] + kept)
    report.write_index(str(out), docs, [], "python benchmarks/report.py --only gemm", ["gemm"])
    index = (out / "README.md").read_text()
    assert "- `int8`:" in index and "- `gemm`:" in index
    assert index.index("- `int8`:") < index.index("- `gemm`:")
    assert "which made `gemm`; the other runs below are earlier ones" in index
