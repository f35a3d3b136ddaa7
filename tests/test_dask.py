"""gemmkit on dask.distributed (examples/dask_matmul.py, the README's "Scaling out with
dask"): a row-chunked dask array times a pack_b weight on a LocalCluster of process
workers equals the exact oracle; the PackedB pickled to the workers packs again there;
GEMMKIT_NUM_THREADS and OMP_NUM_THREADS set for the worker processes are what gemmkit
runs there; the example runs as a script and the README shows its code verbatim.

Skipped without dask[distributed] (it is in the test extras).  Clusters are closed
whatever happens and the test checks that their worker processes are gone.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

_REASON = "needs dask[distributed] (pip install 'dask[distributed]', in the test extras)"
dask = pytest.importorskip("dask", reason=_REASON)
da = pytest.importorskip("dask.array", reason=_REASON)
distributed = pytest.importorskip("distributed", reason=_REASON)
cloudpickle = pytest.importorskip("cloudpickle", reason=_REASON)
psutil = pytest.importorskip("psutil", reason=_REASON)  # a distributed dependency

import gemmkit as gk  # noqa: E402
import oracles as o  # noqa: E402
from test_gemm import assert_float_close, float_oracle  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "dask_matmul.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("dask_matmul", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


dm = _load_example()
# The workers cannot import this file or the example (neither is on their sys.path):
# functions from them travel by value.
cloudpickle.register_pickle_by_value(dm)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TIMEOUT = 120  # seconds for any one result: a hang fails instead of blocking the suite
THREAD_VARS = ("GEMMKIT_NUM_THREADS", "OMP_NUM_THREADS")


@contextlib.contextmanager
def _clean_environ():
    """The thread variables of the test run's own environment removed while a cluster
    starts (dask's nanny prefers a variable already set over its configuration), and
    os.environ restored afterwards: the nanny writes its pre-spawn environment
    (OMP_NUM_THREADS=1, ...) into this process's, where later tests' subprocesses would
    inherit it."""
    saved = dict(os.environ)
    for k in THREAD_VARS:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _assert_gone(pids, wait=15.0):
    deadline = time.monotonic() + wait
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        alive = {p for p in alive
                 if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE}
        if alive:
            time.sleep(0.1)
    assert not alive, f"worker processes still running after the cluster closed: {alive}"


@contextlib.contextmanager
def _client(make_cluster):
    """A Client on make_cluster()'s cluster; closes both, then checks that the worker
    processes exited."""
    pids = []
    with _clean_environ():
        with make_cluster() as cluster, distributed.Client(cluster) as client:
            pids = list(client.run(os.getpid).values())
            assert len(pids) == 2 and os.getpid() not in pids
            yield client
    _assert_gone(pids)


@pytest.fixture(scope="module")
def client():
    """2 process workers, 1 dask thread and 3 gemmkit threads each (the example's
    local_cluster: GEMMKIT_NUM_THREADS in the workers' spawn environment)."""
    with _client(lambda: dm.local_cluster(2, gemmkit_threads=3, dashboard_address=":0")) as c:
        yield c


def _compute(client, y):
    """y computed on the cluster, every one of its blocks by a worker process."""
    with distributed.get_task_stream(client) as ts:
        got = client.compute(y).result(timeout=TIMEOUT)
    name = y.name
    ran = [t["worker"] for t in ts.data
           if isinstance(t["key"], tuple) and t["key"][0] == name]  # y's own blocks
    assert len(ran) == y.numblocks[0], (len(ran), y.numblocks)
    assert set(ran) <= set(client.scheduler_info()["workers"])
    return got


ROWS, CHUNK, K, N = 7 * 384 + 5, 384, 320, 136  # the last row block has 5 rows (small-M path)


def _rows(rng, dt):
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, (ROWS, K), dtype=dt, endpoint=True)
    # K in several chunks too: map_rows must put it back in one
    return x, da.from_array(x, chunks=(CHUNK, 100))


@pytest.mark.parametrize("sx,sw", [(np.uint8, np.int8), (np.int8, np.uint8)],
                         ids=["u8s8", "s8u8"])
def test_matmul_integer_rows_on_process_workers(client, sx, sw):
    rng = np.random.default_rng(1)
    x, xd = _rows(rng, sx)
    w = rng.integers(np.iinfo(sw).min, np.iinfo(sw).max, (K, N), dtype=sw, endpoint=True)
    w_zp = rng.integers(0, 8, N).astype(sw)  # per column
    x_zp = sx(3)
    y = dm.map_rows(client, gk.matmul_integer, xd,
                    gk.pack_b(w, "matmul_integer", b_zero_point=w_zp), x_zp)
    assert y.dtype == np.int32 and y.shape == (ROWS, N)
    assert y.chunks == ((CHUNK,) * 7 + (5,), (N,))
    got = _compute(client, y)
    np.testing.assert_array_equal(got, o.matmul_integer(x, w, x_zp, w_zp))


@pytest.mark.parametrize("ty", [np.uint8, np.int8])
def test_qlinear_matmul_rows_on_process_workers(client, ty):
    rng = np.random.default_rng(2)
    x, xd = _rows(rng, np.uint8)
    w = rng.integers(-128, 128, (K, N), dtype=np.int8)
    w_scale = rng.uniform(0.5, 2.0, N).astype(np.float32)  # per column
    w_zp = rng.integers(-4, 5, N).astype(np.int8)
    x_scale, x_zp = np.float32(0.01), np.uint8(120)
    y_scale, y_zp = np.float32(K * 0.3), ty(5)
    pq = gk.pack_b(w, "qlinear_matmul", b_scale=w_scale, b_zero_point=w_zp)
    y = dm.map_rows(client, gk.qlinear_matmul, xd, x_scale, x_zp, pq, None, None,
                    y_scale, y_zp)
    assert y.dtype == ty and y.shape == (ROWS, N)
    got = _compute(client, y)
    want, _ = o.qlinear_matmul(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 20  # not all saturated: the test can tell rows apart


def test_gemm_float32_rows_on_process_workers(client):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((ROWS, K), dtype=np.float32)
    xd = da.from_array(x, chunks=(CHUNK, 100))
    wt = rng.standard_normal((N, K), dtype=np.float32)  # B' = wt.T
    bias = rng.standard_normal(N, dtype=np.float32)
    y = dm.map_rows(client, gk.gemm, xd, gk.pack_b(wt, "gemm", transB=1), bias, 0.5, 2.0,
                    transB=1)
    assert y.dtype == np.float32 and y.shape == (ROWS, N)
    got = _compute(client, y)
    ref, bound = float_oracle(x, wt, bias, 0.5, 2.0, 0, 1)
    assert_float_close(got, ref, bound)
    # K is never split: the workers' blocks give the bits of one call in this process
    np.testing.assert_array_equal(got, gk.gemm(x, wt, bias, 0.5, 2.0, transB=1))


def _pack_here(pb):
    return os.getpid(), pb.op, pb.packed, pb.isa, pb.nbytes


def test_packed_weight_repacked_on_each_worker(client):
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (K, N), dtype=np.int8)
    pb = gk.pack_b(w, "matmul_integer", b_zero_point=np.int8(1))
    assert pb.packed
    fut = client.scatter(pb, broadcast=True)
    seen = []
    for addr in client.scheduler_info()["workers"]:
        r = client.submit(_pack_here, fut, workers=[addr], allow_other_workers=False,
                          pure=False).result(timeout=TIMEOUT)
        seen.append(r[0])
        # packed again on load, for the worker's CPU (the same one here)
        assert r[1:] == ("matmul_integer", True, pb.isa, pb.nbytes)
    assert len(set(seen)) == 2 and os.getpid() not in seen


def _threads_report():
    """gemmkit's setting in this worker, and the pool a product large enough to split
    built: workers = threads - 1.  N = 640 columns: on every
    family's nr (4..32) its 3 or 5 column parts cost less than 2 or 4, so the split uses
    every thread on each path (512 columns are 16 AMX tiles: 5 parts would cost what 4
    do, and the grid takes 4)."""
    a = np.full((512, 512), 2, np.uint8)
    b = np.full((512, 640), 3, np.int8)
    right = bool((gk.matmul_integer(a, b) == 512 * 6).all())
    info = gk.cpu_info()
    return (gk.get_num_threads(), info["num_threads_source"], info["pool_threads"], right)


def test_worker_threads_from_GEMMKIT_NUM_THREADS(client):
    reports = client.run(_threads_report)
    assert len(reports) == 2
    for addr, r in reports.items():
        assert r == (3, "GEMMKIT_NUM_THREADS", 2, True), (addr, r)
    assert sorted(client.run(dm.worker_threads).values()) == [(3, "GEMMKIT_NUM_THREADS")] * 2
    # a running worker's setting, changed from the client (the README says so)
    assert list(client.run(gk.set_num_threads, 2).values()) == [3, 3]
    try:
        assert [r[0] for r in client.run(dm.worker_threads).values()] == [2, 2]
    finally:
        client.run(gk.set_num_threads, 3)


def test_worker_threads_from_OMP_NUM_THREADS():
    """OMP_NUM_THREADS, the variable dask (and Ray, joblib) set per worker, when
    GEMMKIT_NUM_THREADS is not set: here 5 instead of dask's default 1."""
    def make():
        with dask.config.set({"distributed.nanny.pre-spawn-environ.OMP_NUM_THREADS": "5"}):
            return distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                            processes=True, dashboard_address=":0")
    with _client(make) as c:
        reports = c.run(_threads_report)
        env = c.run(lambda: [os.environ.get(k) for k in THREAD_VARS])
    for addr, r in reports.items():
        assert env[addr] == [None, "5"], env
        assert r == (5, "OMP_NUM_THREADS", 4, True), (addr, r)


def test_example_runs_as_a_script():
    """The example as users run it: gemmkit imported at the top of the main script (a
    spawned worker re-imports it), 3 gemmkit threads per worker asked for."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, EXAMPLE, "--rows", "1500", "--k", "200", "--n", "72",
                        "--chunk", "256", "--gemmkit-threads", "3"],
                       env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "2 workers; gemmkit threads per worker: [3, 3] (from GEMMKIT_NUM_THREADS)" \
        in r.stdout, r.stdout
    for op in ("matmul_integer", "qlinear_matmul", "gemm"):
        assert re.search(rf"^{op} .* in 6 row blocks: equal to one call", r.stdout, re.M), \
            r.stdout


def _readme_dask_code():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Scaling out with dask\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "README has no '## Scaling out with dask' section"
    code = re.search(r"```python\n(.*?)```", m.group(1), re.S)
    assert code, "the README's dask section has no python block"
    return code.group(1)


def test_readme_shows_the_example_verbatim():
    """The README's block, cut at its '# ...' lines, is pieces of examples/dask_matmul.py
    in order (at any indentation): edit one, edit both."""
    with open(EXAMPLE, encoding="utf-8") as f:
        src = f.read()
    pieces = re.split(r"^# \.\.\.\n", _readme_dask_code(), flags=re.M)
    assert len("".join(pieces).splitlines()) >= 20
    pos = 0
    for piece in pieces:
        found = [i for i in (src.find(_indent(piece, ind), pos) for ind in ("", "    ", "        "))
                 if i >= 0]
        assert found, f"README piece not in {EXAMPLE} (in order):\n{piece}"
        pos = min(found) + 1


def _indent(text, prefix):
    return "".join(prefix + line if line.strip() else line
                   for line in text.splitlines(keepends=True))
